"""Fuzzer repro (zero_store, gradient mismatch): constructs readback y[i], tile readback yt, tile scale, tile_atomic_add.

Warp 1.19.0. Expected values: central differences (float64) of a NumPy reference of this kernel.

A flagged kernel that reads back (wp.tile_load) a region it wrote with a tile builtin earlier in the launch:
the replay does not follow tile writes, so no Tape makes the gradient through the later read exact. The package
warns at build time (ReplayWarning, naming the argument, the builtin and both lines) instead of being silently
wrong. Keep the written tile in a variable and use it instead of loading it again.
"""

import numpy as np

import warp_zerostore as wp


@wp.kernel(zero_store=True)
def fuzzed(
    x: wp.array(dtype=wp.float64),
    xv: wp.array(dtype=wp.vec3d),
    y: wp.array(dtype=wp.float64),
    acc: wp.array(dtype=wp.float64),
    yt: wp.array(dtype=wp.float64),
    n: int,
):
    i = wp.tid()
    wp.tile_atomic_add(yt, wp.tile_load(yt, shape=4, offset=i * 4), offset=i * 4)
    wp.tile_atomic_add(yt, (y[i] * wp.tile_load(yt, shape=4, offset=i * 4)), offset=i * 4)


x = wp.array([0.96875, -0.46875, -0.984375, -0.5625], dtype=wp.float64, requires_grad=True)
xv = wp.array(
    [
        [-0.984375, 0.90625, -0.265625],
        [0.84375, -0.03125, 0.359375],
        [0.953125, -0.703125, -0.640625],
        [0.765625, 0.78125, -0.6875],
    ],
    dtype=wp.vec3d,
    requires_grad=True,
)
y = wp.array([0.640625, -0.25, -0.859375, -0.390625], dtype=wp.float64, requires_grad=True)
acc = wp.array([0.515625, -0.546875], dtype=wp.float64, requires_grad=True)
yt = wp.array(
    [
        -0.046875,
        -0.5,
        0.578125,
        -0.46875,
        0.828125,
        0.0,
        -0.140625,
        0.46875,
        0.125,
        0.9375,
        0.421875,
        -0.140625,
        -0.953125,
        0.53125,
        0.140625,
        0.984375,
    ],
    dtype=wp.float64,
    requires_grad=True,
)
tape = wp.Tape(snapshot=True)
with tape:
    wp.launch_tiled(fuzzed, dim=[4], inputs=[x, xv, y, acc, yt, 2], block_dim=1)
print("forward y:  ", y.numpy(), "  expected", np.array([0.640625, -0.25, -0.859375, -0.390625]))
print("forward acc:", acc.numpy(), "  expected", np.array([0.515625, -0.546875]))
print(
    "forward yt: ",
    yt.numpy(),
    "  expected",
    np.array(
        [
            -0.153808594,
            -1.640625,
            1.896972656,
            -1.538085938,
            1.2421875,
            0.0,
            -0.2109375,
            0.703125,
            0.03515625,
            0.263671875,
            0.118652344,
            -0.039550781,
            -1.161621094,
            0.647460938,
            0.171386719,
            1.199707031,
        ]
    ),
)
tape.backward(
    grads={
        y: wp.array([-0.53125, -0.859375, -0.390625, 0.0], dtype=wp.float64),
        acc: wp.array([-0.96875, 0.53125], dtype=wp.float64),
        yt: wp.array(
            [
                0.5,
                -0.046875,
                0.734375,
                -0.40625,
                -0.53125,
                0.15625,
                -0.640625,
                -0.09375,
                0.875,
                0.8125,
                0.390625,
                -0.859375,
                0.296875,
                -0.359375,
                0.125,
                0.703125,
            ],
            dtype=wp.float64,
        ),
    }
)
expected = {
    "x": [0.0, 0.0, 0.0, 0.0],
    "xv": [[0.0, 0.0, 0.0], [0.0, 0.0, 0.0], [0.0, 0.0, 0.0], [0.0, 0.0, 0.0]],
    "y": [0.698730469, -1.646972656, 1.922851562, 0.471679687],
    "acc": [-0.96875, 0.53125],
    "yt": [
        1.640625,
        -0.153808594,
        2.409667969,
        -1.333007813,
        -0.796875,
        0.234375,
        -0.9609375,
        -0.140625,
        0.24609375,
        0.228515625,
        0.109863281,
        -0.241699219,
        0.361816406,
        -0.437988281,
        0.15234375,
        0.856933594,
    ],
}
for name, a in (("x", x), ("xv", xv), ("y", y), ("acc", acc), ("yt", yt)):
    got = a.grad.numpy().reshape(np.shape(expected[name]))
    flag = "" if np.allclose(got, expected[name], rtol=1e-05, atol=1e-05) else "   <-- WRONG"
    print(f"{name}.grad: warp {got.ravel()}  expected {np.ravel(expected[name])}{flag}")
