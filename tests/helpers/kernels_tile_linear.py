"""Tiled kernels over a reused scratch array, for test_tile_linear_reads.py: linear tile builtins (an FFT, its
inverse, a transpose) whose stale reads are safe, and a tile product whose stale read is real."""

import warp_zerostore as wp

ROWS, N = 2, 8  # rows of N complex values (vec2f), one tile a row


@wp.kernel
def fft_rows(x: wp.array2d(dtype=wp.vec2f), y: wp.array2d(dtype=wp.vec2f)):
    i = wp.tid()
    t = wp.tile_load(x, shape=(1, N), offset=(i, 0))
    wp.tile_fft(t)
    wp.tile_store(y, t, offset=(i, 0))


@wp.kernel
def ifft_rows(x: wp.array2d(dtype=wp.vec2f), y: wp.array2d(dtype=wp.vec2f)):
    i = wp.tid()
    t = wp.tile_load(x, shape=(1, N), offset=(i, 0))
    wp.tile_ifft(t)
    wp.tile_store(y, t, offset=(i, 0))


@wp.kernel
def transpose(x: wp.array2d(dtype=float), y: wp.array2d(dtype=float)):
    t = wp.tile_load(x, shape=(ROWS, N))
    wp.tile_store(y, wp.tile_transpose(t))


@wp.kernel
def product(x: wp.array2d(dtype=float), w: wp.array2d(dtype=float), y: wp.array2d(dtype=float)):
    # bilinear: x's values are read by w's adjoint (and w's by x's)
    a = wp.tile_load(x, shape=(N, N))
    b = wp.tile_load(w, shape=(N, N))
    wp.tile_store(y, wp.tile_matmul(a, b))


@wp.kernel
def scale(x: wp.array2d(dtype=float), y: wp.array2d(dtype=float)):
    i, j = wp.tid()
    y[i, j] = 3.0 * x[i, j]


@wp.kernel
def scale_complex(x: wp.array2d(dtype=wp.vec2f), y: wp.array2d(dtype=wp.vec2f)):
    i, j = wp.tid()
    y[i, j] = 3.0 * x[i, j]
