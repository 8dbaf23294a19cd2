"""The subscript annotation spellings (``wp.array[float]``, Warp >= 1.17; Newton uses them throughout)."""

import warp_zerostore as wp


@wp.kernel
def first_subscript(x: wp.array[float], out: wp.array[float]):
    out[0] = x[0] * x[0]


@wp.kernel
def first_2d_subscript(x: wp.array2d[float], out: wp.array[float]):
    out[0] = x[0, 0]
