"""A reader recorded on a Tape, and an in-place kernel that changes its input after record."""

import warp_zerostore as wp


@wp.kernel
def square(x: wp.array(dtype=float), y: wp.array(dtype=float)):
    i = wp.tid()
    y[i] = x[i] * x[i]


@wp.kernel
def bump(x: wp.array(dtype=float)):
    i = wp.tid()
    x[i] = x[i] + 1.0
