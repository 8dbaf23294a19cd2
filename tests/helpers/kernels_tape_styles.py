"""Kernels for tests/test_tape_styles.py: other simulators' styles (one array as input and output, stores through
a row view, readers that read nothing or are built without backward, stores of the value already there)."""

import warp_zerostore as wp

f64 = wp.float64


@wp.kernel
def add_row(x_in: wp.array2d(dtype=f64), v: wp.array2d(dtype=f64), x_out: wp.array2d(dtype=f64)):
    w, j = wp.tid()
    row = x_out[w]  # a row view: its store writes x_out
    row[j] = x_in[w, j] + v[w, j]


@wp.kernel
def add_row_direct(x_in: wp.array2d(dtype=f64), v: wp.array2d(dtype=f64), x_out: wp.array2d(dtype=f64)):
    w, j = wp.tid()
    x_out[w, j] = x_in[w, j] + v[w, j]


@wp.kernel
def accumulate_row(x: wp.array2d(dtype=f64), v: wp.array2d(dtype=f64)):
    w, j = wp.tid()
    row = x[w]
    row[j] += v[w, j]


@wp.kernel
def atomic_into_row(x: wp.array2d(dtype=f64), v: wp.array2d(dtype=f64)):
    w, j = wp.tid()
    wp.atomic_add(x[w], j, v[w, j])


@wp.func
def put(r: wp.array(dtype=f64), j: int, value: f64):
    r[j] = value


@wp.kernel
def store_row_through_helper(x: wp.array2d(dtype=f64), v: wp.array2d(dtype=f64)):
    w, j = wp.tid()
    row = x[w]
    put(row, j, v[w, j])


@wp.kernel
def read_row(x: wp.array2d(dtype=f64), out: wp.array2d(dtype=f64)):
    w, j = wp.tid()
    row = x[w]
    out[w, j] = row[j] * row[j]


@wp.kernel(zero_store=True)
def square_inout(x_in: wp.array(dtype=f64), x_out: wp.array(dtype=f64)):
    i = wp.tid()
    x_out[i] = x_in[i] * x_in[i]


@wp.kernel
def square_into(x: wp.array(dtype=f64), y: wp.array(dtype=f64)):
    i = wp.tid()
    y[i] = x[i] * x[i]


@wp.kernel
def sum_into(x: wp.array(dtype=f64), y: wp.array(dtype=f64), loss: wp.array(dtype=f64)):
    i = wp.tid()
    wp.atomic_add(loss, 0, x[i] + y[i])


@wp.kernel
def guarded_copy(flag: int, x: wp.array(dtype=f64), y: wp.array(dtype=f64)):
    i = wp.tid()
    if flag != 0:
        y[i] = x[i] * x[i]  # nonlinear: the backward reads x[i]


@wp.kernel(enable_backward=False)
def square_into_no_backward(x: wp.array(dtype=f64), y: wp.array(dtype=f64)):
    i = wp.tid()
    y[i] = x[i] * x[i]


@wp.kernel(zero_store=True)
def fill(a: wp.array(dtype=f64), value: f64):
    a[wp.tid()] = value


@wp.kernel(zero_store=True)
def fill_from(a: wp.array(dtype=f64), start: int, value: f64):
    a[start + wp.tid()] = value


@wp.kernel
def add_zero(a: wp.array(dtype=f64), value: f64):
    wp.atomic_add(a, wp.tid(), value)
