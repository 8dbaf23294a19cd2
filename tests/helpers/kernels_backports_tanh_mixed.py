"""An unflagged ``wp.tile_map(wp.tanh, t)`` in a module that holds a flagged kernel (tests/test_backports.py): the
module compiles whole, so the header's map macros build it too on Warp <= 1.18."""

import warp_zerostore as wp


@wp.kernel(zero_store=True)
def flagged(x: wp.array(dtype=float), y: wp.array(dtype=float)):
    i = wp.tid()
    y[i] = x[i]


@wp.kernel
def unflagged_tile_map_tanh(x: wp.array(dtype=float), y: wp.array(dtype=float)):
    i = wp.tid()
    wp.tile_store(y, wp.tile_map(wp.tanh, wp.tile_load(x, shape=4)), offset=i * 4)
