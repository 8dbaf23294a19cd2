"""Kernels for tests/test_lints_loop_carried.py: locals assigned in a loop with a run-time bound ``n``, used
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


# -- walking a tree with a `while` loop (Newton's eval_rigid_jacobian): `j = ancestor[j]` ends each iteration, so
# when the iteration's adjoints run, the variable `j` already holds the next index. An adjoint that reads `j`
# itself (an index `x[j]`) is wrong; values the replay computed from `j` before (`d = j + 0`, an index computed
# in an expression) are right, and so is an index into an array of integers (no gradient goes through it).


@wp.kernel(zero_store=True)
def while_walk_bare_index(ancestor: wp.array(dtype=int), x: wp.array(dtype=float), y: wp.array(dtype=float)):
    i = wp.tid()
    j = i
    r = int(0)
    while j != -1:
        s = x[j]
        y[i * 4 + r] = s * s
        r = r + 1
        j = ancestor[j]


@wp.kernel(zero_store=True)
def while_walk_fresh_index(ancestor: wp.array(dtype=int), x: wp.array(dtype=float), y: wp.array(dtype=float)):
    i = wp.tid()
    j = i
    r = int(0)
    while j != -1:
        d = j + 0
        s = x[d]
        y[i * 4 + r] = s * s
        r = r + 1
        j = ancestor[j]


@wp.kernel(zero_store=True)
def for_then_while_walk(ancestor: wp.array(dtype=int), x: wp.array(dtype=float), y: wp.array(dtype=float)):
    # eval_rigid_jacobian's shape: a walk up the tree from each joint, the start offset read from an int array
    i = wp.tid()
    for t in range(ancestor.shape[0] // 4):
        j = i
        while j != -1:
            start = ancestor[j] + 1  # an int array read with the variable itself: no gradient through it
            s = x[start + j - ancestor[j] - 1]
            y[t * 16 + i * 4 + j] = s * s * float(t + 1)
            j = ancestor[j]


# -- wrong in Warp, but not warned: not opted in, or never differentiated


@wp.kernel
def square_after_stock(x: wp.array(dtype=float), n: int, y: wp.array(dtype=float)):
    s = float(0.0)
    for k in range(n):
        s += x[k] * x[k]
    y[0] = s * s
