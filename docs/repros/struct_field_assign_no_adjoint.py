"""Fuzzer finding (stock Warp 1.9.1 to 1.14.0): a value assigned to a field of a struct local has no adjoint.

`s = S(); s.a = x[i]; y[i] = s.a * s.a` gets a zero gradient (read directly, or through a `@wp.func` that takes
the struct); the same through a plain local is right. Right on stock 1.15.0 and later, and flagged
(`zero_store=True`) on every version: a flagged kernel's field store is given the adjoint Warp 1.15 gives it
(warp_zerostore/codegen/local_copies.py). Expected: central differences of the forward launches (2 x[i] here),
c_y = 1.
"""

import numpy as np
import warp as wp

import warp_zerostore as wpz


@wp.struct
class S:
    a: float


@wp.func
def field(s: S):
    return s.a


@wp.kernel
def struct_field(x: wp.array(dtype=float), y: wp.array(dtype=float)):
    i = wp.tid()
    s = S()
    s.a = x[i]
    y[i] = s.a * s.a


@wp.kernel
def struct_through_func(x: wp.array(dtype=float), y: wp.array(dtype=float)):
    i = wp.tid()
    s = S()
    s.a = x[i]
    y[i] = field(s) * field(s)


@wpz.kernel(zero_store=True)
def struct_field_flagged(x: wp.array(dtype=float), y: wp.array(dtype=float)):
    i = wp.tid()
    s = S()
    s.a = x[i]
    y[i] = s.a * s.a


@wp.kernel
def plain_local(x: wp.array(dtype=float), y: wp.array(dtype=float)):
    i = wp.tid()
    a = x[i]
    y[i] = a * a


X = np.array([0.5, -0.25, 0.75, 1.0])


def forward(kernel, values):
    x = wp.array(values, dtype=float, requires_grad=True)
    y = wp.zeros(len(values), dtype=float, requires_grad=True)
    tape = wp.Tape()
    with tape:
        wp.launch(kernel, dim=len(values), inputs=[x, y])
    return x, y, tape


for kernel in (struct_field, struct_through_func, struct_field_flagged, plain_local):
    x, y, tape = forward(kernel, X)
    tape.backward(grads={y: wp.ones(len(X), dtype=float)})
    h = 1e-3  # y[i] depends on x[i] only: one central difference per element
    fd = (forward(kernel, X + h)[1].numpy() - forward(kernel, X - h)[1].numpy()) / (2 * h)
    flag = "" if np.allclose(x.grad.numpy(), fd, rtol=1e-3, atol=1e-3) else "   <-- WRONG"
    print(f"{kernel.key}: x.grad warp {x.grad.numpy()}  central differences {fd}{flag}")
