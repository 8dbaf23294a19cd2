"""Kernels for the read twin's reuse of marks (tests/test_read_twin_memo.py): which elements the first three
read and write follow from the launch alone; the last two follow the data."""

import warp_zerostore as wp


@wp.kernel
def copy_where_scalar(x: wp.array(dtype=float), k: int, y: wp.array(dtype=float)):
    i = wp.tid()
    if i == k:
        y[i] = x[i]


@wp.kernel
def read_one(x: wp.array(dtype=float), k: int, y: wp.array(dtype=float)):
    y[0] = x[k]


@wp.kernel
def write_one(x: wp.array(dtype=float), j: int):
    x[j] = 5.0


@wp.kernel
def copy_where_positive(x: wp.array(dtype=float), y: wp.array(dtype=float)):
    i = wp.tid()
    if x[i] > 0.0:
        y[i] = x[i]


@wp.kernel
def copy_where_vector(x: wp.array(dtype=float), v: wp.vec3, y: wp.array(dtype=float)):
    i = wp.tid()
    if float(i) < v[0]:
        y[i] = x[i]
