"""Kernels that update an input in place, for tests/test_torch_in_place.py (one module: one build)."""

import warp_zerostore as wp


@wp.kernel
def step(y: wp.array(dtype=wp.float64), x: wp.array(dtype=wp.float64), out: wp.array(dtype=wp.float64)):
    i = wp.tid()
    y[i] += x[i]
    out[i] = y[i] * y[i]


@wp.kernel(zero_store=True)
def step_flagged(y: wp.array(dtype=wp.float64), x: wp.array(dtype=wp.float64), out: wp.array(dtype=wp.float64)):
    i = wp.tid()
    y[i] += x[i]
    out[i] = y[i] * y[i]


@wp.kernel(zero_store=True)
def square_in_place_flagged(y: wp.array(dtype=wp.float64), out: wp.array(dtype=wp.float64)):
    # a read before the update: exact only where the backward sees the value from before the op
    i = wp.tid()
    y[i] = y[i] * y[i]
    out[i] = y[i] + wp.float64(1.0)


@wp.kernel
def writes_outputs_only(x: wp.array(dtype=wp.float64), out: wp.array(dtype=wp.float64)):
    i = wp.tid()
    out[i] = x[i] * x[i]


@wp.func
def _poke(a: wp.array(dtype=wp.float64), i: int):
    a[i] = wp.float64(0.0)


@wp.kernel
def writes_through_a_helper(x: wp.array(dtype=wp.float64), out: wp.array(dtype=wp.float64)):
    i = wp.tid()
    out[i] = x[i]
    _poke(x, i)


@wp.kernel
def may_write(x: wp.array2d(dtype=wp.float64), out: wp.array(dtype=wp.float64)):
    i = wp.tid()
    row = x[i]
    out[i] = wp.float64(0.0) * out[i]
    wp.atomic_max(row, 0, wp.float64(0.0))
