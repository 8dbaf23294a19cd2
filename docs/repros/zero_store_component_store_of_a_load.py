"""warp_zerostore defect, FIXED (found by the program fuzzer; tests/test_store_forms.py): on warp-lang <= 1.13, a
zero_store=True kernel that stores an array load straight into a vector component, ``yv[i].z = y[i]``, gave ``y``
no gradient, on every Tape.

Through a local (``a = y[i]; yv[i].z = a``), an expression (``y[i] * 2.0``) or ``+=`` it is right; on 1.14 and
later it is right. Stock Warp <= 1.13 has no gradient for any component store (its documented limit, which the
flag is meant to lift). Shrunk from a drawn program (`readback y[i], store yv.c` on Tape(snapshot=True)).
Expected: y.grad = [3, 6] (the z component of yv's seed).
"""

import warp as wp

import warp_zerostore as wpz

wp.config.quiet = True


@wpz.kernel(zero_store=True)
def store_load(y: wp.array(dtype=wp.float64), yv: wp.array(dtype=wp.vec3d)):
    i = wp.tid()
    yv[i].z = y[i]


@wpz.kernel(zero_store=True)
def store_local(y: wp.array(dtype=wp.float64), yv: wp.array(dtype=wp.vec3d)):
    i = wp.tid()
    a = y[i]
    yv[i].z = a


for kernel in (store_load, store_local):
    for name, tape in (("plain", wp.Tape()), ("snapshot", wpz.Tape(snapshot=True))):
        y = wp.array([0.5, 0.25], dtype=wp.float64, requires_grad=True)
        yv = wp.zeros(2, dtype=wp.vec3d, requires_grad=True)
        with tape:
            wp.launch(kernel, dim=2, inputs=[y, yv])
        tape.backward(grads={yv: wp.array([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]], dtype=wp.vec3d)})
        flag = "" if list(y.grad.numpy()) == [3.0, 6.0] else "   <-- WRONG"
        print(
            f"warp-lang {wp.config.version} {kernel.key:12s} {name:9s} y.grad {y.grad.numpy()} expected [3. 6.]{flag}"
        )
