"""A module of several store-heavy kernels, built by bench_build.py with or without a flag."""

import os

import warp_zerostore as wp

FLAG = {"none": None, "true": True, "false": False}[os.environ.get("ZS_BENCH_FLAG", "none")]


@wp.func
def shade(y: wp.array(dtype=float), i: int, v: float):
    y[i] = v * v


@wp.kernel(zero_store=FLAG)
def integrate(x: wp.array(dtype=wp.vec3), v: wp.array(dtype=wp.vec3), f: wp.array(dtype=wp.vec3), dt: float):
    i = wp.tid()
    v[i] = v[i] + f[i] * dt
    x[i] = x[i] + v[i] * dt


@wp.kernel(zero_store=FLAG)
def transforms(q: wp.array(dtype=wp.quat), t: wp.array(dtype=wp.transform), m: wp.array(dtype=wp.mat44)):
    i = wp.tid()
    t[i] = wp.transform(wp.vec3(1.0, 2.0, 3.0), q[i])
    m[i] = wp.transform_to_matrix(t[i])
    m[i][0, 3] = 0.0


@wp.kernel(zero_store=FLAG)
def scalars(a: wp.array(dtype=float), b: wp.array2d(dtype=float), c: wp.array(dtype=float)):
    i, j = wp.tid()
    b[i, j] = a[i] * float(j)
    shade(c, i, b[i, j])
    c[i] = wp.sin(c[i])
