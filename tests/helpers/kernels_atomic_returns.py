"""Kernels for tests/test_lints_atomic_returns.py: atomics whose returned value is used (in a kernel's body, in a
helper, in a helper's helper) beside discarded ones, and a helper that assigns a component after a whole use."""

import warp_zerostore as wp

wp.set_module_options({"enable_backward": True})


@wp.func
def claim(cursor: wp.array(dtype=int)):
    return wp.atomic_add(cursor, 0, 1)


@wp.func
def claim_twice_removed(cursor: wp.array(dtype=int)):
    return claim(cursor) + 0


@wp.func
def count(cursor: wp.array(dtype=int)):
    wp.atomic_add(cursor, 0, 1)
    return 0


@wp.kernel(zero_store=True)
def pack_in_body(x: wp.array(dtype=float), cursor: wp.array(dtype=int), packed: wp.array(dtype=float)):
    i = wp.tid()
    slot = wp.atomic_add(cursor, 0, 1)
    packed[slot] = x[i] * x[i]


@wp.kernel(zero_store=True)
def pack_through_helper(x: wp.array(dtype=float), cursor: wp.array(dtype=int), packed: wp.array(dtype=float)):
    i = wp.tid()
    slot = claim_twice_removed(cursor)
    packed[slot] = x[i] * x[i]


@wp.kernel(zero_store=True)
def count_only(x: wp.array(dtype=float), cursor: wp.array(dtype=int), packed: wp.array(dtype=float)):
    i = wp.tid()
    wp.atomic_add(cursor, 0, 1)
    packed[i] = x[i] * x[i] + float(count(cursor))


@wp.kernel
def pack_in_body_stock(x: wp.array(dtype=float), cursor: wp.array(dtype=int), packed: wp.array(dtype=float)):
    i = wp.tid()
    slot = wp.atomic_add(cursor, 0, 1)
    packed[slot] = x[i] * x[i]


@wp.func
def dot_then_assign(a: float):
    v = wp.vec3(a, 2.0 * a, 1.0)
    d = wp.dot(v, v)
    v[1] = 3.0
    return d + v[1] * a


@wp.func
def assign_then_dot(a: float):
    v = wp.vec3(a, 0.0, 1.0)
    v[1] = 2.0 * a  # over a constant: Warp's assignment passes the component's adjoint on to nothing
    return wp.dot(v, v)


@wp.kernel(zero_store=True)
def helper_assigns_after_use(x: wp.array(dtype=float), y: wp.array(dtype=float)):
    i = wp.tid()
    y[i] = dot_then_assign(x[i])


@wp.kernel(zero_store=True)
def helper_assigns_before_use(x: wp.array(dtype=float), y: wp.array(dtype=float)):
    i = wp.tid()
    y[i] = assign_then_dot(x[i])
