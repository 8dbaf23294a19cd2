"""Fuzzer repro (stock, gradient mismatch): constructs tile readback yt, tile scale, tile_atomic_add, tile_extract, tile_load.

Warp 1.19.0. Expected values: central differences (float64) of a NumPy reference of this kernel.

The same with wp.tile_atomic_add: the region read (one element, through tile_extract) is then atomically
added to; the backward re-reads the sum. Right flagged on `wp.Tape(snapshot=True)`.
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
    a0 = wp.float32(wp.tile_extract(wp.tile_load(yt, shape=4, offset=i * 4), 0))
    wp.tile_atomic_add(yt, (a0 * wp.tile_load(x, shape=4)), offset=i * 4)


x = wp.array([0.078125, -0.828125, 0.0, -0.71875], dtype=wp.float32, requires_grad=True)
xv = wp.array(
    [[-0.5, 0.625, -0.546875], [-0.171875, 0.5, 0.390625], [-0.21875, -0.40625, 0.25], [-0.015625, -0.5625, -0.90625]],
    dtype=wp.vec3,
    requires_grad=True,
)
y = wp.array([-0.65625, -0.578125, -0.53125, 0.484375], dtype=wp.float32, requires_grad=True)
acc = wp.array([-0.09375, -0.078125], dtype=wp.float32, requires_grad=True)
yt = wp.array(
    [
        -0.828125,
        0.140625,
        0.9375,
        0.09375,
        -0.453125,
        -1.0,
        0.234375,
        -0.34375,
        -0.015625,
        -0.125,
        -0.984375,
        0.734375,
        0.4375,
        -0.875,
        0.859375,
        -0.875,
    ],
    dtype=wp.float32,
    requires_grad=True,
)
tape = wp.Tape()
with tape:
    wp.launch_tiled(fuzzed, dim=[4], inputs=[x, xv, y, acc, yt, 1], block_dim=1)
print("forward y:  ", y.numpy(), "  expected", np.array([-0.65625, -0.578125, -0.53125, 0.484375]))
print("forward acc:", acc.numpy(), "  expected", np.array([-0.09375, -0.078125]))
print(
    "forward yt: ",
    yt.numpy(),
    "  expected",
    np.array(
        [
            -0.892822266,
            0.826416016,
            0.9375,
            0.688964844,
            -0.488525391,
            -0.624755859,
            0.234375,
            -0.018066406,
            -0.016845703,
            -0.112060547,
            -0.984375,
            0.745605469,
            0.471679688,
            -1.237304688,
            0.859375,
            -1.189453125,
        ]
    ),
)
tape.backward(
    grads={
        y: wp.array([0.296875, 0.4375, -1.0, -0.09375], dtype=wp.float32),
        acc: wp.array([-0.890625, -0.671875], dtype=wp.float32),
        yt: wp.array(
            [
                -0.078125,
                -0.953125,
                -0.0625,
                0.703125,
                -0.046875,
                -0.984375,
                -0.5,
                0.203125,
                -0.265625,
                0.734375,
                -0.71875,
                0.515625,
                0.140625,
                -0.515625,
                0.75,
                0.75,
            ],
            dtype=wp.float32,
        ),
    }
)
expected = {
    "x": [0.151611328, 0.998291016, 0.617675781, -0.354248047],
    "xv": [[0.0, 0.0, 0.0], [0.0, 0.0, 0.0], [0.0, 0.0, 0.0], [0.0, 0.0, 0.0]],
    "y": [0.296875, 0.4375, -1.0, -0.09375],
    "acc": [-0.890625, -0.671875],
    "yt": [
        0.199707031,
        -0.953125,
        -0.0625,
        0.703125,
        0.618652344,
        -0.984375,
        -0.5,
        0.203125,
        -1.265136719,
        0.734375,
        -0.71875,
        0.515625,
        0.039550781,
        -0.515625,
        0.75,
        0.75,
    ],
}
for name, a in (("x", x), ("xv", xv), ("y", y), ("acc", acc), ("yt", yt)):
    got = a.grad.numpy().reshape(np.shape(expected[name]))
    flag = "" if np.allclose(got, expected[name], rtol=0.002, atol=0.002) else "   <-- WRONG"
    print(f"{name}.grad: warp {got.ravel()}  expected {np.ravel(expected[name])}{flag}")
