"""Fuzzer repro (stock, gradient mismatch): constructs atomic_add, augstore, readback y[i], tanh.

Warp 1.19.0. Expected values: central differences (float64) of a NumPy reference of this kernel.

An in-place update: on a plain Tape the backward re-reads the stored value (stock and zero_store=True alike);
with `import warp_zerostore as wp`, `@wp.kernel(zero_store=True)` and `wp.Tape(snapshot=True)` it is right, and
`wp.Tape(check="warn")` reports the stale read.
"""

import numpy as np
import warp as wp


@wp.func
def fuzzed_h0(y: wp.array(dtype=wp.float32), i: int, p0: wp.float32, p1: wp.float32):
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
    wp.atomic_add(acc, i % 2, wp.tanh(y[i]))
    y[i] += y[i]


x = wp.array([0.40625, -0.65625, -0.734375, -0.78125], dtype=wp.float32, requires_grad=True)
xv = wp.array(
    [
        [0.984375, -0.640625, 0.984375],
        [-0.765625, 0.671875, -0.484375],
        [0.078125, -0.125, 0.984375],
        [-0.1875, -0.9375, 0.5],
    ],
    dtype=wp.vec3,
    requires_grad=True,
)
y = wp.array([0.484375, -0.046875, -0.53125, 0.59375], dtype=wp.float32, requires_grad=True)
acc = wp.array([0.953125, -0.46875], dtype=wp.float32, requires_grad=True)
tape = wp.Tape()
with tape:
    wp.launch(fuzzed, dim=4, inputs=[x, xv, y, acc, 3])
print("forward y:  ", y.numpy(), "  expected", np.array([0.96875, -0.09375, -1.0625, 1.1875]))
print("forward acc:", acc.numpy(), "  expected", np.array([0.916529535, 0.016996588]))
tape.backward(
    grads={
        y: wp.array([-0.421875, -0.546875, 0.25, -0.578125], dtype=wp.float32),
        acc: wp.array([0.546875, -0.09375], dtype=wp.float32),
    }
)
expected = {
    "x": [0.0, 0.0, 0.0, 0.0],
    "xv": [[0.0, 0.0, 0.0], [0.0, 0.0, 0.0], [0.0, 0.0, 0.0], [0.0, 0.0, 0.0]],
    "y": [-0.407489528, -1.187294308, 0.917526637, -1.223407886],
    "acc": [0.546875, -0.09375],
}
for name, a in (("x", x), ("xv", xv), ("y", y), ("acc", acc)):
    got = a.grad.numpy().reshape(np.shape(expected[name]))
    flag = "" if np.allclose(got, expected[name], rtol=0.002, atol=0.002) else "   <-- WRONG"
    print(f"{name}.grad: warp {got.ravel()}  expected {np.ravel(expected[name])}{flag}")
