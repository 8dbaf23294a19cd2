"""Kernels of the bridge's view and stride tests (views, strides, broadcasts). No torch here: plain Warp kernels."""

import warp_zerostore as wp


@wp.kernel
def square_into(x: wp.array(dtype=wp.float64), t: wp.array(dtype=wp.float64)):
    """t[i] = x[i]^2"""
    i = wp.tid()
    t[i] = x[i] * x[i]


@wp.kernel
def multiply(a: wp.array(dtype=wp.float64), b: wp.array(dtype=wp.float64), y: wp.array(dtype=wp.float64)):
    """y[i] = a[i] * b[i]"""
    i = wp.tid()
    y[i] = a[i] * b[i]


@wp.kernel
def vec_norm2(v: wp.array(dtype=wp.vec3d), y: wp.array(dtype=wp.float64)):
    """y[i] = |v[i]|^2"""
    i = wp.tid()
    y[i] = wp.dot(v[i], v[i])


@wp.kernel
def cube_1d(x: wp.array(dtype=wp.float64), y: wp.array(dtype=wp.float64)):
    """y[i] = x[i]^3"""
    i = wp.tid()
    y[i] = x[i] * x[i] * x[i]


@wp.kernel
def cube_2d(x: wp.array2d(dtype=wp.float64), y: wp.array2d(dtype=wp.float64)):
    """y[i, j] = x[i, j]^3"""
    i, j = wp.tid()
    y[i, j] = x[i, j] * x[i, j] * x[i, j]


@wp.kernel
def cube_3d(x: wp.array3d(dtype=wp.float64), y: wp.array3d(dtype=wp.float64)):
    """y[i, j, k] = x[i, j, k]^3"""
    i, j, k = wp.tid()
    y[i, j, k] = x[i, j, k] * x[i, j, k] * x[i, j, k]
