"""Flagged kernels whose stock gradient older Warp gets wrong (tests/test_backports.py): one module, every kernel
``zero_store=True``, so its helpers are built for flagged kernels only. Those older Warp does not build are in
modules of their own (``kernels_backports_tanh``, ``kernels_backports_custom``): a module compiles whole."""

import warp_zerostore as wp


@wp.func
def pick(x: wp.array(dtype=float), i: int):
    return x[i] if x[i] > 0.0 else x[(i + 1) % 4]


@wp.kernel(zero_store=True)
def ternary(x: wp.array(dtype=float), y: wp.array(dtype=float)):
    i = wp.tid()
    y[i] += x[i] if x[i] > 0.0 else x[(i + 1) % 4]


@wp.kernel(zero_store=True)
def ternary_in_helper(x: wp.array(dtype=float), y: wp.array(dtype=float)):
    i = wp.tid()
    y[i] = pick(x, i) * x[i]


@wp.kernel(zero_store=True)
def tile_store_twice(x: wp.array(dtype=float), y: wp.array(dtype=float)):
    i = wp.tid()
    t = wp.tile_load(x, shape=4)
    wp.tile_store(y, wp.tile_map(wp.mul, t, t), offset=i * 4)
    wp.tile_store(y, t, offset=i * 4)
