"""A PyTorch bridge whose gradients are right: Warp kernels as differentiable PyTorch ops.

Install with the ``torch`` extra (``pip install "warp_zerostore[torch]"``); the rest of ``warp_zerostore``
never imports torch.

* `op` turns a function that launches Warp kernels on Warp arrays into a PyTorch op; its ``outputs``
  declare what to allocate. `kernel_op` does it for one kernel.

What a bridged op guarantees, each tested (``tests/test_torch_bridge.py``):

* Its gradients are PyTorch autograd's for the same math: leaf and non-leaf inputs, inputs that do and do not
  require grad, several inputs and outputs, outputs PyTorch passes no gradient for, non-differentiable
  arguments (Python numbers, integer tensors, integer outputs), vector and matrix dtypes mapped from trailing
  tensor dimensions (an ``(N, 3)`` float tensor is a ``wp.vec3`` array).
* No gradient lands twice in a leaf's ``.grad``: Warp never sees a tensor's ``.grad``; each Warp input gets
  its own gradient buffer, handed to PyTorch (without a copy) as the op's returned gradient.
* Backward is reentrant: calling it again (``retain_graph=True``, gradcheck with ``nondet_tol=0``) gives the
  same gradients; the caller's ``grad_output`` tensors are unchanged (Warp works on a copy). Views of one array
  share one gradient buffer in every call, however they overlap (``t[0:n]`` and ``t[1:n+1]`` of a temporary,
  negative strides): ``tests/test_torch_views.py``.
* Double backward raises `DoubleBackwardError`, naming the op, when a gradient it computed is itself
  differentiated; first-order ``create_graph=True`` still works.
* Zero copy in: a contiguous tensor of the parameter's dtype is wrapped in place (one with an odd stride on a
  size-1 dimension, ``col.t()`` or ``s.expand(1)``, viewed with row-major strides). A non-contiguous one is
  copied once to a contiguous tensor; a wrong dtype, shape or device is refused with an error naming the
  argument. Outputs are allocated (zero-filled) by PyTorch and returned without a copy.
* Kernels keep their own ``zero_store`` flag (or module/process default); the bridge is right for both values.
* On CUDA, Warp runs on PyTorch's current stream (default or not) in forward and backward, so no device-wide
  synchronisation is needed or made. Launches are not recorded on a ``wp.Tape`` the caller holds open.
* An input or output modified in place between forward and backward is caught by PyTorch's version check.
* With no input requiring grad (or under ``torch.no_grad()``) nothing is recorded and no gradient buffer is
  allocated.

* Each op is a registered PyTorch operator (``torch.ops.warp_zerostore.<name>``, made once with the op;
  `custom_ops`): ``torch.compile(fullgraph=True)`` (eager, aot_eager, inductor backends) runs it with no
  graph break and the gradients of eager mode; ``torch.func.grad``/``vjp``/``vmap`` (a loop over the batch)
  work; ``torch.library.opcheck`` passes; under compile a wrong dtype, shape or device still raises the bridge's
  error, when the op runs (``tests/test_torch_compile.py``). Where a graph carries only tensors (compile,
  torch.func), an ``op``'s backward runs its function again on a ``wp.Tape``; eager autograd records it once.

The function must write only its outputs (inputs are read-only views of the caller's tensors). Temporaries it
allocates need ``requires_grad=True`` to carry gradients, as on any ``wp.Tape``.

Example:
    The seed report's op, ``y = x0^2 * x1^2 * x2^2``:

    ```python
    from typing import Any
    import torch
    import warp_zerostore as wp
    import warp_zerostore.torch as wpt

    @wp.kernel
    def seed_kernel(x0: wp.array(dtype=Any), x1: wp.array(dtype=Any), x2: wp.array(dtype=Any),
                    y: wp.array(dtype=Any)):
        i = wp.tid()
        p = x0[i] * x1[i] * x2[i]
        y[i] = p * p

    seed = wpt.kernel_op(seed_kernel, outputs={"y": "x0"})

    xs = [torch.rand(8, dtype=torch.float64, requires_grad=True) for _ in range(3)]
    assert torch.autograd.gradcheck(seed, xs, nondet_tol=0.0)
    ```
"""

from __future__ import annotations

try:
    import torch as _torch  # noqa: F401
except ImportError as e:  # pragma: no cover - exercised where torch is absent
    raise ImportError("warp_zerostore.torch needs PyTorch 2.5 to 2.15: pip install 'warp_zerostore[torch]'.") from e

import warp as _warp

from .. import _submodules
from .autograd import DoubleBackwardError
from .ops import WarpOp, kernel_op, op

# Printed as warp_zerostore.torch.DoubleBackwardError, its public path.
DoubleBackwardError.__module__ = __name__

__all__ = ["op", "kernel_op", "WarpOp", "DoubleBackwardError"]


def __getattr__(name):
    # Up to warp-lang 1.12, ``warp_zerostore.torch`` stood for ``warp.torch`` (from_torch, to_torch, ...);
    # those names still resolve, to ``warp.torch`` or, where Warp has none, to ``warp`` itself.
    legacy = _submodules.warp_submodule("torch")
    if legacy is not None and not name.startswith("_") and hasattr(legacy, name):
        return getattr(legacy, name)
    if name.endswith("_torch") and hasattr(_warp, name):
        return getattr(_warp, name)
    raise AttributeError(f"module 'warp_zerostore.torch' has no attribute '{name}'")
