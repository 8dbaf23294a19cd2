"""Tile kernels compiled ahead of time to PTX (no GPU needed) by the CUDA tests."""

import warp_zerostore as wp

TILE = 16


@wp.kernel(zero_store=True)
def ptx_tile_zero(x: wp.array2d(dtype=float), y: wp.array2d(dtype=float)):
    i, j = wp.tid()
    t = wp.tile_load(x, shape=(TILE, TILE), offset=(i * TILE, j * TILE))
    wp.tile_store(y, t, offset=(i * TILE, j * TILE))


@wp.kernel(zero_store=False)
def ptx_tile_accumulate(x: wp.array2d(dtype=float), y: wp.array2d(dtype=float)):
    i, j = wp.tid()
    t = wp.tile_load(x, shape=(TILE, TILE), offset=(i * TILE, j * TILE))
    wp.tile_store(y, t, offset=(i * TILE, j * TILE))
