"""Kernels for tests/test_lints_adjoint_bugs.py: a local vector's component assigned after the vector was used."""

import warp_zerostore as wp

wp.set_module_options({"enable_backward": True})


@wp.kernel(zero_store=True)
def dot_then_assign(xv: wp.array(dtype=wp.vec3), y: wp.array(dtype=float)):
    i = wp.tid()
    v = xv[i]
    y[i] = wp.dot(v, v)
    v[0] = 5.0  # line 13: Warp's backward replays this first; dot's adjoint then reads v[0] = 5


@wp.kernel(zero_store=True)
def components_then_assign(xv: wp.array(dtype=wp.vec3), y: wp.array(dtype=float)):
    i = wp.tid()
    v = xv[i]
    y[i] = v[0] * v[0] + 2.0 * v[1]
    v[0] = 5.0


@wp.kernel(zero_store=True)
def sum_then_update(xv: wp.array(dtype=wp.vec3), y: wp.array(dtype=float)):
    i = wp.tid()
    v = xv[i]
    y[i] = wp.length(v + v)
    v[0] += 1.0


@wp.kernel(zero_store=True)
def copy_then_assign(xv: wp.array(dtype=wp.vec3), y: wp.array(dtype=float)):
    i = wp.tid()
    v = xv[i]
    y[i] = wp.dot(v, v)
    w = wp.vec3(v)
    w[0] = 5.0


@wp.kernel
def dot_then_assign_stock(xv: wp.array(dtype=wp.vec3), y: wp.array(dtype=float)):
    i = wp.tid()
    v = xv[i]
    y[i] = wp.dot(v, v)
    v[0] = 5.0


@wp.struct
class Pair:
    a: float
    b: float


@wp.func
def pair_sum(p: Pair):
    return p.a * p.b


@wp.kernel(zero_store=True)
def struct_field_after_call(x: wp.array2d(dtype=float), y: wp.array(dtype=float)):
    i = wp.tid()
    s = Pair()
    s.a = x[i, 0]
    s.b = x[i, 1]
    y[i] = pair_sum(s)
    s.a = 1.0
