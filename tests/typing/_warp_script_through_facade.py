"""A plain Warp script (``import warp as wp``). tests/typing/check_types.py type-checks it as it is and with the
import changed to ``import warp_zerostore as wp``: the facade must give no more errors than Warp itself."""

import numpy as np
import warp_zerostore as wp

wp.config.verify_fp = False
wp.init()


@wp.func
def damp(v: wp.vec3, k: float):
    return v * (1.0 - k)


@wp.kernel
def integrate(x: wp.array(dtype=wp.vec3), v: wp.array(dtype=wp.vec3), dt: float):
    i = wp.tid()
    v[i] = damp(v[i], 0.1)
    x[i] = x[i] + v[i] * dt + wp.vec3(0.0, wp.sin(dt), 0.0)


device = wp.get_device("cpu")
x = wp.zeros(8, dtype=wp.vec3, device=device, requires_grad=True)
v = wp.array(np.ones((8, 3)), dtype=wp.vec3, device=device, requires_grad=True)
with wp.ScopedTimer("step", print=False):
    tape = wp.Tape()
    with tape:
        wp.launch(integrate, dim=8, inputs=[x, v, 0.01], device=device)
    tape.backward(grads={x: wp.ones(8, dtype=wp.vec3, device=device)})
wp.synchronize_device(device)
print(x.numpy(), v.grad.numpy(), wp.types.type_size_in_bytes(wp.vec3))
tape.zero()
