"""warp_zerostore defect, WORSE THAN STOCK, FIXED (program fuzzer; tests/test_fuzz_programs_findings.py): one array passed under two parameters (``xv``
and ``yv``) to a zero_store=True kernel that updates it through one (``yv[i] += yv[i]``) and reads it after through
the other (``xv[i]``), on ``Tape(snapshot=True)``.

Stock Warp is right on every Tape, and so is the flagged kernel on a plain and a check Tape; on the snapshot Tape
the flagged kernel's gradient is off (here [5, 0.5, 8, ...] for [6, 0, 10, ...]), on warp-lang 1.12.1 and 1.19.0.
The snapshot Tape restores the launch's input and runs the kernel's PRE backward (its replay log serves reads after
a store of the same array variable); the read through the other parameter is not a read of the logged variable,
so it reads the restored pre-launch value instead of the updated one. Shrunk from a drawn program
(`augstore yv, readback yv[i], xv = yv (one array)`).
"""

import numpy as np
import warp as wp

import warp_zerostore as wpz

wp.config.quiet = True


@wp.kernel
def stock(xv: wp.array(dtype=wp.vec3d), y: wp.array(dtype=wp.float64), yv: wp.array(dtype=wp.vec3d)):
    i = wp.tid()
    yv[i] += yv[i]
    y[i] += wp.dot(xv[i], yv[i])


@wpz.kernel(zero_store=True)
def flagged(xv: wp.array(dtype=wp.vec3d), y: wp.array(dtype=wp.float64), yv: wp.array(dtype=wp.vec3d)):
    i = wp.tid()
    yv[i] += yv[i]
    y[i] += wp.dot(xv[i], yv[i])


TAPES = {"plain": wp.Tape, "snapshot": lambda: wpz.Tape(snapshot=True), "check": lambda: wpz.Tape(check="warn")}
v0 = np.array([[0.5, -0.25, 1.0], [0.75, 0.5, -1.0]])
expected = 8 * v0 + 2  # y = 4 |v|^2, v_new = 2 v; loss = sum(y) + sum(v_new)
for kernel in (stock, flagged):
    for name, make in TAPES.items():
        v = wp.array(v0, dtype=wp.vec3d, requires_grad=True)
        y = wp.zeros(2, dtype=wp.float64, requires_grad=True)
        tape = make()
        with tape:
            wp.launch(kernel, dim=2, inputs=[v, y, v])  # one array as xv and as yv
        tape.backward(grads={y: wp.ones(2, dtype=wp.float64), v: wp.ones(2, dtype=wp.vec3d)})
        got = v.grad.numpy()
        flag = "" if np.allclose(got, expected) else "   <-- WRONG"
        print(f"warp-lang {wp.config.version} {kernel.key:8s} {name:9s} v.grad {got.ravel()}{flag}")
print(f"expected {expected.ravel()}")
