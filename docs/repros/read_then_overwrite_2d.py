"""Fuzzer repro (stock, gradient mismatch): constructs readback ym[i, c], sqrt, store ym.

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
    a1 = wp.float64(ym[i, 0])
    ym[i, 0] = wp.float64(1.0)
    ym[i, 1] = wp.sqrt(wp.cosh(a1))


x = wp.array([0.125, -0.15625, -0.90625, -0.25], dtype=wp.float64, requires_grad=True)
xv = wp.array(
    [
        [0.453125, 0.953125, 0.84375],
        [-0.171875, -0.640625, 0.828125],
        [0.25, 0.3125, 0.75],
        [0.09375, 0.765625, 0.96875],
    ],
    dtype=wp.vec3d,
    requires_grad=True,
)
y = wp.array([-0.171875, 0.1875, 0.484375, 0.796875], dtype=wp.float64, requires_grad=True)
acc = wp.array([0.0625, 0.578125], dtype=wp.float64, requires_grad=True)
xm = wp.array(
    [[-0.484375, -0.984375], [0.953125, 0.84375], [0.015625, 0.046875], [-0.671875, 0.0625]],
    dtype=wp.float64,
    requires_grad=True,
)
xt = wp.array(
    [
        [[-1.0, 0.546875], [0.78125, -0.25]],
        [[-0.046875, -0.578125], [-0.359375, -0.28125]],
        [[-0.15625, 0.453125], [-0.640625, -0.46875]],
        [[-0.921875, 0.671875], [-0.84375, 0.703125]],
    ],
    dtype=wp.float64,
    requires_grad=True,
)
ym = wp.array(
    [[0.84375, -0.921875], [0.1875, -0.015625], [-0.703125, -0.75], [-0.109375, -0.609375]],
    dtype=wp.float64,
    requires_grad=True,
)
tape = wp.Tape()
with tape:
    wp.launch(fuzzed, dim=4, inputs=[x, xv, y, acc, xm, xt, ym, 3])
print("forward y:  ", y.numpy(), "  expected", np.array([-0.171875, 0.1875, 0.484375, 0.796875]))
print("forward acc:", acc.numpy(), "  expected", np.array([0.0625, 0.578125]))
print(
    "forward ym: ",
    ym.numpy(),
    "  expected",
    np.array([[1.0, 1.173704456], [1.0, 1.00877633], [1.0, 1.121403457], [1.0, 1.002989238]]),
)
tape.backward(
    grads={
        y: wp.array([-0.328125, 0.171875, 0.609375, 1.0], dtype=wp.float64),
        acc: wp.array([-0.4375, -0.734375], dtype=wp.float64),
        ym: wp.array(
            [[-0.578125, -0.328125], [-0.453125, -0.78125], [0.84375, -0.78125], [0.375, 0.28125]], dtype=wp.float64
        ),
    }
)
expected = {
    "x": [0.0, 0.0, 0.0, 0.0],
    "xv": [[0.0, 0.0, 0.0], [0.0, 0.0, 0.0], [0.0, 0.0, 0.0], [0.0, 0.0, 0.0]],
    "y": [-0.328125, 0.171875, 0.609375, 1.0],
    "acc": [-0.4375, -0.734375],
    "xm": [[0.0, 0.0], [0.0, 0.0], [0.0, 0.0], [0.0, 0.0]],
    "xt": [[[0.0, 0.0], [0.0, 0.0]], [[0.0, 0.0], [0.0, 0.0]], [[0.0, 0.0], [0.0, 0.0]], [[0.0, 0.0], [0.0, 0.0]]],
    "ym": [[-0.132441492, 0.0], [-0.07303115, 0.0], [0.265609487, 0.0], [-0.015365613, 0.0]],
}
for name, a in (("x", x), ("xv", xv), ("y", y), ("acc", acc), ("xm", xm), ("xt", xt), ("ym", ym)):
    got = a.grad.numpy().reshape(np.shape(expected[name]))
    flag = "" if np.allclose(got, expected[name], rtol=1e-05, atol=1e-05) else "   <-- WRONG"
    print(f"{name}.grad: warp {got.ravel()}  expected {np.ravel(expected[name])}{flag}")
