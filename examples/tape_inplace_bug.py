"""An in-place update under a Tape, written with plain ``import warp``: its gradient is silently wrong.

``python -m warp_zerostore check examples/tape_inplace_bug.py`` names the bug: ``relu_in_place`` overwrites
``x`` after ``energy`` read it, and its own backward re-reads ``x`` too (stale reads). The true gradient of
sum(x**2) + sum(relu(x)**2) is [4, -4, 12]; this prints [6, 0, 18].
"""

import warp as wp

wp.config.quiet = True


@wp.kernel
def energy(x: wp.array(dtype=float), loss: wp.array(dtype=float)):
    i = wp.tid()
    wp.atomic_add(loss, 0, x[i] * x[i])


@wp.kernel
def relu_in_place(x: wp.array(dtype=float)):
    i = wp.tid()
    x[i] = wp.max(x[i], 0.0)


x = wp.array([1.0, -2.0, 3.0], dtype=float, requires_grad=True)
loss = wp.zeros(1, dtype=float, requires_grad=True)
tape = wp.Tape()
with tape:
    wp.launch(energy, dim=3, inputs=[x, loss])
    wp.launch(relu_in_place, dim=3, inputs=[x])
    wp.launch(energy, dim=3, inputs=[x, loss])
tape.backward(loss)
print("gradient:", x.grad.numpy())
