"""Fuzzer repro (zero_store, gradient mismatch, before this package gave a flagged kernel's local components Warp's
copy form): constructs dot, setcomponent(+=), store.

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
    a0 = wp.float32(wp.float32(1.0))
    v0 = wp.vec3(xv[(i + 2) % 4])
    y[i] = wp.dot(v0, v0)
    v0[1] += x[(i + 3) % 4]


x = wp.array([-0.578125, 0.5625, 0.265625, -0.734375], dtype=wp.float32, requires_grad=True)
xv = wp.array(
    [[0.609375, 0.59375, -0.03125], [1.0, -1.0, 0.640625], [0.296875, 0.046875, -0.75], [-0.125, 0.375, -0.578125]],
    dtype=wp.vec3,
    requires_grad=True,
)
y = wp.array([-0.578125, -0.390625, 0.546875, 0.09375], dtype=wp.float32, requires_grad=True)
acc = wp.array([-0.375, -0.3125], dtype=wp.float32, requires_grad=True)
tape = wp.Tape()
with tape:
    wp.launch(fuzzed, dim=4, inputs=[x, xv, y, acc, 3])
print("forward y:  ", y.numpy(), "  expected", np.array([0.652832031, 0.490478516, 0.724853516, 2.410400391]))
print("forward acc:", acc.numpy(), "  expected", np.array([-0.375, -0.3125]))
tape.backward(
    grads={
        y: wp.array([-0.046875, 0.46875, 0.953125, 0.203125], dtype=wp.float32),
        acc: wp.array([0.171875, 0.984375], dtype=wp.float32),
    }
)
expected = {
    "x": [0.0, 0.0, 0.0, 0.0],
    "xv": [
        [1.161621094, 1.131835938, -0.059570312],
        [0.40625, -0.40625, 0.260253906],
        [-0.027832031, -0.004394531, 0.0703125],
        [-0.1171875, 0.3515625, -0.541992188],
    ],
    "y": [0.0, 0.0, 0.0, 0.0],
    "acc": [0.171875, 0.984375],
}
for name, a in (("x", x), ("xv", xv), ("y", y), ("acc", acc)):
    got = a.grad.numpy().reshape(np.shape(expected[name]))
    flag = "" if np.allclose(got, expected[name], rtol=0.002, atol=0.002) else "   <-- WRONG"
    print(f"{name}.grad: warp {got.ravel()}  expected {np.ravel(expected[name])}{flag}")
