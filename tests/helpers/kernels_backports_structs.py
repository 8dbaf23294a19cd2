"""Values assigned to fields of struct locals: ``s.a = e``, ``s.a += e``, a nested ``o.inner.a = e``, and in a helper
that returns the struct (tests/test_backports.py): each flagged, with its unflagged twin in the same module."""

import warp_zerostore as wp


@wp.struct
class S:
    a: float


@wp.struct
class Outer:
    inner: S
    b: float


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
def updated(x: wp.array(dtype=float), y: wp.array(dtype=float)):
    i = wp.tid()
    s = S()
    s.a = 0.0
    s.a += x[i]
    y[i] = s.a * s.a


@wp.kernel
def updated_stock(x: wp.array(dtype=float), y: wp.array(dtype=float)):
    i = wp.tid()
    s = S()
    s.a = 0.0
    s.a += x[i]
    y[i] = s.a * s.a


@wp.kernel(zero_store=True)
def nested(x: wp.array(dtype=float), y: wp.array(dtype=float)):
    i = wp.tid()
    o = Outer()
    o.inner.a = x[i]
    y[i] = o.inner.a * o.inner.a


@wp.kernel
def nested_stock(x: wp.array(dtype=float), y: wp.array(dtype=float)):
    i = wp.tid()
    o = Outer()
    o.inner.a = x[i]
    y[i] = o.inner.a * o.inner.a


@wp.kernel(zero_store=True)
def returned(x: wp.array(dtype=float), y: wp.array(dtype=float)):
    i = wp.tid()
    y[i] = make(x[i]).a


@wp.kernel
def returned_stock(x: wp.array(dtype=float), y: wp.array(dtype=float)):
    i = wp.tid()
    y[i] = make(x[i]).a
