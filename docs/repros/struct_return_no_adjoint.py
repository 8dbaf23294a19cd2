"""Fuzzer finding (Warp 1.9.1; 1.10.1 and 1.12.1 by struct-field-assign-no-adjoint's cause; stock and zero_store
alike): a @wp.func that builds a struct field by field and returns it gives no gradient through its fields.

`h(p) = S(); r.a = p * p; return r`, then `y[i] = h(x[i]).a` (a field of the call) or `s = h(x[i]); y[i] = s.a`
gets a zero gradient: inside the helper the field assignment has no adjoint, as in a kernel on Warp <= 1.12
(struct-field-assign-no-adjoint). The same value returned as a scalar is right, and 1.19.0 is right. Expected:
central differences of the forward launches (2 x[i] here), c_y = 1.
"""

import numpy as np
import warp as wp


@wp.struct
class S:
    a: float


@wp.func
def make(p: float):
    r = S()
    r.a = p * p
    return r


@wp.func
def square(p: float):
    return p * p


@wp.kernel
def field_of_call(x: wp.array(dtype=float), y: wp.array(dtype=float)):
    i = wp.tid()
    y[i] = make(x[i]).a


@wp.kernel
def assigned_then_read(x: wp.array(dtype=float), y: wp.array(dtype=float)):
    i = wp.tid()
    s = make(x[i])
    y[i] = s.a


@wp.kernel
def scalar_helper(x: wp.array(dtype=float), y: wp.array(dtype=float)):
    i = wp.tid()
    y[i] = square(x[i])


X = np.array([0.5, -0.25, 0.75, 1.0])


def forward(kernel, values):
    x = wp.array(values, dtype=float, requires_grad=True)
    y = wp.zeros(len(values), dtype=float, requires_grad=True)
    tape = wp.Tape()
    with tape:
        wp.launch(kernel, dim=len(values), inputs=[x, y])
    return x, y, tape


for kernel in (field_of_call, assigned_then_read, scalar_helper):
    x, y, tape = forward(kernel, X)
    tape.backward(grads={y: wp.ones(len(X), dtype=float)})
    h = 1e-3  # y[i] depends on x[i] only: one central difference per element
    fd = (forward(kernel, X + h)[1].numpy() - forward(kernel, X - h)[1].numpy()) / (2 * h)
    flag = "" if np.allclose(x.grad.numpy(), fd, rtol=1e-3, atol=1e-3) else "   <-- WRONG"
    print(f"{kernel.key}: x.grad warp {x.grad.numpy()}  central differences {fd}{flag}")
