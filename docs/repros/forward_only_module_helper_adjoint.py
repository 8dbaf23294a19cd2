"""Warp up to 1.17: a ``@wp.func`` helper of a module built with ``enable_backward=False`` has no adjoint, even for
a kernel of that module that opts back in with ``@wp.kernel(enable_backward=True)``.

Found by warp_zerostore's program fuzzer (a module's ``enable_backward=False`` with one kernel opting back in).
Measured on warp-lang 1.9.1 to 1.19.0: wrong on 1.9.1-1.17.0 (the helper's share of the gradient is lost, on a
plain Tape and on any other), right on 1.18.0 and 1.19.0.

The kernel computes ``y = x * h(x)`` with ``h(p) = p``, so ``dy/dx = 2 x``; the gradient Warp gives is ``x`` (only
the product's own term) where the helper's adjoint is missing.
"""

import numpy as np
import warp as wp

wp.set_module_options({"enable_backward": False})


@wp.func
def same(p: float):
    return p


@wp.kernel(enable_backward=True)
def times_helper(x: wp.array(dtype=float), y: wp.array(dtype=float)):
    i = wp.tid()
    y[i] = x[i] * same(x[i])


x0 = np.array([0.5, -0.75, 1.25, 2.0], dtype=np.float32)
x = wp.array(x0, dtype=float, requires_grad=True)
y = wp.zeros(4, dtype=float, requires_grad=True)
tape = wp.Tape()
with tape:
    wp.launch(times_helper, dim=4, inputs=[x, y])
tape.backward(grads={y: wp.ones(4, dtype=float)})
print("warp", wp.config.version)
print("x.grad  ", x.grad.numpy())
print("expected", 2 * x0, "" if np.allclose(x.grad.numpy(), 2 * x0) else "   <-- WRONG")
