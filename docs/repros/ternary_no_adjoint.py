"""Fuzzer finding (Warp 1.12.1, stock): a ternary `a if c else b` whose side is an array element is wrong.

Measured per release (scripts/probe_warp_versions.py): on 1.9.1 and 1.10.1 the ternary is its second side, value
and gradient, in every thread, whichever side the thread chose; on 1.11.0-1.16.0 the value is right and the
gradient through the chosen side is zero; from 1.17.0 it is right. `wp.where(c, a, b)` is right everywhere, and so
is a `zero_store=True` kernel through warp_zerostore (it gets 1.17's code). Thread 0 takes its first side (x[0] = 20
> 10), thread 1 its second (x[0] again). Expected by hand: y = [20, 20], d(sum(c_y * y))/dx = [4, 0] (c_y = [1, 3]).
"""

import numpy as np
import warp as wp


@wp.kernel
def ternary(x: wp.array(dtype=float), y: wp.array(dtype=float)):
    i = wp.tid()
    y[i] += x[i] if x[i] > 10.0 else x[(i + 1) % 2]


@wp.kernel
def where(x: wp.array(dtype=float), y: wp.array(dtype=float)):
    i = wp.tid()
    y[i] += wp.where(x[i] > 10.0, x[i], x[(i + 1) % 2])  # the same through wp.where


for kernel in (ternary, where):
    x = wp.array([20.0, 2.0], dtype=float, requires_grad=True)
    y = wp.zeros(2, dtype=float, requires_grad=True)
    tape = wp.Tape()
    with tape:
        wp.launch(kernel, dim=2, inputs=[x, y])
    tape.backward(grads={y: wp.array([1.0, 3.0], dtype=float)})
    right = np.allclose(y.numpy(), [20.0, 20.0]) and np.allclose(x.grad.numpy(), [4.0, 0.0])
    flag = "" if right else "   <-- WRONG"
    print(f"{kernel.key}: y {y.numpy()} x.grad {x.grad.numpy()}  expected y [20. 20.] x.grad [4. 0.]{flag}")
