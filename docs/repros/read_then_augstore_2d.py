"""Fuzzer repro (stock, gradient mismatch): constructs augstore ym, div, readback ym[i, c].

Warp 1.19.0. Expected values: central differences (float64) of a NumPy reference of this kernel.

The 2-D form (feature arrays2d) of the 1-D entry (docs/known-issues.md): an in-place update on a plain Tape,
where Warp's backward re-reads the stored value (stock and zero_store=True alike); with
`import warp_zerostore as wp`, `@wp.kernel(zero_store=True)` and `wp.Tape(snapshot=True)` it is right.
"""

import numpy as np
import warp as wp


@wp.kernel
def fuzzed(
    x: wp.array(dtype=wp.float64),
    xv: wp.array(dtype=wp.vec3d),
    y: wp.array(dtype=wp.float64),
    acc: wp.array(dtype=wp.float64),
    xm: wp.array2d(dtype=wp.float64),
    xt: wp.array3d(dtype=wp.float64),
    ym: wp.array2d(dtype=wp.float64),
    n: int,
):
    i = wp.tid()
    a0 = wp.float64(ym[i, 1])
    ym[i, 0] += ym[i, 0] / wp.cosh(a0)


x = wp.array([-0.5625, 0.671875, 0.515625, -0.828125], dtype=wp.float64, requires_grad=True)
xv = wp.array(
    [
        [-0.859375, 0.984375, -0.234375],
        [0.25, -0.796875, 0.75],
        [0.71875, 0.46875, 0.984375],
        [-0.71875, 0.765625, 0.671875],
    ],
    dtype=wp.vec3d,
    requires_grad=True,
)
y = wp.array([0.09375, -0.1875, -0.03125, 0.46875], dtype=wp.float64, requires_grad=True)
acc = wp.array([0.859375, 0.375], dtype=wp.float64, requires_grad=True)
xm = wp.array(
    [[-0.9375, 0.234375], [-0.40625, -0.984375], [-0.25, 0.328125], [-0.390625, 0.90625]],
    dtype=wp.float64,
    requires_grad=True,
)
xt = wp.array(
    [
        [[0.59375, 0.046875], [0.5625, -0.5625]],
        [[-0.03125, 0.453125], [0.234375, -1.0]],
        [[0.78125, -0.1875], [0.625, 0.375]],
        [[-1.0, 0.609375], [-0.21875, -0.34375]],
    ],
    dtype=wp.float64,
    requires_grad=True,
)
ym = wp.array(
    [[1.0, -0.234375], [0.53125, 0.4375], [-0.96875, -0.734375], [-1.0, 0.25]], dtype=wp.float64, requires_grad=True
)
tape = wp.Tape()
with tape:
    wp.launch(fuzzed, dim=4, inputs=[x, xv, y, acc, xm, xt, ym, 3])
print("forward y:  ", y.numpy(), "  expected", np.array([0.09375, -0.1875, -0.03125, 0.46875]))
print("forward acc:", acc.numpy(), "  expected", np.array([0.859375, 0.375]))
print(
    "forward ym: ",
    ym.numpy(),
    "  expected",
    np.array([[1.973149085, -0.234375], [1.01541963, 0.4375], [-1.724409878, -0.734375], [-1.969543629, 0.25]]),
)
tape.backward(
    grads={
        y: wp.array([-0.765625, 0.765625, 0.78125, -0.0625], dtype=wp.float64),
        acc: wp.array([0.875, 0.234375], dtype=wp.float64),
        ym: wp.array(
            [[-0.140625, 0.90625], [0.078125, 0.09375], [-0.59375, -0.796875], [0.8125, -1.0]], dtype=wp.float64
        ),
    }
)
expected = {
    "x": [0.0, 0.0, 0.0, 0.0],
    "xv": [[0.0, 0.0, 0.0], [0.0, 0.0, 0.0], [0.0, 0.0, 0.0], [0.0, 0.0, 0.0]],
    "y": [-0.765625, 0.765625, 0.78125, -0.0625],
    "acc": [0.875, 0.234375],
    "xm": [[0.0, 0.0], [0.0, 0.0], [0.0, 0.0], [0.0, 0.0]],
    "xt": [[[0.0, 0.0], [0.0, 0.0]], [[0.0, 0.0], [0.0, 0.0]], [[0.0, 0.0], [0.0, 0.0]], [[0.0, 0.0], [0.0, 0.0]]],
    "ym": [
        [-0.27747409, 0.874750663],
        [0.149326416, 0.078182053],
        [-1.056896377, -0.516124731],
        [1.600254199, -0.807064295],
    ],
}
for name, a in (("x", x), ("xv", xv), ("y", y), ("acc", acc), ("xm", xm), ("xt", xt), ("ym", ym)):
    got = a.grad.numpy().reshape(np.shape(expected[name]))
    flag = "" if np.allclose(got, expected[name], rtol=1e-05, atol=1e-05) else "   <-- WRONG"
    print(f"{name}.grad: warp {got.ravel()}  expected {np.ravel(expected[name])}{flag}")
