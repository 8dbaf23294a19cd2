"""Fuzzer repro (zero_store, gradient mismatch): constructs assign(=), atomic_add, call, component, for(runtime), tanh.

Warp 1.19.0. Expected values: central differences (float64) of a NumPy reference of this kernel.
"""

import numpy as np

import warp_zerostore as wp


@wp.func
def fuzzed_h0(p0: wp.float32):
    return wp.tanh(p0)


@wp.func
def fuzzed_h1(y: wp.array(dtype=wp.float32), i: int, p0: wp.float32, p1: wp.float32):
    y[i] = p0


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
    v0 = wp.vec3(xv[(i + 3) % 4])
    for k0 in range(n):
        v0 = xv[i]
    wp.atomic_add(acc, i % 2, fuzzed_h0(v0[2]))


x = wp.array([-0.734375, 0.484375, -0.65625, -0.703125], dtype=wp.float32, requires_grad=True)
xv = wp.array(
    [
        [-0.28125, -0.390625, 0.109375],
        [-0.8125, 0.34375, -0.40625],
        [-0.53125, -0.609375, 0.15625],
        [-0.421875, 0.78125, 0.265625],
    ],
    dtype=wp.vec3,
    requires_grad=True,
)
y = wp.array([0.21875, 0.828125, 0.140625, -0.265625], dtype=wp.float32, requires_grad=True)
acc = wp.array([-1.0, -0.5625], dtype=wp.float32, requires_grad=True)
tape = wp.Tape()
with tape:
    wp.launch(fuzzed, dim=4, inputs=[x, xv, y, acc, 2])
print("forward y:  ", y.numpy(), "  expected", np.array([0.21875, 0.828125, 0.140625, -0.265625]))
print("forward acc:", acc.numpy(), "  expected", np.array([-0.73606834, -0.688234751]))
tape.backward(
    grads={
        y: wp.array([0.0625, -0.125, -0.984375, -0.75], dtype=wp.float32),
        acc: wp.array([-0.015625, -0.75], dtype=wp.float32),
    }
)
expected = {
    "x": [0.0, 0.0, 0.0, 0.0],
    "xv": [[0.0, 0.0, -0.015439561], [0.0, 0.0, -0.638667199], [0.0, 0.0, -0.015249654], [0.0, 0.0, -0.699475654]],
    "y": [0.0625, -0.125, -0.984375, -0.75],
    "acc": [-0.015625, -0.75],
}
for name, a in (("x", x), ("xv", xv), ("y", y), ("acc", acc)):
    got = a.grad.numpy().reshape(np.shape(expected[name]))
    flag = "" if np.allclose(got, expected[name], rtol=0.002, atol=0.002) else "   <-- WRONG"
    print(f"{name}.grad: warp {got.ravel()}  expected {np.ravel(expected[name])}{flag}")
