"""Fuzzer repro (stock, gradient mismatch): constructs component, mul, readback y[i], store.

Warp 1.19.0. Expected values: central differences (float64) of a NumPy reference of this kernel.

An in-place update: on a plain Tape the backward re-reads the stored value (stock and zero_store=True alike);
with `import warp_zerostore as wp`, `@wp.kernel(zero_store=True)` and `wp.Tape(snapshot=True)` it is right, and
`wp.Tape(check="warn")` reports the stale read.
"""

import numpy as np
import warp as wp


@wp.func
def fuzzed_h0(p0: wp.float32, p1: wp.float32):
    return wp.float32(1.0)


@wp.func
def fuzzed_h1(p0: wp.float32, p1: wp.float32):
    return p1


@wp.kernel
def fuzzed(
    x: wp.array(dtype=wp.float32),
    xv: wp.array(dtype=wp.vec3),
    y: wp.array(dtype=wp.float32),
    acc: wp.array(dtype=wp.float32),
    n: int,
):
    i = wp.tid()
    a0 = wp.float32(wp.float32(1.0))
    y[i] = xv[(i + 2) % 4][2] * y[i]


x = wp.array([0.171875, 0.421875, 0.0, 0.6875], dtype=wp.float32, requires_grad=True)
xv = wp.array(
    [[-0.453125, 0.5, -0.3125], [-0.53125, -0.484375, 0.796875], [0.25, 1.0, -0.875], [-0.140625, 0.09375, -0.375]],
    dtype=wp.vec3,
    requires_grad=True,
)
y = wp.array([0.765625, -0.65625, 0.21875, -0.875], dtype=wp.float32, requires_grad=True)
acc = wp.array([-0.25, -0.765625], dtype=wp.float32, requires_grad=True)
tape = wp.Tape()
with tape:
    wp.launch(fuzzed, dim=4, inputs=[x, xv, y, acc, 3])
print("forward y:  ", y.numpy(), "  expected", np.array([-0.669921875, 0.24609375, -0.068359375, -0.697265625]))
print("forward acc:", acc.numpy(), "  expected", np.array([-0.25, -0.765625]))
tape.backward(
    grads={
        y: wp.array([-0.46875, 0.3125, -0.953125, -0.46875], dtype=wp.float32),
        acc: wp.array([0.953125, 0.515625], dtype=wp.float32),
    }
)
expected = {
    "x": [0.0, 0.0, 0.0, 0.0],
    "xv": [[0.0, 0.0, -0.208496094], [0.0, 0.0, 0.41015625], [0.0, 0.0, -0.358886719], [0.0, 0.0, -0.205078125]],
    "y": [0.41015625, -0.1171875, 0.297851563, -0.373535156],
    "acc": [0.953125, 0.515625],
}
for name, a in (("x", x), ("xv", xv), ("y", y), ("acc", acc)):
    got = a.grad.numpy().reshape(np.shape(expected[name]))
    flag = "" if np.allclose(got, expected[name], rtol=0.002, atol=0.002) else "   <-- WRONG"
    print(f"{name}.grad: warp {got.ravel()}  expected {np.ravel(expected[name])}{flag}")
