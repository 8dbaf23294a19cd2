"""A module compiled ahead of time to PTX (no GPU needed) by the CUDA tests."""

import warp_zerostore as wp


@wp.func
def ptx_store(y: wp.array(dtype=float), i: int, v: float):
    y[i] = v


@wp.kernel(zero_store=True)
def ptx_zero(x: wp.array(dtype=float), y: wp.array(dtype=float), v: wp.array(dtype=wp.vec3)):
    i = wp.tid()
    ptx_store(y, i, 2.0 * x[i])
    v[i].x = 3.0 * x[i]


@wp.kernel(zero_store=False)
def ptx_accumulate(x: wp.array(dtype=float), y: wp.array(dtype=float), v: wp.array(dtype=wp.vec3)):
    i = wp.tid()
    ptx_store(y, i, 2.0 * x[i])
    v[i].x = 3.0 * x[i]
