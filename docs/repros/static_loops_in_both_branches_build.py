"""Fuzzer repro (stock, build mismatch): constructs atomic_add, augstore, div, for(static), if(parity), sub.

Warp 1.19.0. Expected values: central differences (float64) of a NumPy reference of this kernel.
"""

import numpy as np
import warp as wp


@wp.kernel
def fuzzed(
    x: wp.array(dtype=wp.float64),
    xv: wp.array(dtype=wp.vec3d),
    y: wp.array(dtype=wp.float64),
    acc: wp.array(dtype=wp.float64),
    n: int,
):
    i = wp.tid()
    a0 = wp.float64(x[i] - x[i])
    if i % 2 == 0:
        for k0 in range(1):
            y[i] += wp.float64(k0) / wp.cosh(wp.float64(-0.25))
            wp.atomic_add(acc, i % 2, a0)
    else:
        for k0 in range(1):
            y[i] += x[(i + 1) % 4]


x = wp.array([-0.25, -0.59375, 0.5625, -0.515625], dtype=wp.float64, requires_grad=True)
xv = wp.array(
    [
        [-0.984375, -0.25, 0.265625],
        [-0.375, -0.96875, -0.515625],
        [-1.0, -0.28125, -0.609375],
        [0.84375, -0.984375, 0.109375],
    ],
    dtype=wp.vec3d,
    requires_grad=True,
)
y = wp.array([-0.84375, -0.015625, 0.015625, -0.53125], dtype=wp.float64, requires_grad=True)
acc = wp.array([-1.0, 0.984375], dtype=wp.float64, requires_grad=True)
tape = wp.Tape()
with tape:
    wp.launch(fuzzed, dim=4, inputs=[x, xv, y, acc, 1])
print("forward y:  ", y.numpy(), "  expected", np.array([-0.84375, 0.546875, 0.015625, -0.78125]))
print("forward acc:", acc.numpy(), "  expected", np.array([-1.0, 0.984375]))
tape.backward(
    grads={
        y: wp.array([-0.28125, -1.0, 0.328125, -0.984375], dtype=wp.float64),
        acc: wp.array([-0.625, -0.65625], dtype=wp.float64),
    }
)
expected = {
    "x": [-0.984375, 0.0, -1.0, 0.0],
    "xv": [[0.0, 0.0, 0.0], [0.0, 0.0, 0.0], [0.0, 0.0, 0.0], [0.0, 0.0, 0.0]],
    "y": [-0.28125, -1.0, 0.328125, -0.984375],
    "acc": [-0.625, -0.65625],
}
for name, a in (("x", x), ("xv", xv), ("y", y), ("acc", acc)):
    got = a.grad.numpy().reshape(np.shape(expected[name]))
    flag = "" if np.allclose(got, expected[name], rtol=1e-05, atol=1e-05) else "   <-- WRONG"
    print(f"{name}.grad: warp {got.ravel()}  expected {np.ravel(expected[name])}{flag}")
