"""Fuzzer finding (stock and zero_store=True, build error): wp.tile_map(wp.tanh, t).

Warp 1.9.1, 1.10.1 and 1.12.1 cannot build this valid kernel: the tile map's adjoint calls adj_tanh without the
return value that tanh's adjoint takes ("candidate function not viable: requires 4 arguments, but 3 were
provided"). wp.sin and wp.cos map and build; Warp 1.19.0 builds this kernel and its gradient is right.
"""

import numpy as np
import warp as wp


@wp.kernel
def fuzzed(x: wp.array(dtype=wp.float32), yt: wp.array(dtype=wp.float32)):
    i = wp.tid()
    wp.tile_store(yt, wp.tile_map(wp.tanh, wp.tile_load(x, shape=4)), offset=i * 4)


x = wp.array([0.5, -0.25, 0.75, 1.0], dtype=wp.float32, requires_grad=True)
yt = wp.zeros(16, dtype=wp.float32, requires_grad=True)
tape = wp.Tape()
with tape:
    wp.launch_tiled(fuzzed, dim=[4], inputs=[x, yt], block_dim=1)  # <-- the build fails here on Warp <= 1.12
tape.backward(grads={yt: wp.ones(16, dtype=wp.float32)})
expected = 4.0 * (1.0 - np.tanh(x.numpy().astype(np.float64)) ** 2)
print("x.grad: warp", x.grad.numpy(), " expected", expected)
