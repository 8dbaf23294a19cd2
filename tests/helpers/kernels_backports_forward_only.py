"""A module built with ``enable_backward=False`` whose kernels opt back in (tests/test_backports.py): its helper's
adjoint is generated for the flagged kernel on every Warp; the unflagged one keeps Warp's (none up to 1.17)."""

import warp_zerostore as wp

wp.set_module_options({"enable_backward": False})


@wp.func
def square(p: float):
    return p * p


@wp.func
def same(p: float):
    return square(p) / p


@wp.kernel(enable_backward=True, zero_store=True)
def flagged(x: wp.array(dtype=float), y: wp.array(dtype=float)):
    i = wp.tid()
    y[i] = x[i] * same(x[i])


@wp.kernel(enable_backward=True)
def unflagged(x: wp.array(dtype=float), y: wp.array(dtype=float)):
    i = wp.tid()
    y[i] = x[i] * same(x[i])


@wp.kernel
def forward_only(x: wp.array(dtype=float), y: wp.array(dtype=float)):
    i = wp.tid()
    y[i] = same(x[i])
