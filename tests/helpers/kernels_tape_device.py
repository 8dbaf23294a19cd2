"""Kernels for tests/test_tape_device_contents.py: a rollout with in-place updates, a read of one's own write, one
array under two parameters and row views of one buffer."""

import warp_zerostore as wp

f64 = wp.float64


@wp.kernel
def step(x: wp.array(dtype=f64), y: wp.array(dtype=f64)):
    i = wp.tid()
    y[i] = x[i] + f64(0.1) * wp.sin(x[i])


@wp.kernel
def square_in_place(x: wp.array(dtype=f64)):
    i = wp.tid()
    x[i] = x[i] * x[i] * f64(0.5)


@wp.kernel
def read_back(x: wp.array(dtype=f64), y: wp.array(dtype=f64)):
    # one thread: y[0] is read back after this launch wrote it
    y[0] = x[0] * x[0]
    y[1] = y[0] * x[1]


@wp.kernel
def blend_into(a: wp.array(dtype=f64), b: wp.array(dtype=f64)):
    # launched with one array as both: read through one parameter, written through the other
    i = wp.tid()
    b[i] = a[i] * a[i] + f64(1.0)


@wp.kernel
def store_row(x: wp.array(dtype=f64), row: wp.array(dtype=f64)):
    i = wp.tid()
    row[i] = wp.cos(x[i])


@wp.kernel
def sum_squares(rows: wp.array2d(dtype=f64), loss: wp.array(dtype=f64)):
    i, j = wp.tid()
    wp.atomic_add(loss, 0, rows[i, j] * rows[i, j])


@wp.kernel
def fill(x: wp.array(dtype=f64), value: f64):
    x[wp.tid()] = value
