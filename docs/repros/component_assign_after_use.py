"""Fuzzer repro (zero_store, gradient mismatch, before this package gave a flagged kernel's local components Warp's
copy form): constructs atomic_add, dot, readback y[i], setcomponent(=).

Flagged, as here, it prints the expected values (warp_zerostore/codegen/local_copies.py); the same kernel
unflagged (`@wp.kernel`) keeps Warp's in-place component assignment and prints WRONG.

Warp 1.19.0. Expected values: central differences (float64) of a NumPy reference of this kernel.
"""

import numpy as np

import warp_zerostore as wp


@wp.kernel(zero_store=True)
def fuzzed(
    x: wp.array(dtype=wp.float32),
    xv: wp.array(dtype=wp.vec3),
    y: wp.array(dtype=wp.float32),
    acc: wp.array(dtype=wp.float32),
    n: int,
):
    i = wp.tid()
    a0 = wp.float32(x[(i + 1) % 4])
    a1 = wp.float32(y[i])
    v0 = wp.vec3(xv[(i + 1) % 4])
    wp.atomic_add(acc, i % 2, wp.dot(xv[(i + 3) % 4], v0))
    v0[0] = wp.float32(-1.75)


x = wp.array([0.4375, -0.453125, -0.25, -0.34375], dtype=wp.float32, requires_grad=True)
xv = wp.array(
    [
        [0.40625, 0.234375, 0.375],
        [0.375, 0.375, -0.453125],
        [0.421875, -0.03125, 0.296875],
        [-0.609375, 0.046875, 0.109375],
    ],
    dtype=wp.vec3,
    requires_grad=True,
)
y = wp.array([-0.703125, 0.703125, -0.65625, 0.125], dtype=wp.float32, requires_grad=True)
acc = wp.array([0.375, -0.046875], dtype=wp.float32, requires_grad=True)
tape = wp.Tape()
with tape:
    wp.launch(fuzzed, dim=4, inputs=[x, xv, y, acc, 1])
print("forward y:  ", y.numpy(), "  expected", np.array([-0.703125, 0.703125, -0.65625, 0.125]))
print("forward acc:", acc.numpy(), "  expected", np.array([-0.145996094, 0.50390625]))
tape.backward(
    grads={
        y: wp.array([0.109375, -0.546875, -0.640625, 0.328125], dtype=wp.float32),
        acc: wp.array([0.03125, -0.6875], dtype=wp.float32),
    }
)
expected = {
    "x": [0.0, 0.0, 0.0, 0.0],
    "xv": [
        [-0.580078125, 0.04296875, -0.408203125],
        [-0.038085938, 0.002929687, 0.006835937],
        [-0.55859375, -0.322265625, -0.515625],
        [0.0234375, 0.0234375, -0.028320312],
    ],
    "y": [0.109375, -0.546875, -0.640625, 0.328125],
    "acc": [0.03125, -0.6875],
}
for name, a in (("x", x), ("xv", xv), ("y", y), ("acc", acc)):
    got = a.grad.numpy().reshape(np.shape(expected[name]))
    flag = "" if np.allclose(got, expected[name], rtol=0.002, atol=0.002) else "   <-- WRONG"
    print(f"{name}.grad: warp {got.ravel()}  expected {np.ravel(expected[name])}{flag}")
