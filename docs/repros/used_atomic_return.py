"""Used atomic return (stock Warp, every version; zero_store=True alike, warned): a kernel packs values through a
slot an atomic counter hands out, `slot = wp.atomic_add(cursor, 0, 1); packed[slot] = x[i] * x[i]`.

Warp's backward pass replays the kernel's forward body without its atomics, so there `slot` is not the value the
forward got (0: every thread's adjoint reads packed.grad[0]). Through a `@wp.func` that claims the slot, stock
Warp runs the helper's forward code in the backward, so `cursor` advances a second time during `backward()` and
the slots differ again; a flagged kernel's replay writes no memory there but returns the element's value after the
forward (4; `packed` has room for it). A flagged kernel gets a wp.AdjointWarning at the line (warp_zerostore/lints/
atomic_returns.py); no store mode makes it exact: the backward needs the forward's returned values, which no
argument of the launch holds (docs/known-issues.md). Warp's remedy is a @wp.func_replay that reads them back from
an array the forward wrote. Expected: d(sum packed)/dx = 2x = [2, 4, 6, 8].
"""

import warnings

import numpy as np
import warp as wp

import warp_zerostore as wpz


@wp.func
def claim(cursor: wp.array(dtype=int)):
    return wp.atomic_add(cursor, 0, 1)


def body(x: wp.array(dtype=float), cursor: wp.array(dtype=int), packed: wp.array(dtype=float)):
    i = wp.tid()
    slot = wp.atomic_add(cursor, 0, 1)
    packed[slot] = x[i] * x[i]


def through_helper(x: wp.array(dtype=float), cursor: wp.array(dtype=int), packed: wp.array(dtype=float)):
    i = wp.tid()
    slot = claim(cursor)
    packed[slot] = x[i] * x[i]


KERNELS = {
    "body (stock)": wp.kernel(body),
    "body (zero_store=True)": wpz.kernel(body, zero_store=True, module="unique"),
    "helper (stock)": wp.kernel(through_helper),
    "helper (zero_store=True)": wpz.kernel(through_helper, zero_store=True, module="unique"),
}
X = np.array([1.0, 2.0, 3.0, 4.0])

warnings.simplefilter("ignore", wpz.AdjointWarning)  # the repro prints the gradients; the warning names the line
for name, kernel in KERNELS.items():
    x = wp.array(X, dtype=float, requires_grad=True)
    cursor = wp.zeros(1, dtype=int)
    packed = wp.zeros(8, dtype=float, requires_grad=True)  # room for the slots a second claim hands out
    tape = wp.Tape()
    with tape:
        wp.launch(kernel, dim=4, inputs=[x, cursor, packed])
    after_forward = int(cursor.numpy()[0])
    tape.backward(grads={packed: wp.array([1.0] * 4 + [0.0] * 4, dtype=float)})  # d(sum of the 4 packed)
    got = x.grad.numpy()
    flag = "" if np.allclose(got, 2 * X) else "   <-- WRONG"
    print(f"{name}: x.grad {got}  expected {2 * X}{flag}; cursor {after_forward} -> {int(cursor.numpy()[0])}")
