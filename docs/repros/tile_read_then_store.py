"""Fuzzer repro (stock, gradient mismatch): constructs tile readback yt, tile_map(sin), tile_store.

Warp 1.19.0. Expected values: central differences (float64) of a NumPy reference of this kernel.

The tile form (feature tiles) of read_then_overwrite.py: a thread tile-loads its own region of `yt` and
tile-stores over it in the same launch; Warp's backward re-reads the stored values (stock and zero_store=True
alike on a plain Tape). With `import warp_zerostore as wp`, `@wp.kernel(zero_store=True)` and
`wp.Tape(snapshot=True)` it is right.
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
    wp.tile_store(yt, wp.tile_map(wp.sin, wp.tile_load(yt, shape=4, offset=i * 4)), offset=i * 4)


x = wp.array([0.359375, 0.8125, -0.609375, -0.140625], dtype=wp.float32, requires_grad=True)
xv = wp.array(
    [
        [-0.59375, 0.5, -0.359375],
        [-0.3125, -1.0, -0.984375],
        [-0.609375, -0.015625, 0.078125],
        [-0.609375, -0.140625, 0.25],
    ],
    dtype=wp.vec3,
    requires_grad=True,
)
y = wp.array([0.265625, -0.640625, 1.0, 0.984375], dtype=wp.float32, requires_grad=True)
acc = wp.array([-0.09375, 0.234375], dtype=wp.float32, requires_grad=True)
yt = wp.array(
    [
        -0.75,
        -0.03125,
        -0.328125,
        0.046875,
        -0.453125,
        -0.09375,
        -0.390625,
        0.078125,
        0.59375,
        -0.46875,
        0.96875,
        1.0,
        1.0,
        -0.953125,
        -1.0,
        -0.125,
    ],
    dtype=wp.float32,
    requires_grad=True,
)
tape = wp.Tape()
with tape:
    wp.launch_tiled(fuzzed, dim=[4], inputs=[x, xv, y, acc, yt, 3], block_dim=1)
print("forward y:  ", y.numpy(), "  expected", np.array([0.265625, -0.640625, 1.0, 0.984375]))
print("forward acc:", acc.numpy(), "  expected", np.array([-0.09375, 0.234375]))
print(
    "forward yt: ",
    yt.numpy(),
    "  expected",
    np.array(
        [
            -0.68163876,
            -0.031244914,
            -0.32226863,
            0.046857836,
            -0.437777303,
            -0.093612731,
            -0.380766409,
            0.078045551,
            0.559473131,
            -0.451771471,
            0.824178445,
            0.841470985,
            0.841470985,
            -0.81522929,
            -0.841470985,
            -0.124674733,
        ]
    ),
)
tape.backward(
    grads={
        y: wp.array([0.859375, -0.53125, -0.671875, 0.09375], dtype=wp.float32),
        acc: wp.array([0.28125, -0.640625], dtype=wp.float32),
        yt: wp.array(
            [
                0.0625,
                0.65625,
                0.109375,
                -0.84375,
                0.140625,
                -0.5,
                0.453125,
                0.359375,
                -0.65625,
                1.0,
                -0.6875,
                -0.484375,
                -0.59375,
                -0.5,
                0.703125,
                0.359375,
            ],
            dtype=wp.float32,
        ),
    }
)
expected = {
    "x": [0.0, 0.0, 0.0, 0.0],
    "xv": [[0.0, 0.0, 0.0], [0.0, 0.0, 0.0], [0.0, 0.0, 0.0], [0.0, 0.0, 0.0]],
    "y": [0.859375, -0.53125, -0.671875, 0.09375],
    "acc": [0.28125, -0.640625],
    "yt": [
        0.045730554,
        0.655929592,
        0.103539654,
        -0.842823198,
        0.126433609,
        -0.497804343,
        0.418991665,
        0.358278832,
        -0.54393182,
        0.892133699,
        -0.38935201,
        -0.261708929,
        -0.320804494,
        -0.289569165,
        0.379900059,
        0.356571037,
    ],
}
for name, a in (("x", x), ("xv", xv), ("y", y), ("acc", acc), ("yt", yt)):
    got = a.grad.numpy().reshape(np.shape(expected[name]))
    flag = "" if np.allclose(got, expected[name], rtol=0.002, atol=0.002) else "   <-- WRONG"
    print(f"{name}.grad: warp {got.ravel()}  expected {np.ravel(expected[name])}{flag}")
