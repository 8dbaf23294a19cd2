"""Kernels of the check_gradients defect tests (what `check_gradients` must refuse or fail): correct ones and their broken twins."""

import warp_zerostore as wp


@wp.func
def sin_bad(x: float):
    return wp.sin(x)


@wp.func_grad(sin_bad)
def adj_sin_bad(x: float, adj_ret: float):
    # wrong on purpose: twice the derivative
    wp.adjoint[x] += 2.0 * wp.cos(x) * adj_ret


@wp.kernel(zero_store=True)
def sin_good_kernel(x: wp.array(dtype=float), y: wp.array(dtype=float)):
    i = wp.tid()
    y[i] = wp.sin(x[i])


@wp.kernel(zero_store=True)
def sin_bad_kernel(x: wp.array(dtype=float), y: wp.array(dtype=float)):
    i = wp.tid()
    y[i] = sin_bad(x[i])


@wp.kernel(zero_store=True)
def stiff_and_good(
    x: wp.array(dtype=float), w: wp.array(dtype=float), y: wp.array(dtype=float), z: wp.array(dtype=float)
):
    """y = 1000 x, z = sin(w)"""
    i = wp.tid()
    y[i] = 1000.0 * x[i]
    z[i] = wp.sin(w[i])


@wp.kernel(zero_store=True)
def stiff_and_bad(
    x: wp.array(dtype=float), w: wp.array(dtype=float), y: wp.array(dtype=float), z: wp.array(dtype=float)
):
    """y = 1000 x, z = sin_bad(w): z's adjoint is 2x off, y's magnitude must not hide it"""
    i = wp.tid()
    y[i] = 1000.0 * x[i]
    z[i] = sin_bad(w[i])


@wp.kernel(zero_store=True)
def stiff_and_bad_one_input(x: wp.array(dtype=float), y: wp.array(dtype=float), z: wp.array(dtype=float)):
    """y = 1000 x, z = sin_bad(x): both outputs from one input"""
    i = wp.tid()
    y[i] = 1000.0 * x[i]
    z[i] = sin_bad(x[i])


@wp.kernel(zero_store=True)
def cube_plus_small(x: wp.array(dtype=float), k: wp.array(dtype=float), y: wp.array(dtype=float)):
    """y = x^3 + 0.001 k"""
    i = wp.tid()
    y[i] = x[i] * x[i] * x[i] + 0.001 * k[i]


@wp.kernel(zero_store=True)
def spring_energy(x: wp.array(dtype=float), k: wp.array(dtype=float), e: wp.array(dtype=float)):
    """Energy of spring i between particles i and i + 1 (rest length 1): 0.5 k (x[i+1] - x[i] - 1)^2"""
    i = wp.tid()
    d = x[i + 1] - x[i] - 1.0
    e[i] = 0.5 * k[i] * d * d


@wp.kernel
def accumulate_square(x: wp.array(dtype=float), f: wp.array(dtype=float)):
    i = wp.tid()
    wp.atomic_add(f, i, x[i] * x[i])


@wp.kernel(zero_store=True)
def half(f: wp.array(dtype=float), y: wp.array(dtype=float)):
    i = wp.tid()
    y[i] = 0.5 * f[i]


@wp.kernel(zero_store=True)
def scale_by_index(x: wp.array(dtype=float), index: wp.array(dtype=int), y: wp.array(dtype=float)):
    i = wp.tid()
    y[i] = float(index[i]) * x[i]


@wp.kernel(zero_store=True)
def double(src: wp.array(dtype=float), dst: wp.array(dtype=float)):
    i = wp.tid()
    dst[i] = 2.0 * src[i]
