"""Readers of ``x`` whose backward reads the values loaded (nonlinear) or not (linear), for test_value_use.py."""

import warp_zerostore as wp

f64 = wp.float64


@wp.kernel
def linear_reader(x: wp.array(dtype=f64), v: wp.array(dtype=f64), y: wp.array(dtype=f64)):
    i = wp.tid()
    a = wp.float64(2.0) * x[i] - v[i]
    unused = wp.sin(x[i]) * x[i]  # dead: its adjoint gets zero  # noqa: F841
    y[i] = a + wp.float64(1.0)


@wp.kernel
def nonlinear_reader(x: wp.array(dtype=f64), v: wp.array(dtype=f64), y: wp.array(dtype=f64)):
    i = wp.tid()
    a = x[i] + v[i]
    y[i] = a * a


@wp.kernel(zero_store=True)
def forwarded_reader(x: wp.array(dtype=f64), v: wp.array(dtype=f64), y: wp.array(dtype=f64)):
    # x enters y linearly, but y is loaded back and squared: the replay forwards the stored x[i] + v[i] there
    i = wp.tid()
    y[i] = x[i] + v[i]
    y[i] = y[i] * y[i]


@wp.kernel
def overwrite(x: wp.array(dtype=f64)):
    i = wp.tid()
    x[i] = f64(5.0)
