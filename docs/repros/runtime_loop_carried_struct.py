"""Fuzzer finding (every supported Warp, stock and zero_store alike): a struct local reassigned in a loop with a
run-time bound, whole (`s = make(...)`, a @wp.func returning the struct) or one field (`s.a = ...`), then read by
an adjoint that needs its value after the loop: the backward reads the struct from before the loop.

As runtime-loop-carried-local (docs/known-issues.md) with a struct: `y[i] = s.a * x[i]` after
`for k in range(n): s = make(2.0)` gets the gradient 0.25 on 1.19.0 (the value of `s.a` before the loop), not 2;
0 on 1.9.1. A `while` loop is the same; a constant-bound loop (unrolled) is right on both. The gradient needs the
field's value only, not its adjoint, so this is not struct-field-assign-no-adjoint (Warp <= 1.12). Expected:
central differences of the forward launches, c_y = 1.
"""

import numpy as np
import warp as wp


@wp.struct
class S:
    a: float


@wp.func
def make(p: float):
    r = S()
    r.a = p
    return r


@wp.kernel
def whole_in_runtime_loop(x: wp.array(dtype=float), y: wp.array(dtype=float), n: int):
    i = wp.tid()
    s = S()
    s.a = 0.25
    for _k in range(n):
        s = make(2.0)
    y[i] = s.a * x[i]


@wp.kernel
def field_in_runtime_loop(x: wp.array(dtype=float), y: wp.array(dtype=float), n: int):
    i = wp.tid()
    s = S()
    s.a = 0.25
    for _k in range(n):
        s.a = 2.0
    y[i] = s.a * x[i]


@wp.kernel
def whole_in_while_loop(x: wp.array(dtype=float), y: wp.array(dtype=float), n: int):
    i = wp.tid()
    s = S()
    s.a = 0.25
    w = int(0)
    while w < n:
        w = w + 1
        s = make(2.0)
    y[i] = s.a * x[i]


@wp.kernel
def whole_in_constant_loop(x: wp.array(dtype=float), y: wp.array(dtype=float), n: int):
    i = wp.tid()
    s = S()
    s.a = 0.25
    for _k in range(2):  # unrolled: right
        s = make(2.0)
    y[i] = s.a * x[i]


X = np.array([0.5, -0.25, 0.75, 1.0])


def forward(kernel, values):
    x = wp.array(values, dtype=float, requires_grad=True)
    y = wp.zeros(len(values), dtype=float, requires_grad=True)
    tape = wp.Tape()
    with tape:
        wp.launch(kernel, dim=len(values), inputs=[x, y, 2])
    return x, y, tape


for kernel in (whole_in_runtime_loop, field_in_runtime_loop, whole_in_while_loop, whole_in_constant_loop):
    x, y, tape = forward(kernel, X)
    tape.backward(grads={y: wp.ones(len(X), dtype=float)})
    h = 1e-3  # y[i] depends on x[i] only: one central difference per element
    fd = (forward(kernel, X + h)[1].numpy() - forward(kernel, X - h)[1].numpy()) / (2 * h)
    flag = "" if np.allclose(x.grad.numpy(), fd, rtol=1e-3, atol=1e-3) else "   <-- WRONG"
    print(f"{kernel.key}: x.grad warp {x.grad.numpy()}  central differences {fd}{flag}")
