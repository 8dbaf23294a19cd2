"""Tile kernels for the tile-store tests, one per (case, dtype, shape, mode), all built once in this module."""

import warp_zerostore as wp
from warp_zerostore import _compat

HAS_ALPHA_BETA = _compat.WARP_VERSION >= (1, 12, 0)  # tile_matmul(a, b, c, alpha, beta)
ALPHA, BETA = (0.5, -1.3) if HAS_ALPHA_BETA else (1.0, 1.0)
MATMUL_SHAPES = [(4, 4, 4), (8, 4, 2)]  # (TILE_M, TILE_N, TILE_K)
MODES = (True, False, None)


def _matmul(dtype, tm, tn, tk, flag):
    alpha, beta = dtype(ALPHA), dtype(BETA)

    @wp.kernel(zero_store=flag)
    def tile_matmul_overwrite(A: wp.array2d(dtype=dtype), B: wp.array2d(dtype=dtype), C: wp.array2d(dtype=dtype)):
        i, j = wp.tid()
        a = wp.tile_load(A, shape=(tm, tk), offset=(i * tm, 0))
        b = wp.tile_load(B, shape=(tk, tn), offset=(0, j * tn))
        c = wp.tile_load(C, shape=(tm, tn), offset=(i * tm, j * tn))
        if wp.static(HAS_ALPHA_BETA):
            wp.tile_matmul(a, b, c, alpha=alpha, beta=beta)
        else:
            wp.tile_matmul(a, b, c)
        wp.tile_store(C, c, offset=(i * tm, j * tn))

    return tile_matmul_overwrite


MATMUL = {
    (name, shape, flag): _matmul(dtype, *shape, flag)
    for name, dtype in (("float32", wp.float32), ("float64", wp.float64))
    for shape in MATMUL_SHAPES
    for flag in MODES
}

TILE = 4


@wp.func
def reversed_row(k: int):
    return 5 - k


def _overwrites(dtype, flag):
    """y is stored twice from the same tile: first y = x, then y = 2x."""

    @wp.kernel(zero_store=flag)
    def overwrite_1d(x: wp.array(dtype=dtype), y: wp.array(dtype=dtype)):
        i = wp.tid()
        t = wp.tile_load(x, shape=(TILE,), offset=(i * TILE,))
        wp.tile_store(y, t, offset=(i * TILE,))
        wp.tile_store(y, t + t, offset=(i * TILE,))

    @wp.kernel(zero_store=flag)
    def overwrite_2d(x: wp.array2d(dtype=dtype), y: wp.array2d(dtype=dtype)):
        i, j = wp.tid()
        t = wp.tile_load(x, shape=(TILE, 2), offset=(i * TILE, j * 2))
        wp.tile_store(y, t, offset=(i * TILE, j * 2))
        wp.tile_store(y, t + t, offset=(i * TILE, j * 2))

    @wp.kernel(zero_store=flag)
    def overwrite_3d(x: wp.array3d(dtype=dtype), y: wp.array3d(dtype=dtype)):
        i, j, k = wp.tid()
        t = wp.tile_load(x, shape=(2, 2, 2), offset=(i * 2, j * 2, k * 2))
        wp.tile_store(y, t, offset=(i * 2, j * 2, k * 2))
        wp.tile_store(y, t + t, offset=(i * 2, j * 2, k * 2))

    @wp.kernel(zero_store=flag)
    def overwrite_indexed(x: wp.array2d(dtype=dtype), y: wp.array2d(dtype=dtype)):
        i = wp.tid()
        # rows 5, 4, 3, 2 (index tiles loaded from an int array crash Warp <= 1.12's own backward)
        idx = wp.tile_map(reversed_row, wp.tile_arange(TILE, dtype=int, storage="shared"))
        t = wp.tile_load(x, shape=(TILE, 2), offset=(0, i * 2), storage="register")
        wp.tile_store_indexed(y, idx, t, offset=(0, i * 2), axis=0)
        wp.tile_store_indexed(y, idx, t + t, offset=(0, i * 2), axis=0)

    @wp.kernel(zero_store=flag)
    def atomic_twice(x: wp.array(dtype=dtype), y: wp.array(dtype=dtype)):
        i = wp.tid()
        t = wp.tile_load(x, shape=(TILE,), offset=(i * TILE,))
        wp.tile_atomic_add(y, t, offset=(i * TILE,))
        wp.tile_atomic_add(y, t + t, offset=(i * TILE,))

    return {1: overwrite_1d, 2: overwrite_2d, 3: overwrite_3d, "indexed": overwrite_indexed, "atomic": atomic_twice}


OVERWRITE_DTYPES = {"float32": wp.float32, "float64": wp.float64, "vec3": wp.vec3}
OVERWRITES = {(name, flag): _overwrites(dtype, flag) for name, dtype in OVERWRITE_DTYPES.items() for flag in MODES}
