"""Fuzzer finding (stock Warp, every version; right with zero_store=True): a field of a struct local assigned after
the struct was passed whole to a `@wp.func` (a field read before the assignment is right).

`s.a = x[i]; y[i] = h(s); s.a = 1.0` with `h(s) = s.a * s.a`: Warp keeps the struct in one C++ variable that the
later assignment overwrites in place, and its backward pass replays the whole forward body first, so the use's
adjoint reads the final value (1.0) instead of x[i]. As component-update-after-use, on a struct field. (On stock
1.9.1 to 1.14.0 the field's gradient is zero anyway: struct-field-assign-no-adjoint.) A flagged kernel copies the
struct before the assignment (warp_zerostore/codegen/local_copies.py): right on every version. Expected: central
differences of the forward launches (2 x[i] here), c_y = 1.
"""

import numpy as np
import warp as wp

import warp_zerostore as wpz


@wp.struct
class S:
    a: float


@wp.func
def square(s: S):
    return s.a * s.a


@wp.kernel
def through_func_then_assign(x: wp.array(dtype=float), y: wp.array(dtype=float)):
    i = wp.tid()
    s = S()
    s.a = x[i]
    y[i] = square(s)
    s.a = 1.0  # after the use: the use's adjoint reads 1.0


@wpz.kernel(zero_store=True)
def through_func_then_assign_flagged(x: wp.array(dtype=float), y: wp.array(dtype=float)):
    i = wp.tid()
    s = S()
    s.a = x[i]
    y[i] = square(s)
    s.a = 1.0  # flagged: the assignment is made on a copy of s


@wp.kernel
def field_read_then_assign(x: wp.array(dtype=float), y: wp.array(dtype=float)):
    i = wp.tid()
    s = S()
    s.a = x[i]
    y[i] = s.a * s.a
    s.a = 1.0


@wp.kernel
def through_func(x: wp.array(dtype=float), y: wp.array(dtype=float)):
    i = wp.tid()
    s = S()
    s.a = x[i]
    y[i] = square(s)  # no assignment after the use: right on 1.19.0


X = np.array([0.5, -0.25, 0.75, 1.5])


def forward(kernel, values):
    x = wp.array(values, dtype=float, requires_grad=True)
    y = wp.zeros(len(values), dtype=float, requires_grad=True)
    tape = wp.Tape()
    with tape:
        wp.launch(kernel, dim=len(values), inputs=[x, y])
    return x, y, tape


for kernel in (through_func_then_assign, through_func_then_assign_flagged, field_read_then_assign, through_func):
    x, y, tape = forward(kernel, X)
    tape.backward(grads={y: wp.ones(len(X), dtype=float)})
    h = 1e-3  # y[i] depends on x[i] only: one central difference per element
    fd = (forward(kernel, X + h)[1].numpy() - forward(kernel, X - h)[1].numpy()) / (2 * h)
    flag = "" if np.allclose(x.grad.numpy(), fd, rtol=1e-3, atol=1e-3) else "   <-- WRONG"
    print(f"{kernel.key}: x.grad warp {x.grad.numpy()}  central differences {fd}{flag}")
