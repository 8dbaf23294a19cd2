"""Fuzzer finding (stock and zero_store=True, build error, Warp 1.9.1, 1.10.1, 1.12.1 and 1.19.0): a `@wp.func`
with a `@wp.func_replay`, whose name an earlier `@wp.func` of the process had (a notebook cell run again, another
module with a helper of that name). The kernel's backward replay calls `replay_<forward's native name>`
(`replay_h_1`: the second `h` of the process), but the replay function is numbered by its own name's count
(`replay_h_0`), so the generated C++ does not compile (`use of undeclared identifier 'replay_h_1'`). Found by the
fuzzer's `func_replay` campaign (its batches reuse helper names); shrunk by hand. The fuzzer now gives each
helper with a replay a name never used before.
"""

import numpy as np
import warp as wp


@wp.func
def h(p0: float):  # an earlier function named h: delete it and the module builds, its gradient right
    return p0


@wp.func
def h(p0: float):  # noqa: F811  (the name reused: the point of the repro)
    return p0 * p0


@wp.func_replay(h)
def replay_h(p0: float):
    return p0 * p0


@wp.kernel
def fuzzed(x: wp.array(dtype=float), y: wp.array(dtype=float)):
    i = wp.tid()
    y[i] = h(x[i])


try:
    wp.load_module(device="cpu")
except Exception as error:  # every supported Warp: CPU kernel build failed (the undeclared replay_h_1)
    print("build error:", str(error).splitlines()[-1])
else:
    x = wp.array(np.array([0.5, -0.25]), dtype=float, requires_grad=True)
    y = wp.zeros(2, dtype=float, requires_grad=True)
    tape = wp.Tape()
    with tape:
        wp.launch(fuzzed, dim=2, inputs=[x, y])
    tape.backward(grads={y: wp.ones(2, dtype=float)})
    print("built; x.grad", x.grad.numpy(), "expected 2x", 2 * x.numpy())
