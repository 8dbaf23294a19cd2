"""Kernels for tests/test_loop_carried_warnings.py: locals assigned in a loop with a run-time bound ``n``, used
in ways whose adjoint reads their value (warned, and wrong in Warp) or does not (silent, and right)."""

import warp_zerostore as wp

wp.set_module_options({"enable_backward": True})


# -- wrong in Warp: warned


@wp.kernel(zero_store=True)
def square_after(x: wp.array(dtype=float), n: int, y: wp.array(dtype=float)):
    s = float(0.0)
    for k in range(n):
        s += x[k] * x[k]
    y[0] = s * s  # line 17: the backward reads s from before the loop


@wp.kernel(zero_store=True)
def product_inside(x: wp.array(dtype=float), n: int, y: wp.array(dtype=float)):
    s = float(1.0)
    for k in range(n):
        s = s * x[k]
    y[0] = s


@wp.kernel(zero_store=True)
def counter_after(x: wp.array(dtype=float), n: int, y: wp.array(dtype=float)):
    c = int(0)
    for _k in range(n):
        c += 1
    y[0] = x[0] * x[1] * float(c)


@wp.kernel(zero_store=True)
def sum_used_inside(x: wp.array(dtype=float), n: int, y: wp.array(dtype=float)):
    s = float(0.0)
    for k in range(n):
        s += x[k]
        y[k] = s * x[k]


@wp.kernel(zero_store=True)
def while_index(x: wp.array(dtype=float), n: int, y: wp.array(dtype=float)):
    s = float(0.0)
    k = int(0)
    while k < n:
        s += x[k] * x[k]
        k += 1
    y[0] = s


@wp.kernel(zero_store=True)
def branch_after(x: wp.array(dtype=float), n: int, y: wp.array(dtype=float)):
    s = float(0.0)
    for k in range(n):
        s += x[k]
    if s > 0.2:
        y[0] = x[0] * x[1]


@wp.struct
class Carried:
    a: float


@wp.kernel(zero_store=True)
def component_after(x: wp.array(dtype=float), n: int, y: wp.array(dtype=float)):
    v = wp.vec3(0.0)
    for k in range(n):
        v[0] += x[k] * x[k]  # a component assigned: the backward reads v from before the loop after it
    y[0] = v[0] * v[0]


@wp.kernel(zero_store=True)
def field_after(x: wp.array(dtype=float), n: int, y: wp.array(dtype=float)):
    s = Carried()
    s.a = 0.0
    for k in range(n):
        s.a = s.a + x[k] * x[k]  # a struct's field assigned (the fuzzer's structs and runtime_loops)
    y[0] = s.a * s.a


# -- right in Warp: not warned


@wp.kernel(zero_store=True)
def component_sum_stored(x: wp.array(dtype=float), n: int, y: wp.array(dtype=float)):
    v = wp.vec3(0.0)
    for k in range(n):
        v[0] += x[k] * x[k]
    y[0] = v[0] + 2.0 * x[1]


@wp.kernel(zero_store=True)
def sum_stored(x: wp.array(dtype=float), n: int, y: wp.array(dtype=float)):
    s = float(0.0)
    for k in range(n):
        s += x[k] * x[k]
    y[0] = s
    y[1] = s * 2.0 + x[0] * x[1]


@wp.kernel(zero_store=True)
def fresh_each_iteration(x: wp.array(dtype=float), n: int, y: wp.array(dtype=float)):
    t = float(0.0)
    for k in range(n):
        t = x[k] * x[k]
        y[k] = t * t


@wp.kernel(zero_store=True)
def while_counter_in_test(x: wp.array(dtype=float), n: int, y: wp.array(dtype=float)):
    s = float(0.0)
    k = int(0)
    while k < n:
        s += x[0] * x[1]
        k += 1
    y[0] = s


@wp.kernel(zero_store=True)
def while_branch_inside(x: wp.array(dtype=float), n: int, y: wp.array(dtype=float)):
    k = int(0)
    while k < n:  # Warp replays a while loop's iterations in forward order: after the body's last assignment of
        k = k + 1  # k, a test on it and an index are right
        if k == 2:
            y[0] += x[k] * x[k]
        else:
            y[0] += 3.0 * x[k]


@wp.kernel(zero_store=True)
def reassigned_after(x: wp.array(dtype=float), n: int, y: wp.array(dtype=float)):
    s = float(0.0)
    for k in range(n):
        s += x[k]
    s = x[3] * 2.0
    y[0] = s * s


@wp.kernel(zero_store=True)
def constant_bound(x: wp.array(dtype=float), n: int, y: wp.array(dtype=float)):
    s = float(0.0)
    for k in range(3):
        s += x[k] * x[k]
    y[0] = s * s


@wp.kernel(zero_store=True)
def constant_bound_with_break(x: wp.array(dtype=float), n: int, y: wp.array(dtype=float)):
    s = float(0.0)
    for k in range(3):  # a constant bound, but Warp does not unroll a loop with a break: dynamic
        s += x[k] * x[k]
        if s > 100.0:
            break
    y[0] = s * s


# -- wrong in Warp, but not warned: not opted in, or never differentiated


@wp.kernel
def square_after_stock(x: wp.array(dtype=float), n: int, y: wp.array(dtype=float)):
    s = float(0.0)
    for k in range(n):
        s += x[k] * x[k]
    y[0] = s * s
