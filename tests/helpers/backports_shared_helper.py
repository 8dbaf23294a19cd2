"""Run as a script (tests/test_backports.py), in a fresh process with a kernel cache of its own: a helper first
built for a forward-only kernel, then called by a differentiable one (``flagged`` or ``unflagged``, the first
argument). Which of the module's kernels Warp builds first varies between processes; on Warp <= 1.15, where the
forward-only one is first, the helpers it calls keep no adjoint. Prints ``y`` and ``x.grad`` as JSON."""

import json
import sys
import tempfile

import warp_zerostore as wp

FLAG = {"flagged": True, "unflagged": None}[sys.argv[1]]


@wp.func
def inner(p: float):
    return p * p


@wp.func
def outer(p: float):
    return inner(p)


@wp.kernel(enable_backward=False)
def forward_only(x: wp.array(dtype=float), y: wp.array(dtype=float)):
    i = wp.tid()
    y[i] = outer(x[i])


@wp.kernel(zero_store=FLAG)
def differentiable(x: wp.array(dtype=float), y: wp.array(dtype=float)):
    i = wp.tid()
    y[i] = outer(x[i]) * x[i]


wp.config.quiet = True
wp.config.kernel_cache_dir = tempfile.mkdtemp(prefix="wzs_shared_helper_")
x = wp.array([float(v) for v in sys.argv[2:]], dtype=float, requires_grad=True)
y = wp.zeros(x.shape[0], dtype=float, requires_grad=True)
wp.launch(forward_only, dim=x.shape[0], inputs=[x, y])
with wp.Tape() as tape:
    wp.launch(differentiable, dim=x.shape[0], inputs=[x, y])
tape.backward(grads={y: wp.ones(x.shape[0], dtype=float)})
print(json.dumps({"y": y.numpy().tolist(), "x_grad": x.grad.numpy().tolist()}))
