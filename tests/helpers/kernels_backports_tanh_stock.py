"""``wp.tile_map(wp.tanh, t)`` unflagged, alone in its module: a build error on Warp <= 1.18 (tests/test_backports.py)."""

import warp_zerostore as wp


@wp.kernel
def tile_map_tanh(x: wp.array(dtype=float), y: wp.array(dtype=float)):
    i = wp.tid()
    t = wp.tile_load(x, shape=4)
    wp.tile_store(y, wp.tile_map(wp.tanh, t) + wp.tile_map(wp.sqrt, wp.tile_map(wp.mul, t, t)), offset=i * 4)
