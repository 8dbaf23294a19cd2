"""Fuzzer repro (stock, gradient mismatch): constructs tile_load, tile_store.

Warp 1.9.1. Expected values: central differences (float64) of a NumPy reference of this kernel.

The tile form of overwrite_accumulates.py: Warp 1.9's adjoint of wp.tile_store leaves yt.grad in place (1.10 and
later zero it), so the overwritten values' gradient flows on. `@wp.kernel(zero_store=True)` (warp_zerostore) is
right on every version.
"""

import numpy as np
import warp as wp


@wp.kernel
def fuzzed(
    x: wp.array(dtype=wp.float32),
    xv: wp.array(dtype=wp.vec3),
    y: wp.array(dtype=wp.float32),
    acc: wp.array(dtype=wp.float32),
    yt: wp.array(dtype=wp.float32),
    n: int,
):
    i = wp.tid()
    wp.tile_store(yt, wp.tile_load(x, shape=4), offset=i * 4)


x = wp.array([-0.28125, 0.609375, 0.890625, 0.1875], dtype=wp.float32, requires_grad=True)
xv = wp.array(
    [[-0.75, 1.0, 0.984375], [0.75, -0.078125, 0.421875], [0.515625, -0.453125, 0.0], [-0.03125, 0.390625, 0.421875]],
    dtype=wp.vec3,
    requires_grad=True,
)
y = wp.array([-0.1875, 0.25, -0.03125, 0.0625], dtype=wp.float32, requires_grad=True)
acc = wp.array([-0.421875, -0.21875], dtype=wp.float32, requires_grad=True)
yt = wp.array(
    [
        -0.53125,
        0.21875,
        0.84375,
        0.46875,
        0.234375,
        -0.90625,
        -0.953125,
        0.640625,
        -0.078125,
        0.875,
        -0.1875,
        0.453125,
        0.34375,
        0.15625,
        0.203125,
        0.953125,
    ],
    dtype=wp.float32,
    requires_grad=True,
)
tape = wp.Tape()
with tape:
    wp.launch_tiled(fuzzed, dim=[4], inputs=[x, xv, y, acc, yt, 1], block_dim=1)
print("forward y:  ", y.numpy(), "  expected", np.array([-0.1875, 0.25, -0.03125, 0.0625]))
print("forward acc:", acc.numpy(), "  expected", np.array([-0.421875, -0.21875]))
print(
    "forward yt: ",
    yt.numpy(),
    "  expected",
    np.array(
        [
            -0.28125,
            0.609375,
            0.890625,
            0.1875,
            -0.28125,
            0.609375,
            0.890625,
            0.1875,
            -0.28125,
            0.609375,
            0.890625,
            0.1875,
            -0.28125,
            0.609375,
            0.890625,
            0.1875,
        ]
    ),
)
tape.backward(
    grads={
        y: wp.array([0.640625, -0.71875, 0.234375, -0.234375], dtype=wp.float32),
        acc: wp.array([-0.765625, 0.609375], dtype=wp.float32),
        yt: wp.array(
            [
                0.21875,
                0.703125,
                0.390625,
                -0.703125,
                -0.015625,
                0.828125,
                -0.28125,
                -0.375,
                0.8125,
                -0.078125,
                0.015625,
                -0.21875,
                -0.453125,
                0.875,
                -1.0,
                -0.125,
            ],
            dtype=wp.float32,
        ),
    }
)
expected = {
    "x": [0.5625, 2.328125, -0.875, -1.421875],
    "xv": [[0.0, 0.0, 0.0], [0.0, 0.0, 0.0], [0.0, 0.0, 0.0], [0.0, 0.0, 0.0]],
    "y": [0.640625, -0.71875, 0.234375, -0.234375],
    "acc": [-0.765625, 0.609375],
    "yt": [0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0],
}
for name, a in (("x", x), ("xv", xv), ("y", y), ("acc", acc), ("yt", yt)):
    got = a.grad.numpy().reshape(np.shape(expected[name]))
    flag = "" if np.allclose(got, expected[name], rtol=0.002, atol=0.002) else "   <-- WRONG"
    print(f"{name}.grad: warp {got.ravel()}  expected {np.ravel(expected[name])}{flag}")
