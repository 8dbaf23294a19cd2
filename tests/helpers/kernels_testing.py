"""Kernels for the tests of warp_zerostore.testing, all in one module, built once per session.

``square`` per dtype and mode; generic kernels with their float32 and float64 overloads declared up front
(so the float64 re-run of check_gradients does not rebuild the module mid-test); a custom adjoint that
is wrong on purpose.
"""

from typing import Any

import warp_zerostore as wp

SQUARE_DTYPES = {
    "float16": wp.float16,
    "float32": wp.float32,
    "float64": wp.float64,
    "vec3": wp.vec3,
    "mat22": wp.mat22,
    "quat": wp.quat,
    "transform": wp.transform,
}


def _square(T, flag):
    """``y = x * x`` in the dtype's own product (component-wise for vectors, matmul, quaternion product, transform
    composition): nonlinear, and an overwrite of ``y``."""
    if T is wp.vec3:

        @wp.kernel(zero_store=flag)
        def square(x: wp.array(dtype=T), y: wp.array(dtype=T)):
            i = wp.tid()
            y[i] = wp.cw_mul(x[i], x[i])

    elif T is wp.transform:

        @wp.kernel(zero_store=flag)
        def square(x: wp.array(dtype=T), y: wp.array(dtype=T)):
            i = wp.tid()
            y[i] = wp.transform_multiply(x[i], x[i])

    else:

        @wp.kernel(zero_store=flag)
        def square(x: wp.array(dtype=T), y: wp.array(dtype=T)):
            i = wp.tid()
            y[i] = x[i] * x[i]

    return square


SQUARE = {(name, flag): _square(T, flag) for name, T in SQUARE_DTYPES.items() for flag in (True, False)}


@wp.kernel(zero_store=True)
def square_2d(x: wp.array2d(dtype=float), y: wp.array2d(dtype=float)):
    i, j = wp.tid()
    y[i, j] = x[i, j] * x[i, j] + 0.5 * x[i, j]


@wp.kernel(zero_store=True)
def cube_generic(x: wp.array(dtype=Any), y: wp.array(dtype=Any)):
    i = wp.tid()
    y[i] = x[i] * x[i] * x[i]


@wp.kernel(zero_store=False)
def cube_generic_accumulate(x: wp.array(dtype=Any), y: wp.array(dtype=Any)):
    i = wp.tid()
    y[i] = x[i] * x[i] * x[i]


for _k in (cube_generic, cube_generic_accumulate):
    for _T in (wp.float32, wp.float64):
        wp.overload(_k, {"x": wp.array(dtype=_T), "y": wp.array(dtype=_T)})


@wp.kernel(zero_store=True)
def scaled_sum(a: wp.array(dtype=float), b: wp.array(dtype=float), dst: wp.array(dtype=float), alpha: float, off: int):
    i = wp.tid() + off
    dst[i] = a[i] + alpha * b[i]


@wp.func
def cube(x: float):
    return x * x * x


@wp.func_grad(cube)
def adj_cube(x: float, adj_ret: float):
    wp.adjoint[x] += 3.0 * x * x * adj_ret


@wp.func
def cube_wrong(x: float):
    return x * x * x


@wp.func_grad(cube_wrong)
def adj_cube_wrong(x: float, adj_ret: float):
    wp.adjoint[x] += 2.0 * x * x * adj_ret  # wrong on purpose: d(x^3)/dx is 3 x^2


@wp.kernel(zero_store=True)
def custom_cube(x: wp.array(dtype=float), y: wp.array(dtype=float)):
    i = wp.tid()
    y[i] = cube(x[i])


@wp.kernel(zero_store=True)
def custom_cube_wrong(x: wp.array(dtype=float), y: wp.array(dtype=float)):
    i = wp.tid()
    y[i] = cube_wrong(x[i])


@wp.kernel(zero_store=True)
def vec_cube_wrong(x: wp.array(dtype=wp.vec3), y: wp.array(dtype=wp.vec3)):
    i = wp.tid()
    v = x[i]
    y[i] = wp.vec3(v[0], 2.0 * v[1], cube_wrong(v[2]))


def _seed_program(flag):
    @wp.kernel(zero_store=flag)
    def k1(x: wp.array(dtype=float), y: wp.array(dtype=float)):
        y[wp.tid()] = 2.0 * x[wp.tid()]

    @wp.kernel(zero_store=flag)
    def k2(x: wp.array(dtype=float), y: wp.array(dtype=float)):
        y[wp.tid()] = 3.0 * x[wp.tid()]

    return k1, k2


SEED_PROGRAM = {flag: _seed_program(flag) for flag in (True, False)}


@wp.kernel(zero_store=True)
def gather_square(x: wp.array(dtype=float), idx: wp.array(dtype=int), y: wp.array(dtype=float)):
    i = wp.tid()
    y[i] = x[idx[i]] * x[idx[i]]
