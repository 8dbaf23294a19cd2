"""Readers whose stale values change the gradient (a square) or do not on the data used (a ``wp.min`` whose branch
does not flip), an in-place writer, and the explicit-Euler step of docs/tape-safety.md."""

import warp_zerostore as wp


@wp.kernel
def square(x: wp.array(dtype=float), y: wp.array(dtype=float)):
    i = wp.tid()
    y[i] = x[i] * x[i]


@wp.kernel
def capped_double(x: wp.array(dtype=float), y: wp.array(dtype=float)):
    i = wp.tid()
    y[i] = wp.min(x[i], 10.0) * 2.0  # the branch does not flip while x stays below 10


@wp.kernel
def bump(x: wp.array(dtype=float)):
    i = wp.tid()
    x[i] = x[i] + 1.0


@wp.kernel
def scale_by(x: wp.array(dtype=float), s: wp.array(dtype=float), y: wp.array(dtype=float)):
    i = wp.tid()
    y[i] = x[i] * s[0]


@wp.kernel(zero_store=True)
def velocity(x: wp.array(dtype=float), v: wp.array(dtype=float)):
    i = wp.tid()
    v[i] = v[i] - x[i] * x[i] * x[i] * 0.5


@wp.kernel(zero_store=True)
def position(x: wp.array(dtype=float), v: wp.array(dtype=float)):
    i = wp.tid()
    x[i] = x[i] + v[i] * 0.5


@wp.kernel
def energy(x: wp.array(dtype=float), loss: wp.array(dtype=float)):
    wp.atomic_add(loss, 0, x[wp.tid()] * x[wp.tid()])


@wp.kernel(zero_store=False)
def overwrite_accumulating(x: wp.array(dtype=float), y: wp.array(dtype=float)):
    i = wp.tid()
    y[i] = 3.0 * x[i]


@wp.kernel
def double(x: wp.array(dtype=float), y: wp.array(dtype=float)):
    i = wp.tid()
    y[i] = 2.0 * x[i]  # linear: the values read never reach a gradient
