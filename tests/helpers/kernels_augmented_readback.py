"""Kernels for tests/test_tape_snapshot_augmented_readback.py: an in-place update ``y[k] += v`` of an array the kernel
reads back (a flagged kernel's backward replays it through its replay log, which loads ``y[k]``)."""

import warp_zerostore as wp


@wp.kernel(zero_store=True)
def other_store(x: wp.array(dtype=wp.float64), y: wp.array(dtype=wp.float64), z: wp.array(dtype=wp.float64)):
    i = wp.tid()
    y[2 * i + 1] += x[i]
    y[2 * i] = x[i]
    z[i] = y[2 * i + 1] * x[i]


@wp.kernel(zero_store=True)
def same_element(x: wp.array(dtype=wp.float64), y: wp.array(dtype=wp.float64), z: wp.array(dtype=wp.float64)):
    i = wp.tid()
    y[2 * i] += x[i]
    y[2 * i] = y[2 * i] * x[i]
    y[2 * i] = y[2 * i] * x[i]
    z[i] = y[2 * i]


@wp.func
def bump(y: wp.array(dtype=wp.float64), k: int, v: wp.float64):
    y[k] += v


@wp.kernel(zero_store=True)
def in_helper(x: wp.array(dtype=wp.float64), y: wp.array(dtype=wp.float64), z: wp.array(dtype=wp.float64)):
    i = wp.tid()
    bump(y, 2 * i + 1, x[i])
    y[2 * i] = x[i]
    z[i] = y[2 * i + 1] * x[i]


@wp.kernel
def other_store_stock(x: wp.array(dtype=wp.float64), y: wp.array(dtype=wp.float64), z: wp.array(dtype=wp.float64)):
    i = wp.tid()
    y[2 * i + 1] += x[i]
    y[2 * i] = x[i]
    z[i] = y[2 * i + 1] * x[i]


@wp.kernel(zero_store=True)
def no_read_back(x: wp.array(dtype=wp.float64), y: wp.array(dtype=wp.float64), z: wp.array(dtype=wp.float64)):
    i = wp.tid()
    y[2 * i + 1] += x[i]
    y[2 * i] = x[i]
    z[i] = x[i] * x[i]
