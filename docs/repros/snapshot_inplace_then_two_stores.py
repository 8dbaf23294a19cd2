"""Fuzzer finding (issue 19, feature arrays2d): a bug of this package, not of Warp.

A flagged kernel (``zero_store=True``) on ``Tape(snapshot=True)`` gets a wrong gradient, without any warning,
when a thread updates an element in place (``y[i] += ...``: it reads the value from before the launch), reads
it back after its own store, and stores over it twice or more. Any one of those alone is right (store / read /
store, ``+=`` / read / store, store / read / store / store). Stock Warp 1.19 is right on a plain Tape for the
other-element form; the 1-D ``y[i]`` form is the stock read-then-overwrite bug there. First seen on the 2-D output
``ym`` (``ym[i, 1] += x; for k in range(2): ym[i, 0] = ym[i, 1] / cosh(xt[i, 0, 1])``); the same in 1-D, below.
Wrong on warp-lang 1.9.1, 1.12.1 and 1.19.0; ``Tape(check="warn")`` reports nothing.

Expected values: central differences of the kernel's own forward (float64).
"""

import numpy as np

import warp_zerostore as wp


@wp.kernel(zero_store=True)
def same_element(x: wp.array(dtype=wp.float64), y: wp.array(dtype=wp.float64)):
    i = wp.tid()
    y[i] += x[i]
    y[i] = y[i] * x[i]
    y[i] = y[i] * x[i]


@wp.kernel(zero_store=True)
def other_element(x: wp.array(dtype=wp.float64), y: wp.array(dtype=wp.float64)):
    i = wp.tid()
    y[2 * i + 1] += x[i]
    y[2 * i] = y[2 * i + 1] * x[i]
    y[2 * i] = y[2 * i + 1] * x[i]


@wp.kernel(zero_store=True)
def two_d(x: wp.array(dtype=wp.float64), ym: wp.array2d(dtype=wp.float64)):
    i = wp.tid()
    ym[i, 1] += x[i]
    for k in range(2):
        ym[i, 0] = ym[i, 1] * x[i]


x0 = np.array([0.5, -0.25])
cases = (
    (same_element, np.array([0.25, -0.5]), np.ones(2)),
    (other_element, np.array([0.25, -0.5, 0.75, 1.0]), np.array([1.0, 0.0, 1.0, 0.0])),
    (two_d, np.array([[0.25, -0.5], [0.75, 1.0]]), np.array([[1.0, 0.0], [1.0, 0.0]])),
)
for kernel, y0, seed in cases:

    def loss(xs):
        x, y = wp.array(xs, dtype=wp.float64), wp.array(y0, dtype=wp.float64)
        wp.launch(kernel, dim=2, inputs=[x, y])
        return float(np.sum(seed * y.numpy()))

    right = np.array([(loss(x0 + 1e-6 * e) - loss(x0 - 1e-6 * e)) / 2e-6 for e in np.eye(2)])
    x = wp.array(x0, dtype=wp.float64, requires_grad=True)
    y = wp.array(y0, dtype=wp.float64, requires_grad=True)
    tape = wp.Tape(snapshot=True)
    with tape:
        wp.launch(kernel, dim=2, inputs=[x, y])
    tape.backward(grads={y: wp.array(seed, dtype=wp.float64)})
    got = x.grad.numpy()
    flag = "" if np.allclose(got, right, rtol=1e-6, atol=1e-6) else "   <-- WRONG"
    print(f"{kernel.key}: x.grad warp {got}  expected {right}{flag}")
