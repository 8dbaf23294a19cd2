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


# A force buffer summed in place, as simulators write it (the buffer is reset by `gravity` at every step, so each
# step's readers of `f` are stale on a plain Tape): `contact_force` reads `f` linearly, `contact_scale` does not.
# Flagged, so that their overwrites of `f` are safe on every Warp (stock store adjoints accumulate up to 1.12).


@wp.kernel(zero_store=True)
def gravity(f: wp.array(dtype=f64), step: f64):
    f[wp.tid()] = f64(-9.8) * step


@wp.kernel(zero_store=True)
def contact_force(x: wp.array(dtype=f64), f: wp.array(dtype=f64)):
    i = wp.tid()
    c = wp.min(x[i] - wp.float64(1.0), wp.float64(0.0))
    f[i] = f[i] - wp.float64(10.0) * c * c


@wp.kernel(zero_store=True)
def contact_scale(x: wp.array(dtype=f64), f: wp.array(dtype=f64)):
    i = wp.tid()
    c = wp.min(x[i] - wp.float64(1.0), wp.float64(0.0))
    f[i] = f[i] * (wp.float64(1.0) + c * c)


@wp.kernel
def integrate(
    x: wp.array(dtype=f64),
    v: wp.array(dtype=f64),
    f: wp.array(dtype=f64),
    x_out: wp.array(dtype=f64),
    v_out: wp.array(dtype=f64),
):
    i = wp.tid()
    v_out[i] = v[i] + f[i] * wp.float64(0.01)
    x_out[i] = x[i] + v_out[i] * wp.float64(0.01)


@wp.kernel
def square_sum(x: wp.array(dtype=f64), loss: wp.array(dtype=f64)):
    wp.atomic_add(loss, 0, x[wp.tid()] * x[wp.tid()])
