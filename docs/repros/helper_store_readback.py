"""Fuzzer repro (stock, gradient mismatch): constructs callstore, div, readback y[i].

Warp 1.19.0. Expected values: central differences (float64) of a NumPy reference of this kernel.

An in-place update: on a plain Tape the backward re-reads the stored value (stock and zero_store=True alike);
with `import warp_zerostore as wp`, `@wp.kernel(zero_store=True)` and `wp.Tape(snapshot=True)` it is right, and
`wp.Tape(check="warn")` reports the stale read.
"""

import numpy as np
import warp as wp


@wp.func
def fuzzed_h0(y: wp.array(dtype=wp.float32), i: int, p0: wp.float32):
    y[i] = p0


@wp.func
def fuzzed_h1(y: wp.array(dtype=wp.float32), i: int, p0: wp.float32, p1: wp.float32):
    y[i] = p0


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
    a1 = wp.float32(wp.float32(1.0))
    fuzzed_h1(y, i, (x[(i + 1) % 4] / wp.cosh(y[i])), wp.float32(1.0))


x = wp.array([0.09375, -0.578125, 0.828125, 0.328125], dtype=wp.float32, requires_grad=True)
xv = wp.array(
    [
        [-0.75, 0.125, -0.78125],
        [0.171875, -0.484375, -0.90625],
        [-0.96875, -0.890625, 0.671875],
        [-0.75, 0.765625, -0.515625],
    ],
    dtype=wp.vec3,
    requires_grad=True,
)
y = wp.array([0.453125, 0.078125, 0.546875, -0.5], dtype=wp.float32, requires_grad=True)
acc = wp.array([-0.9375, 0.625], dtype=wp.float32, requires_grad=True)
tape = wp.Tape()
with tape:
    wp.launch(fuzzed, dim=4, inputs=[x, xv, y, acc, 2])
print("forward y:  ", y.numpy(), "  expected", np.array([-0.523460184, 0.825604174, 0.284509587, 0.08313927]))
print("forward acc:", acc.numpy(), "  expected", np.array([-0.9375, 0.625]))
tape.backward(
    grads={
        y: wp.array([-0.5625, 0.375, 0.953125, 0.453125], dtype=wp.float32),
        acc: wp.array([0.671875, -0.25], dtype=wp.float32),
    }
)
expected = {
    "x": [0.401839807, -0.509312611, 0.373858494, 0.82643261],
    "xv": [[0.0, 0.0, 0.0], [0.0, 0.0, 0.0], [0.0, 0.0, 0.0], [0.0, 0.0, 0.0]],
    "y": [-0.124981985, -0.024138532, -0.135091553, 0.0174091],
    "acc": [0.671875, -0.25],
}
for name, a in (("x", x), ("xv", xv), ("y", y), ("acc", acc)):
    got = a.grad.numpy().reshape(np.shape(expected[name]))
    flag = "" if np.allclose(got, expected[name], rtol=0.002, atol=0.002) else "   <-- WRONG"
    print(f"{name}.grad: warp {got.ravel()}  expected {np.ravel(expected[name])}{flag}")
