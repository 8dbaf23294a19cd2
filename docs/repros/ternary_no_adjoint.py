"""Fuzzer finding (Warp 1.12.1, stock and zero_store alike): a ternary `a if c else b` has no adjoint.

The gradient through the chosen side is dropped (zero); `wp.where(c, a, b)` is right. Right on 1.9.1, 1.10.1
and 1.19.0. Expected: d(sum(c_y * y))/dx by hand, c_y = [1, 3].
"""

import numpy as np
import warp as wp


@wp.kernel
def ternary(x: wp.array(dtype=float), y: wp.array(dtype=float)):
    i = wp.tid()
    y[i] += x[i] if x[i] > 10.0 else x[(i + 1) % 2]  # y[i] += x[other]: expected x.grad = [3, 1]


@wp.kernel
def where(x: wp.array(dtype=float), y: wp.array(dtype=float)):
    i = wp.tid()
    y[i] += wp.where(x[i] > 10.0, x[i], x[(i + 1) % 2])  # the same through wp.where


for kernel in (ternary, where):
    x = wp.array([1.0, 2.0], dtype=float, requires_grad=True)
    y = wp.zeros(2, dtype=float, requires_grad=True)
    tape = wp.Tape()
    with tape:
        wp.launch(kernel, dim=2, inputs=[x, y])
    tape.backward(grads={y: wp.array([1.0, 3.0], dtype=float)})
    flag = "" if np.allclose(x.grad.numpy(), [3.0, 1.0]) else "   <-- WRONG"
    print(f"{kernel.key}: x.grad warp {x.grad.numpy()}  expected [3. 1.]{flag}")
