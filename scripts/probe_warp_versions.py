"""Measure, on the installed warp-lang, the stock behaviours `warp_zerostore._compat` tells apart by version.

Run it with each matrix venv's Python (``make probe-versions`` runs all of them); it prints one JSON line:
store zeroing, component-store gradients, the copy adjoint, tile_store's adjoint, slot stores and retain_grad,
each measured with stock Warp (plain ``import warp``, the package not imported), plus the version.
"""

import json
import sys
import tempfile

import warp as wp

wp.config.quiet = True
wp.config.kernel_cache_dir = tempfile.mkdtemp(prefix="probe_")
wp.init()


@wp.kernel
def overwrite(x: wp.array(dtype=float), y: wp.array(dtype=float)):
    i = wp.tid()
    y[i] = 2.0 * x[i]
    y[i] = 3.0 * x[i]


@wp.kernel
def component(x: wp.array(dtype=float), y: wp.array(dtype=wp.vec3)):
    i = wp.tid()
    y[i].x = 2.0 * x[i]
    y[i].y = 5.0 * x[i]


def grad_of(kernel, y, seed):
    x = wp.array([1.0], dtype=float, requires_grad=True)
    tape = wp.Tape()
    with tape:
        wp.launch(kernel, dim=1, inputs=[x, y])
    tape.backward(grads={y: wp.array(seed, dtype=y.dtype)})
    return float(x.grad.numpy()[0])


facts = {"version": wp.config.version}
# store adjoint: zeroes (3) or accumulates the overwritten value's gradient too (5)
facts["store_zeroes"] = grad_of(overwrite, wp.zeros(1, dtype=float, requires_grad=True), [1.0]) == 3.0
# component store into an array element: differentiable (7) or dropped (0)
facts["component_store_gradient"] = grad_of(
    component, wp.zeros(1, dtype=wp.vec3, requires_grad=True), [[1.0, 1.0, 1.0]]
)
# wp.copy on a Tape: src.grad accumulated (1 + 1 = 2) or overwritten (1) with dest.grad; dest.grad zeroed?
src = wp.array([1.0], dtype=float, requires_grad=True)
dest = wp.zeros(1, dtype=float, requires_grad=True)
src.grad.fill_(1.0)
tape = wp.Tape()
with tape:
    wp.copy(dest, src)
tape.backward(grads={dest: wp.array([1.0], dtype=float)})
facts["copy_adjoint_src_grad"] = float(src.grad.numpy()[0])
facts["copy_adjoint_dest_grad_after"] = float(dest.grad.numpy()[0])
codegen = getattr(getattr(wp, "_src", None), "codegen", None) or __import__("warp.codegen", fromlist=["Adjoint"])
facts["slot_stores"] = hasattr(codegen.Adjoint, "array_slot_adjoint")
facts["retain_grad"] = "retain_grad" in wp.array.__init__.__code__.co_varnames
facts["tid_is_warp_check"] = "_is_tid_call" in open(codegen.__file__).read()
print(json.dumps(facts))
sys.exit(0)
