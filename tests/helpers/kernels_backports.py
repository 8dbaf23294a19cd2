"""Flagged kernels whose stock form older Warp gets wrong (tests/test_backports.py): one module, every kernel
``zero_store=True``, so its helpers are built for flagged kernels only."""

import warp_zerostore as wp


@wp.func
def pick(x: wp.array(dtype=float), i: int):
    return x[i] if x[i] > 0.0 else x[(i + 1) % 4]


@wp.kernel(zero_store=True)
def ternary(x: wp.array(dtype=float), y: wp.array(dtype=float)):
    i = wp.tid()
    y[i] += x[i] if x[i] > 0.0 else x[(i + 1) % 4]


@wp.kernel(zero_store=True)
def ternary_in_helper(x: wp.array(dtype=float), y: wp.array(dtype=float)):
    i = wp.tid()
    y[i] = pick(x, i) * x[i]


@wp.kernel(zero_store=True)
def tile_store_twice(x: wp.array(dtype=float), y: wp.array(dtype=float)):
    i = wp.tid()
    t = wp.tile_load(x, shape=4)
    wp.tile_store(y, wp.tile_map(wp.mul, t, t), offset=i * 4)
    wp.tile_store(y, t, offset=i * 4)


@wp.kernel(zero_store=True)
def tile_map_tanh(x: wp.array(dtype=float), y: wp.array(dtype=float)):
    i = wp.tid()
    t = wp.tile_load(x, shape=4)
    wp.tile_store(y, wp.tile_map(wp.tanh, t) + wp.tile_map(wp.sqrt, wp.tile_map(wp.mul, t, t)), offset=i * 4)


@wp.func
def sine(p: float):
    return wp.sin(p)


@wp.func_grad(sine)
def adj_sine(p: float, adj_ret: float):
    wp.adjoint[p] += wp.cos(p) * adj_ret


@wp.func
def sine_twice(p: float):
    return sine(p) * 2.0


@wp.kernel(zero_store=True)
def custom_adjoint_from_func(x: wp.array(dtype=float), y: wp.array(dtype=float)):
    i = wp.tid()
    y[i] = sine_twice(x[i])
