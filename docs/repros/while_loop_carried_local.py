"""Fuzzer finding (stock Warp and zero_store alike): a local carried through a `while` loop, used nonlinearly.

Like a run-time-bound `for` loop (runtime_loop_carried_local.py): Warp's backward of the loop does not restore
the value each iteration saw. Expected: d(sum y)/dx by hand (n = 2). Checked on Warp 1.9.1, 1.10.1, 1.12.1, 1.19.0.
"""

import numpy as np
import warp as wp


@wp.kernel
def product(x: wp.array(dtype=float), y: wp.array(dtype=float), n: int):
    i = wp.tid()
    s = float(1.0)
    w = int(0)
    while w < n:
        w = w + 1
        s = s * x[i]
    y[i] = s  # x^2: expected 2 x


@wp.kernel
def sum_then_square(x: wp.array(dtype=float), y: wp.array(dtype=float), n: int):
    i = wp.tid()
    s = float(0.0)
    w = int(0)
    while w < n:
        w = w + 1
        s += x[i] * x[i]
    y[i] = s * s  # 4 x^4: expected 16 x^3


@wp.kernel
def sum_only(x: wp.array(dtype=float), y: wp.array(dtype=float), n: int):
    i = wp.tid()
    s = float(0.0)
    w = int(0)
    while w < n:
        w = w + 1
        s += x[i] * x[i]
    y[i] = s  # 2 x^2: expected 4 x (right: no adjoint reads s)


for kernel, want in ((product, lambda x: 2 * x), (sum_then_square, lambda x: 16 * x**3), (sum_only, lambda x: 4 * x)):
    x = wp.array([0.5, -0.7, 1.1], dtype=float, requires_grad=True)
    y = wp.zeros(3, dtype=float, requires_grad=True)
    tape = wp.Tape()
    with tape:
        wp.launch(kernel, dim=3, inputs=[x, y, 2])
    tape.backward(grads={y: wp.ones(3, dtype=float)})
    expected = want(x.numpy())
    flag = "" if np.allclose(x.grad.numpy(), expected, rtol=1e-5) else "   <-- WRONG"
    print(f"{kernel.key}: x.grad warp {x.grad.numpy()}  expected {expected}{flag}")
