"""Kernels of tests/test_tape_snapshot_mutations.py (one module: built once)."""

import warp_zerostore as wp


@wp.kernel(zero_store=True)
def add_square(x: wp.array(dtype=wp.float64), y: wp.array(dtype=wp.float64)):
    i = wp.tid()
    y[i] += x[i] * x[i]


@wp.kernel(zero_store=True)
def add(x: wp.array(dtype=wp.float64), y: wp.array(dtype=wp.float64)):
    i = wp.tid()
    y[i] += x[i]


@wp.kernel(zero_store=True)  # its store adjoint zeroes on every Warp (stock <= 1.12 double counts an in-place update)
def scale_in_place(f: wp.array(dtype=wp.float64), s: wp.float64):
    i = wp.tid()
    f[i] = f[i] * s


@wp.kernel
def cube_into(f: wp.array(dtype=wp.float64), out: wp.array(dtype=wp.float64)):
    i = wp.tid()
    out[i] = f[i] * f[i] * f[i]


@wp.kernel
def square_into(x: wp.array(dtype=wp.float64), f: wp.array(dtype=wp.float64)):
    i = wp.tid()
    f[i] = x[i] * x[i]


@wp.kernel
def set_to(x: wp.array(dtype=wp.float64), v: wp.float64):
    x[wp.tid()] = v
