"""Kernels of the JAX bridge tests (tests/test_jax_bridge.py), built once per session."""

from typing import Any

import warp_zerostore as wp


@wp.kernel
def seed(x0: wp.array(dtype=Any), x1: wp.array(dtype=Any), x2: wp.array(dtype=Any), y: wp.array(dtype=Any)):
    i = wp.tid()
    p = x0[i] * x1[i] * x2[i]
    y[i] = p * p


@wp.kernel(zero_store=True)
def double_store(xa: wp.array(dtype=Any), xb: wp.array(dtype=Any), y: wp.array(dtype=Any)):
    i = wp.tid()
    y[i] = xa.dtype(2.0) * xa[i]
    y[i] = xb.dtype(3.0) * xb[i]


@wp.kernel(zero_store=False)
def double_store_accumulate(xa: wp.array(dtype=Any), xb: wp.array(dtype=Any), y: wp.array(dtype=Any)):
    i = wp.tid()
    y[i] = xa.dtype(2.0) * xa[i]
    y[i] = xb.dtype(3.0) * xb[i]


@wp.kernel(zero_store=True)
def two_outputs(x: wp.array(dtype=Any), y: wp.array(dtype=Any), z: wp.array(dtype=Any)):
    i = wp.tid()
    y[i] = x[i] * x[i]
    z[i] = x.dtype(5.0) * x[i]


@wp.kernel(zero_store=True)
def square_add_in_place(a: wp.array(dtype=Any), x: wp.array(dtype=Any)):
    """a <- a^2 + x (a is read, then overwritten)."""
    i = wp.tid()
    a[i] = a[i] * a[i] + x[i]


@wp.kernel(zero_store=False)
def square_add_in_place_accumulate(a: wp.array(dtype=Any), x: wp.array(dtype=Any)):
    i = wp.tid()
    a[i] = a[i] * a[i] + x[i]


@wp.kernel
def scale(x: wp.array(dtype=float), s: float, y: wp.array(dtype=float)):
    i = wp.tid()
    y[i] = s * x[i]


@wp.kernel(zero_store=True)
def product(a: wp.array(dtype=Any), b: wp.array(dtype=Any), y: wp.array(dtype=Any)):
    i = wp.tid()
    y[i] = a[i] * b[i]


@wp.kernel(zero_store=True)
def scaled_copy(x: wp.array(dtype=Any), s: Any, y: wp.array(dtype=Any)):
    i = wp.tid()
    y[i] = s * x[i]


@wp.kernel(zero_store=True)
def add_into(t: wp.array(dtype=Any), y: wp.array(dtype=Any)):
    """y <- y + t, in place."""
    i = wp.tid()
    y[i] = y[i] + t[i]


def cube_plus_3x(x: wp.array(dtype=wp.float64), y: wp.array(dtype=wp.float64)):
    """y = x^3 + 3x through a temporary t that a later launch overwrites after y's launch read it."""
    t = wp.zeros_like(x, requires_grad=True)
    wp.launch(product, dim=x.shape, inputs=[x, x, t])  # t = x^2
    wp.launch(product, dim=x.shape, inputs=[t, x, y])  # y = t * x, reads t
    wp.launch(scaled_copy, dim=x.shape, inputs=[x, wp.float64(3.0), t])  # t = 3x, overwrites what y's read
    wp.launch(add_into, dim=x.shape, inputs=[t, y])  # y = y + t


@wp.kernel(zero_store=False)
def double_store_f32(xa: wp.array(dtype=float), xb: wp.array(dtype=float), y: wp.array(dtype=float)):
    """The double store with concrete types, for Warp's own jax_kernel (which takes no generic kernels)."""
    i = wp.tid()
    y[i] = 2.0 * xa[i]
    y[i] = 3.0 * xb[i]


@wp.kernel(zero_store=True)
def positive_part(x: wp.array(dtype=Any), y: wp.array(dtype=Any)):
    """Stores only where x > 0: the op's zero fill gives the other elements (the fill is needed)."""
    i = wp.tid()
    if x[i] > x.dtype(0.0):
        y[i] = x[i] * x[i]


@wp.kernel(zero_store=True)
def accumulate_then_scale(x: wp.array(dtype=Any), y: wp.array(dtype=Any)):
    """Reads its output: y = 3 * (0 + x^2) from the zero-filled y (the backward replays the read of y)."""
    i = wp.tid()
    y[i] = y[i] + x[i] * x[i]
    y[i] = x.dtype(3.0) * y[i]
