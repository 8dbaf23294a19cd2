"""A ``@wp.func_grad`` helper called from another helper, in a flagged kernel alone in its module: Warp 1.9 does not
build it stock (tests/test_backports.py)."""

import warp_zerostore as wp


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
