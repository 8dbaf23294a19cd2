"""Fuzzer finding (issue 19, features arrays2d/static): a bug of this package, not of Warp; fixed (every line
prints no WRONG now; before the fix, all but ``one_store`` did).

A flagged kernel (``zero_store=True``) on ``Tape(snapshot=True)`` gets a wrong gradient, without any warning,
when a thread updates an element in place (``y[k] += ...``: it reads the value from before the launch), reads it
back after that store, and the kernel stores into the same array once more anywhere (another element, or the same
one again). With the in-place update as the array's only store it is right (``one_store`` below), and so are
store / read / store and ``+=`` / read / store on one element. Stock Warp 1.19 is right on a plain Tape for the
other-element forms (the same-element form is stock's known read-then-overwrite bug). First seen on the 2-D output
``ym`` (``ym[i, 1] += x; for k in range(2): ym[i, 0] = ym[i, 1] / cosh(xt[i, 0, 1])``); 1-D forms below. Wrong on
warp-lang 1.9.1, 1.12.1 and 1.19.0; ``Tape(check="warn")`` reported nothing. The cause: the backward replays the
in-place update through the kernel's replay log, which loads the element, but the read twin did not count the
update as a read, so the snapshot restored the launch's output there (docs/known-issues.md).

Expected values: central differences of the kernel's own forward (float64).
"""

import numpy as np

import warp_zerostore as wp


@wp.kernel(zero_store=True)
def other_store(x: wp.array(dtype=wp.float64), y: wp.array(dtype=wp.float64), z: wp.array(dtype=wp.float64)):
    i = wp.tid()
    y[2 * i + 1] += x[i]
    y[2 * i] = x[i]  # without this store: right
    z[i] = y[2 * i + 1] * x[i]


@wp.kernel(zero_store=True)
def one_store(x: wp.array(dtype=wp.float64), y: wp.array(dtype=wp.float64), z: wp.array(dtype=wp.float64)):
    i = wp.tid()
    y[2 * i + 1] += x[i]
    z[i] = y[2 * i + 1] * x[i]


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
y4 = np.array([0.25, -0.5, 0.75, 1.0])
cases = (
    (other_store, y4, None),
    (one_store, y4, None),
    (same_element, np.array([0.25, -0.5]), np.ones(2)),
    (other_element, np.array([0.25, -0.5, 0.75, 1.0]), np.array([1.0, 0.0, 1.0, 0.0])),
    (two_d, np.array([[0.25, -0.5], [0.75, 1.0]]), np.array([[1.0, 0.0], [1.0, 0.0]])),
)
for kernel, y0, seed in cases:
    extra = [] if seed is not None else [wp.zeros(2, dtype=wp.float64, requires_grad=True)]  # z: the output

    def loss(xs):
        x, y, z = wp.array(xs, dtype=wp.float64), wp.array(y0, dtype=wp.float64), wp.zeros(2, dtype=wp.float64)
        wp.launch(kernel, dim=2, inputs=[x, y] + ([z] if extra else []))
        return float(np.sum(z.numpy()) if extra else np.sum(seed * y.numpy()))

    right = np.array([(loss(x0 + 1e-6 * e) - loss(x0 - 1e-6 * e)) / 2e-6 for e in np.eye(2)])
    x = wp.array(x0, dtype=wp.float64, requires_grad=True)
    y = wp.array(y0, dtype=wp.float64, requires_grad=True)
    tape = wp.Tape(snapshot=True)
    with tape:
        wp.launch(kernel, dim=2, inputs=[x, y] + extra)
    out, cot = (extra[0], np.ones(2)) if extra else (y, seed)
    tape.backward(grads={out: wp.array(cot, dtype=wp.float64)})
    got = x.grad.numpy()
    flag = "" if np.allclose(got, right, rtol=1e-6, atol=1e-6) else "   <-- WRONG"
    print(f"{kernel.key}: x.grad warp {got}  expected {right}{flag}")
