"""Manual ``wp.launch(..., adjoint=True, adj_inputs=...)``: the zeroing hits the buffer the adjoint read."""

import numpy as np
import pytest

import warp_zerostore as wp
from warp_zerostore import _compat


def _overwrite_twice(flag):
    @wp.kernel(zero_store=flag)
    def overwrite_twice(x: wp.array(dtype=float), y: wp.array(dtype=float)):
        i = wp.tid()
        y[i] = 2.0 * x[i]
        y[i] = 3.0 * x[i]

    return overwrite_twice


KERNELS = {flag: _overwrite_twice(flag) for flag in (True, False, None)}


@pytest.mark.parametrize("flag", [True, False, None])
def test_caller_buffers(flag, device):
    n = 3
    x = wp.ones(n, dtype=float, requires_grad=True, device=device)
    y = wp.zeros(n, dtype=float, requires_grad=True, device=device)
    adj_x = wp.zeros(n, dtype=float, device=device)
    adj_y = wp.ones(n, dtype=float, device=device)
    wp.launch(KERNELS[flag], dim=n, inputs=[x, y], device=device)
    wp.launch(KERNELS[flag], dim=n, inputs=[x, y], adj_inputs=[adj_x, adj_y], adjoint=True, device=device)
    if flag is True:
        # the overwritten store reads the zeroed caller buffer: only the final value's coefficient
        np.testing.assert_array_equal(adj_x.numpy(), 3.0)
        np.testing.assert_array_equal(adj_y.numpy(), 0.0)
    else:
        # False, and stock Warp on every version (1.13+ skips zeroing caller buffers)
        np.testing.assert_array_equal(adj_x.numpy(), 5.0)
        np.testing.assert_array_equal(adj_y.numpy(), 1.0)
    np.testing.assert_array_equal(y.grad.numpy(), 0.0)  # the array's own .grad was not the buffer read


@pytest.mark.skipif(not _compat.HAS_RETAIN_GRAD, reason="this warp-lang has no retain_grad (added in 1.13)")
@pytest.mark.parametrize("flag", [True, None])
def test_retain_grad_is_not_zeroed(flag, device):
    n = 3
    x = wp.ones(n, dtype=float, requires_grad=True, device=device)
    y = wp.zeros(n, dtype=float, requires_grad=True, retain_grad=True, device=device)
    with wp.Tape() as tape:
        wp.launch(KERNELS[flag], dim=n, inputs=[x, y], device=device)
    tape.backward(grads={y: wp.ones(n, dtype=float, device=device)})
    np.testing.assert_array_equal(y.grad.numpy(), 1.0)
    np.testing.assert_array_equal(x.grad.numpy(), 5.0)


@pytest.mark.skipif(not _compat.HAS_RETAIN_GRAD, reason="this warp-lang has no retain_grad (added in 1.13)")
def test_without_retain_grad_is_zeroed(device):
    """Negative twin of the retain_grad test: the same program zeroes an ordinary array."""
    n = 3
    x = wp.ones(n, dtype=float, requires_grad=True, device=device)
    y = wp.zeros(n, dtype=float, requires_grad=True, device=device)
    with wp.Tape() as tape:
        wp.launch(KERNELS[True], dim=n, inputs=[x, y], device=device)
    tape.backward(grads={y: wp.ones(n, dtype=float, device=device)})
    np.testing.assert_array_equal(y.grad.numpy(), 0.0)
    np.testing.assert_array_equal(x.grad.numpy(), 3.0)
