"""Warp's Tape replays each recorded launch's backward against memory as it is at ``backward()``: three shapes of
launch sequences the program fuzzer (issue 31) draws, wrong on a plain ``wp.Tape()`` on every warp-lang version.

1. Stale read across launches: launch 1 reads ``x`` (``y = x * x``), launch 2 overwrites ``x`` (``x = sin(y)``);
   launch 1's backward reads the new ``x``. Expected d(sum x + sum y)/dx0 = cos(y) 2 x0 + 2 x0.
2. A write the Tape does not record changes what a launch read: ``y = x * x``, then ``x.fill_(2.0)`` (inside the
   Tape, or after it, before ``backward()``); the backward reads x = 2. Expected d(sum y)/dx = 2 x.
3. A write the Tape does not record overwrites what a launch wrote: ``y = x * x``, then ``y.zero_()`` (or a launch
   of an ``enable_backward=False`` kernel storing into ``y``); the backward still sends y's seed through the
   first launch. Expected d(sum y)/dx = 0 (y's final value is 0).

These are Warp's documented semantics (only launches and copies are recorded, and replayed against current
memory), not bugs; warp_zerostore's ``Tape(check="warn")`` names shapes 1 and 2 (stale read, mutation after
record) and ``Tape(snapshot=True)`` makes shape 1 right and refuses shape 2 by name. Shape 3 with ``fill_``,
``zero_`` or ``assign`` is reported by neither (a gap: the check Tape compares arrays only where a launch read
them); with an ``enable_backward=False`` kernel the check Tape reports an overwrite.
"""

import numpy as np
import warp as wp

wp.config.quiet = True


@wp.kernel
def square(x: wp.array(dtype=float), y: wp.array(dtype=float)):
    i = wp.tid()
    y[i] = x[i] * x[i]


@wp.kernel
def sine(y: wp.array(dtype=float), x: wp.array(dtype=float)):
    i = wp.tid()
    x[i] = wp.sin(y[i])


x0 = np.array([0.5, -1.0], dtype=np.float32)


def report(title, got, want):
    flag = "" if np.allclose(got, want, rtol=1e-5) else "   <-- WRONG"
    print(f"warp-lang {wp.config.version} {title}: x.grad {got} expected {np.asarray(want, dtype=np.float32)}{flag}")


x = wp.array(x0, dtype=float, requires_grad=True)
y = wp.zeros(2, dtype=float, requires_grad=True)
tape = wp.Tape()
with tape:
    wp.launch(square, dim=2, inputs=[x, y])
    wp.launch(sine, dim=2, inputs=[y, x])
tape.backward(grads={x: wp.ones(2, dtype=float), y: wp.ones(2, dtype=float)})
report("1 stale read across launches", x.grad.numpy(), np.cos(x0 * x0) * 2 * x0 + 2 * x0)

x = wp.array(x0, dtype=float, requires_grad=True)
y = wp.zeros(2, dtype=float, requires_grad=True)
tape = wp.Tape()
with tape:
    wp.launch(square, dim=2, inputs=[x, y])
    x.fill_(2.0)
tape.backward(grads={y: wp.ones(2, dtype=float)})
report("2 untaped write over a read   ", x.grad.numpy(), 2 * x0)

x = wp.array(x0, dtype=float, requires_grad=True)
y = wp.zeros(2, dtype=float, requires_grad=True)
tape = wp.Tape()
with tape:
    wp.launch(square, dim=2, inputs=[x, y])
    y.zero_()
tape.backward(grads={y: wp.ones(2, dtype=float)})
report("3 untaped write over a write  ", x.grad.numpy(), np.zeros(2))
