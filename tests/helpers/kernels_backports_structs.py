"""A value assigned to a field of a struct local, in a kernel and in a helper that returns the struct
(tests/test_backports.py): each flagged, with its unflagged twin in the same module."""

import warp_zerostore as wp


@wp.struct
class S:
    a: float


@wp.func
def make(p: float):
    r = S()
    r.a = p * p
    return r


@wp.kernel(zero_store=True)
def field(x: wp.array(dtype=float), y: wp.array(dtype=float)):
    i = wp.tid()
    s = S()
    s.a = x[i]
    y[i] = s.a * s.a


@wp.kernel
def field_stock(x: wp.array(dtype=float), y: wp.array(dtype=float)):
    i = wp.tid()
    s = S()
    s.a = x[i]
    y[i] = s.a * s.a


@wp.kernel(zero_store=True)
def returned(x: wp.array(dtype=float), y: wp.array(dtype=float)):
    i = wp.tid()
    y[i] = make(x[i]).a


@wp.kernel
def returned_stock(x: wp.array(dtype=float), y: wp.array(dtype=float)):
    i = wp.tid()
    y[i] = make(x[i]).a
