"""A user's script, type-checked by mypy and pyright in `make lint` (tests/typing/check_types.py): through
``warp_zerostore`` it must be clean. Not collected by pytest (no test_ prefix)."""

import numpy as np

import warp_zerostore as wp
from warp_zerostore.checkpoint import rollout

wp.config.verify_fp = False
wp.config.zero_store = True
wp.config.check = "warn"


@wp.kernel(zero_store=True, enable_backward=True)
def scale(x: wp.array(dtype=float), y: wp.array(dtype=float)):
    i = wp.tid()
    y[i] = 2.0 * x[i]


@wp.kernel
def square(x: wp.array(dtype=float)):
    i = wp.tid()
    x[i] = x[i] * x[i]


x = wp.array(np.ones(4), dtype=float, requires_grad=True)
y = wp.zeros(4, dtype=float, requires_grad=True)
with wp.Tape(check="error", snapshot=True) as tape:
    wp.launch(scale, dim=4, inputs=[x, y])
tape.backward(grads={y: wp.ones(4, dtype=float)})
print(x.grad.numpy(), tape.hazards, tape.snapshot_bytes, wp.effective_zero_store(scale), wp.__version__)

with wp.Tape() as outer:
    run = rollout(
        lambda s, n: wp.launch(square, dim=4, inputs=[*s]), [x], 3, snapshots=2, schedule="binomial", check="warn"
    )
print(run.summary.steps_run)
try:
    wp.set_module_options({"zero_store": False})
except wp.OverwriteError:
    pass
