"""The seed program (``y = 2 x_a``, then ``y = 3 x_b``): its kernels per flag, a runner, the expected gradients."""

import warp_zerostore as wp
from warp_zerostore import _compat


def _seed_kernels(flag):
    @wp.kernel(zero_store=flag)
    def write_2x(x: wp.array(dtype=float), y: wp.array(dtype=float)):
        i = wp.tid()
        y[i] = 2.0 * x[i]

    @wp.kernel(zero_store=flag)
    def write_3x(x: wp.array(dtype=float), y: wp.array(dtype=float)):
        i = wp.tid()
        y[i] = 3.0 * x[i]

    return write_2x, write_3x


SEED = {flag: _seed_kernels(flag) for flag in (True, False, None)}

ZEROED = {"x_a": 0.0, "x_b": 3.0, "y_grad": 0.0}
ACCUMULATED = {"x_a": 2.0, "x_b": 3.0, "y_grad": 1.0}
EXPECTED = {
    True: ZEROED,
    False: ACCUMULATED,
    None: ZEROED if _compat.STOCK_STORE_ZEROES else ACCUMULATED,
}


def run_seed(k1, k2, device, n=4):
    x_a = wp.ones(n, dtype=float, requires_grad=True, device=device)
    x_b = wp.ones(n, dtype=float, requires_grad=True, device=device)
    y = wp.zeros(n, dtype=float, requires_grad=True, device=device)
    with wp.Tape() as tape:
        wp.launch(k1, dim=n, inputs=[x_a, y], device=device)
        wp.launch(k2, dim=n, inputs=[x_b, y], device=device)
    y.grad = wp.ones_like(y)
    tape.backward()
    return {
        "y": y.numpy(),
        "x_a": x_a.grad.numpy(),
        "x_b": x_b.grad.numpy(),
        "y_grad": y.grad.numpy(),
    }
