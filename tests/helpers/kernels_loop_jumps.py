"""Kernels for tests/test_lints_adjoint_bugs.py: a ``break``/``continue`` after other statements of its iteration
(Warp's backward skips their adjoints), and the twins that stay right."""

import warp_zerostore as wp

wp.set_module_options({"enable_backward": True})


@wp.kernel(zero_store=True)
def break_after_store(x: wp.array(dtype=float), y: wp.array(dtype=float), n: int):
    i = wp.tid()
    for _k in range(n):
        y[i] = x[i] * x[i]
        if x[i] < 2.0:
            break  # line 15: the backward replays iteration n-1 first, which breaks before any adjoint


@wp.kernel(zero_store=True)
def continue_after_update(x: wp.array(dtype=float), y: wp.array(dtype=float), n: int):
    i = wp.tid()
    w = int(0)
    while w < n:
        w = w + 1
        y[i] += x[i] * x[i]
        if i >= 0:
            continue


@wp.kernel(zero_store=True)
def for_break_first(x: wp.array(dtype=float), y: wp.array(dtype=float), n: int):
    i = wp.tid()
    for k in range(n):
        if k == 2:
            break  # first in its iteration, but the backward of iteration 2 (never run) breaks the reverse loop
        y[i] += x[i] * x[i]


@wp.kernel(zero_store=True)
def continue_first(x: wp.array(dtype=float), y: wp.array(dtype=float), n: int):
    i = wp.tid()
    for k in range(n):
        if k == 0:
            continue
        y[i] += x[i] * x[i]


@wp.kernel(zero_store=True)
def break_after_counter(x: wp.array(dtype=float), y: wp.array(dtype=float), n: int):
    i = wp.tid()
    w = int(0)
    while w < n:
        w = w + 1
        if w == 2:
            break
        y[i] += x[i] * x[i]


@wp.kernel
def break_after_store_stock(x: wp.array(dtype=float), y: wp.array(dtype=float), n: int):
    i = wp.tid()
    for _k in range(n):
        y[i] = x[i] * x[i]
        if x[i] < 2.0:
            break
