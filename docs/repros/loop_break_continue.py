"""Fuzzer finding (stock Warp and zero_store alike): the adjoint of a loop with `break` or `continue` is wrong.

Warp does not unroll such a loop; its backward replays each iteration's forward code, the jump included, so a
jump skips the adjoints of the statements before it in that iteration; and a `for` loop's backward runs every
iteration of its range in reverse, those after a `break` too, stopping at the first (in reverse) that breaks.
A `continue` first in its iteration is right. Expected: d(sum y)/dx by hand (y starts at 0, n = 3).
Checked on Warp 1.9.1, 1.10.1, 1.12.1 and 1.19.0.
"""

import numpy as np
import warp as wp


@wp.kernel
def continue_after_store(x: wp.array(dtype=float), y: wp.array(dtype=float), n: int):
    i = wp.tid()
    for k in range(n):
        y[i] += x[i] * x[i]
        if k == 1:
            continue  # y = 3 x^2: expected 6 x


@wp.kernel
def while_break_after_store(x: wp.array(dtype=float), y: wp.array(dtype=float), n: int):
    i = wp.tid()
    w = int(0)
    while w < n:
        w = w + 1
        y[i] += x[i] * x[i]
        if w == 1:
            break  # y = x^2: expected 2 x


@wp.kernel
def for_break_first(x: wp.array(dtype=float), y: wp.array(dtype=float), n: int):
    i = wp.tid()
    for k in range(n):
        if k == 2:
            break  # y = 2 x^2: expected 4 x
        y[i] += x[i] * x[i]


@wp.kernel
def continue_first(x: wp.array(dtype=float), y: wp.array(dtype=float), n: int):
    i = wp.tid()
    for k in range(n):
        if k == 0:
            continue  # y = 2 x^2: expected 4 x (right)
        y[i] += x[i] * x[i]


for kernel, factor in (
    (continue_after_store, 6),
    (while_break_after_store, 2),
    (for_break_first, 4),
    (continue_first, 4),
):
    x = wp.array([0.5, -0.7, 1.1], dtype=float, requires_grad=True)
    y = wp.zeros(3, dtype=float, requires_grad=True)
    tape = wp.Tape()
    with tape:
        wp.launch(kernel, dim=3, inputs=[x, y, 3])
    tape.backward(grads={y: wp.ones(3, dtype=float)})
    expected = factor * x.numpy()
    flag = "" if np.allclose(x.grad.numpy(), expected, rtol=1e-5) else "   <-- WRONG"
    print(f"{kernel.key}: x.grad warp {x.grad.numpy()}  expected {expected}{flag}")
