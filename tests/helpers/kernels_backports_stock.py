"""The unflagged twins of tests/helpers/kernels_backports.py's kernels that every Warp builds, in a module without a
flagged kernel: each keeps the installed Warp's own gradient, bug included."""

import warp_zerostore as wp


@wp.func
def pick(x: wp.array(dtype=float), i: int):
    return x[i] if x[i] > 0.0 else x[(i + 1) % 4]


@wp.kernel
def ternary(x: wp.array(dtype=float), y: wp.array(dtype=float)):
    i = wp.tid()
    y[i] += x[i] if x[i] > 0.0 else x[(i + 1) % 4]


@wp.kernel
def ternary_in_helper(x: wp.array(dtype=float), y: wp.array(dtype=float)):
    i = wp.tid()
    y[i] = pick(x, i) * x[i]


@wp.kernel
def tile_store_twice(x: wp.array(dtype=float), y: wp.array(dtype=float)):
    i = wp.tid()
    t = wp.tile_load(x, shape=4)
    wp.tile_store(y, wp.tile_map(wp.mul, t, t), offset=i * 4)
    wp.tile_store(y, t, offset=i * 4)


@wp.kernel
def square(x: wp.array(dtype=float), y: wp.array(dtype=float)):
    i = wp.tid()
    y[i] = x[i] * x[i]
