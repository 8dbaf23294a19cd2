"""A module whose kernels have different modes and share a helper (tests/test_backports.py): the flagged kernel
calls a variant of the helper of its own, the unflagged one Warp's."""

import warp_zerostore as wp


@wp.func
def pick(x: wp.array(dtype=float), i: int):
    return x[i] if x[i] > 0.0 else x[(i + 1) % 4]


@wp.kernel(zero_store=True)
def flagged(x: wp.array(dtype=float), y: wp.array(dtype=float)):
    i = wp.tid()
    y[i] = pick(x, i) * x[i]


@wp.kernel
def unflagged(x: wp.array(dtype=float), y: wp.array(dtype=float)):
    i = wp.tid()
    y[i] = pick(x, i) * x[i]
