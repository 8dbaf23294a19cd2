"""``wp.tile_map(wp.tanh, t)`` (and ``sqrt``) in a flagged kernel, alone in its module: Warp <= 1.18 does not build it
stock (tests/test_backports.py)."""

import warp_zerostore as wp


@wp.kernel(zero_store=True)
def tile_map_tanh(x: wp.array(dtype=float), y: wp.array(dtype=float)):
    i = wp.tid()
    t = wp.tile_load(x, shape=4)
    wp.tile_store(y, wp.tile_map(wp.tanh, t) + wp.tile_map(wp.sqrt, wp.tile_map(wp.mul, t, t)), offset=i * 4)
