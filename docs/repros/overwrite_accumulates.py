"""Fuzzer repro (stock, gradient mismatch): constructs store.

Warp 1.12.1. Expected values: central differences (float64) of a NumPy reference of this kernel.
"""

import numpy as np
import warp as wp


@wp.func
def fuzzed_h0(y: wp.array(dtype=wp.float64), i: int, p0: wp.float64, p1: wp.float64):
    y[i] = wp.float64(0.25)


@wp.func
def fuzzed_h1(p0: wp.float64, p1: wp.float64):
    return wp.float64(-1.25)


@wp.kernel
def fuzzed(
    x: wp.array(dtype=wp.float64),
    xv: wp.array(dtype=wp.vec3d),
    y: wp.array(dtype=wp.float64),
    acc: wp.array(dtype=wp.float64),
    n: int,
):
    i = wp.tid()
    a0 = wp.float64(wp.float64(1.0))
    a1 = wp.float64(wp.float64(1.0))
    y[i] = x[i]


x = wp.array([0.5, 0.375, -0.3125, 0.125], dtype=wp.float64, requires_grad=True)
xv = wp.array(
    [[0.421875, -0.53125, -0.0625], [-0.546875, 0.234375, -0.125], [0.09375, -0.484375, 1.0], [-0.34375, 0.5, 0.5]],
    dtype=wp.vec3d,
    requires_grad=True,
)
y = wp.array([0.40625, 0.53125, 0.5, 0.8125], dtype=wp.float64, requires_grad=True)
acc = wp.array([-0.78125, -0.765625], dtype=wp.float64, requires_grad=True)
tape = wp.Tape()
with tape:
    wp.launch(fuzzed, dim=4, inputs=[x, xv, y, acc, 2])
print("forward y:  ", y.numpy(), "  expected", np.array([0.5, 0.375, -0.3125, 0.125]))
print("forward acc:", acc.numpy(), "  expected", np.array([-0.78125, -0.765625]))
tape.backward(
    grads={
        y: wp.array([0.65625, 0.0, -0.59375, 0.28125], dtype=wp.float64),
        acc: wp.array([-0.046875, -0.984375], dtype=wp.float64),
    }
)
expected = {
    "x": [0.65625, 0.0, -0.59375, 0.28125],
    "xv": [[0.0, 0.0, 0.0], [0.0, 0.0, 0.0], [0.0, 0.0, 0.0], [0.0, 0.0, 0.0]],
    "y": [0.0, 0.0, 0.0, 0.0],
    "acc": [-0.046875, -0.984375],
}
for name, a in (("x", x), ("xv", xv), ("y", y), ("acc", acc)):
    got = a.grad.numpy().reshape(np.shape(expected[name]))
    flag = "" if np.allclose(got, expected[name], rtol=1e-05, atol=1e-05) else "   <-- WRONG"
    print(f"{name}.grad: warp {got.ravel()}  expected {np.ravel(expected[name])}{flag}")
