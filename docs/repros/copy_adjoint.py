"""Warp's adjoint of ``wp.copy`` on a Tape: two upstream bugs the program fuzzer (issue 31) meets in stock programs.

1. Windows (warp-lang 1.9.1 to 1.14.0; right from 1.15.0): ``wp.copy(d, s, dest_offset=1, src_offset=2, count=2)``
   sends ``d.grad[1:3]`` to ``s.grad[1:3]`` instead of ``s.grad[2:4]`` (the two offsets swapped): here
   s.grad = [0, 30, 40, 0] for [0, 0, 20, 30].
2. Overwrite (warp-lang 1.9.1 to 1.16.0; right from 1.17.0): the adjoint writes ``d.grad`` over ``s.grad``
   instead of adding it, losing what later readers of ``s`` put there, and keeps ``d.grad`` (the overwritten
   window's gradient flows on to d's earlier writer): ``t = copy(s); y = s * s`` gives s.grad = 1 for 1 + 2 s.

warp_zerostore's copy adjoint (``wp.copy_zero_store(True)``, as the program fuzzer records its flagged programs'
copies) is right on every version.
"""

import warp as wp

wp.config.quiet = True


@wp.kernel
def square(x: wp.array(dtype=float), y: wp.array(dtype=float)):
    i = wp.tid()
    y[i] = x[i] * x[i]


s = wp.array([1.0, 2.0, 3.0, 4.0], dtype=float, requires_grad=True)
d = wp.zeros(4, dtype=float, requires_grad=True)
tape = wp.Tape()
with tape:
    wp.copy(d, s, dest_offset=1, src_offset=2, count=2)
tape.backward(grads={d: wp.array([10.0, 20.0, 30.0, 40.0], dtype=float)})
wrong = "" if list(s.grad.numpy()) == [0.0, 0.0, 20.0, 30.0] else "   <-- WRONG"
print(f"warp-lang {wp.config.version} window:    s.grad {s.grad.numpy()} expected [ 0.  0. 20. 30.]{wrong}")

s = wp.array([1.0, 2.0], dtype=float, requires_grad=True)
t = wp.zeros(2, dtype=float, requires_grad=True)
y = wp.zeros(2, dtype=float, requires_grad=True)
tape = wp.Tape()
with tape:
    wp.copy(t, s)
    wp.launch(square, dim=2, inputs=[s, y])
tape.backward(grads={t: wp.ones(2, dtype=float), y: wp.ones(2, dtype=float)})
wrong = "" if list(s.grad.numpy()) == [3.0, 5.0] else "   <-- WRONG"
print(f"warp-lang {wp.config.version} overwrite: s.grad {s.grad.numpy()} expected [3. 5.]{wrong}")
