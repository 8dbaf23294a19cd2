"""Fuzzer finding (stock and zero_store=True, build error): a `@wp.func` with a custom `@wp.func_grad`, called
from another `@wp.func`. A valid kernel; Warp 1.9.1 does not build it: the caller's adjoint calls the custom
adjoint before the generated C++ declares it (`use of undeclared identifier 'adj_h0_0'`). Warp 1.10.1, 1.12.1
and 1.19.0 build it, and its gradient is right. Found by the fuzzer's `func_grad` + `nested_helpers` campaign
(seed 19); shrunk by hand.
"""

import numpy as np
import warp as wp


@wp.func
def h0(p0: wp.float64):
    return wp.sin(p0)


@wp.func_grad(h0)
def adj_h0(p0: wp.float64, adj_ret: wp.float64):
    wp.adjoint[p0] += wp.cos(p0) * adj_ret


@wp.func
def h1(p0: wp.float64):
    return h0(p0)  # calling h0 from the kernel instead builds on 1.9.1 too


@wp.kernel
def fuzzed(x: wp.array(dtype=wp.float64), y: wp.array(dtype=wp.float64)):
    i = wp.tid()
    y[i] = h1(x[i])


try:
    wp.load_module(device="cpu")
except Exception as error:  # 1.9.1: CPU kernel build failed (the undeclared adj_h0_0)
    print("build error:", str(error).splitlines()[-1])
else:
    x = wp.array(np.array([0.5, -0.25]), dtype=wp.float64, requires_grad=True)
    y = wp.zeros(2, dtype=wp.float64, requires_grad=True)
    tape = wp.Tape()
    with tape:
        wp.launch(fuzzed, dim=2, inputs=[x, y])
    tape.backward(grads={y: wp.array(np.ones(2), dtype=wp.float64)})
    print("built; x.grad", x.grad.numpy(), "expected cos(x)", np.cos(x.numpy()))
