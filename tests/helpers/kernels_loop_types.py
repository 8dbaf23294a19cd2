"""Kernels for tests/test_lint_types.py: locals around a loop with a run-time bound, typed from the source."""

import warp_zerostore as wp


@wp.func
def next_index(k: int, n: int):
    return wp.min(k + 1, n - 1)


@wp.kernel(zero_store=True)
def integer_into_a_helper(x: wp.array(dtype=float), n: int, y: wp.array(dtype=float)):
    # `k` (an int) is carried around the loop; its wrong value enters only a helper returning an int: no gradient
    k = int(0)
    s = float(0.0)
    for _j in range(n):
        k = next_index(k, n)
        s += x[0]
    y[0] = s


@wp.kernel(zero_store=True)
def float_local_read_by_a_backward(x: wp.array(dtype=float), n: int, y: wp.array(dtype=float)):
    # the negative twin: `s` (a float) carried around the same loop, then in a product: warned
    k = int(0)
    s = float(1.0)
    for _j in range(n):
        k = next_index(k, n)
        s = s * x[0]
    y[0] = s * x[1]


@wp.kernel(zero_store=True)
def integer_as_an_index(x: wp.array(dtype=float), n: int, y: wp.array(dtype=float)):
    # an int whose wrong value chooses the element: warned
    k = int(0)
    for _j in range(n):
        k = next_index(k, n)
    y[0] = x[k] * x[k]


STATIC_ONE = 1


@wp.kernel(zero_store=True)
def dead_static_branch(x: wp.array(dtype=float), n: int, y: wp.array(dtype=float)):
    s = float(0.0)
    for j in range(n):
        s += x[j]
    if wp.static(STATIC_ONE == 1):
        y[0] = s
    else:
        y[0] = s * s  # never built: not linted


@wp.kernel(zero_store=True)
def never_differentiated(x: wp.array(dtype=float), n: int, y: wp.array(dtype=float)):
    s = float(1.0)
    for _j in range(n):
        s = s * x[0]
    y[0] = s * s


@wp.kernel(zero_store=True)
def while_reassigned_then_indexed(x: wp.array(dtype=float), n: int, y: wp.array(dtype=float)):
    # `k` is carried, but the body reads it only after assigning it: the backward reads that value (right)
    k = int(0)
    t = int(0)
    s = float(0.0)
    while t < n:
        k = k + 1
        s += x[k] * x[k]
        k = k * 1
        t += 1
    y[0] = s


@wp.kernel(zero_store=True)
def while_indexed_then_reassigned(x: wp.array(dtype=float), n: int, y: wp.array(dtype=float)):
    # the negative twin: `k` read as an index before the body assigns it (the carried variable): wrong, warned
    k = int(1)
    t = int(0)
    s = float(0.0)
    while t < n:
        s += x[k] * x[k]
        k = k + 1
        t += 1
    y[0] = s
