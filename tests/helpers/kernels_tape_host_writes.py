"""Kernels of tests/test_tape_host_writes.py: a substep loop that resets a contact counter, and a buffer written
through a copy window."""

import warp_zerostore as wp

f64 = wp.float64


@wp.kernel
def collide(x: wp.array(dtype=f64), counter: wp.array(dtype=f64)):
    # a penalty summed into a counter (an accumulation: no read of the counter)
    i = wp.tid()
    c = wp.min(x[i] - f64(1.0), f64(0.0))
    wp.atomic_add(counter, 0, c * c)


@wp.kernel
def respond(x: wp.array(dtype=f64), counter: wp.array(dtype=f64), x_out: wp.array(dtype=f64)):
    # the counter's value is read (a product): its backward needs the value this substep summed
    i = wp.tid()
    x_out[i] = x[i] - f64(0.5) * counter[0] * x[i]


@wp.kernel
def square_sum(x: wp.array(dtype=f64), loss: wp.array(dtype=f64)):
    wp.atomic_add(loss, 0, x[wp.tid()] * x[wp.tid()])


@wp.kernel
def square_into(x: wp.array(dtype=f64), y: wp.array(dtype=f64)):
    i = wp.tid()
    y[i] = x[i] * x[i]


@wp.kernel
def cube_sum(y: wp.array(dtype=f64), loss: wp.array(dtype=f64)):
    wp.atomic_add(loss, 0, y[wp.tid()] * y[wp.tid()] * y[wp.tid()])
