"""A JAX bridge whose gradients are right: Warp kernels as differentiable JAX functions.

Install with the ``jax`` extra (``pip install "warp_zerostore[jax]"``); the rest of ``warp_zerostore`` never
imports JAX. Needs Warp's JAX FFI: warp-lang 1.19 on CPU and CUDA (tested on CPU with jax 0.10.2), 1.9-1.12
on CUDA only (their FFI has no CPU handler; a CPU call raises `BridgeError`).

* `kernel_op` makes one kernel a JAX function; `op` does it for a function of several launches.
* ``warp_zerostore.jax_kernel`` is Warp's ``jax_kernel``, except that a ``zero_store=True`` kernel with
  ``enable_backward=True`` goes through this bridge (so its backward never writes JAX's cotangents).

What a bridged op guarantees, each tested (``tests/test_jax_bridge.py``):

* Its gradients are ``jax.grad``'s of the same ``jnp`` math, under ``jax.jit``, ``jax.grad``, ``jax.vjp`` and
  ``jax.vmap`` (batched by Warp's ``broadcast_all``: batch dimensions fold into the arrays' first dimension).
* Kernels keep their own ``zero_store`` flag (or module/process default): a double store ``y = 2*xa; y = 3*xb``
  in a ``zero_store=True`` kernel gives ``dxa = 0``, ``dxb = 3``.
* Cotangents JAX hands in are never written: the backward copies them into private buffers, so one cotangent
  array passed for two outputs gives both their gradient. Each input gets its own gradient buffer.
* In-place (``in_out``) arguments are differentiable: the op returns the new value, and the backward replays
  the kernel on a private copy of the old value (kernels need ``zero_store=True``).
* Nothing lives outside the compiled program: the backward replays the launches from the inputs JAX keeps.
* Scalar parameters may be traced (``jax.jit`` arguments); they get no gradient (a zero cotangent). A scalar
  that differs across a ``vmap`` batch is refused.
* Forward mode (``jax.jvp``, ``jacfwd``, ``jax.linearize``) and second derivatives raise `DifferentiationError`, and
  wrong dtypes, shapes or parameter lists raise `BridgeError`, naming the op and the argument.

The functions must write only their outputs and ``in_out`` arrays (inputs are views of JAX's buffers).
Outputs start zero-filled.

Example:
    The seed report's op, ``y = (x0*x1*x2)^2``:

    ```python
    from typing import Any
    import jax, jax.numpy as jnp, jax.test_util
    import warp_zerostore as wp
    import warp_zerostore.jax as wpj

    @wp.kernel
    def seed_kernel(x0: wp.array(dtype=Any), x1: wp.array(dtype=Any), x2: wp.array(dtype=Any),
                    y: wp.array(dtype=Any)):
        i = wp.tid()
        p = x0[i] * x1[i] * x2[i]
        y[i] = p * p

    seed = wpj.kernel_op(seed_kernel, outputs={"y": "x0"})
    xs = [jnp.linspace(0.5, 1.5, 8)] * 3
    jax.test_util.check_grads(seed, xs, order=1, modes=["rev"])
    ```
"""

from __future__ import annotations

try:
    import jax as _jax  # noqa: F401
except ImportError as e:  # pragma: no cover - exercised where jax is absent
    raise ImportError(
        "warp_zerostore.jax needs JAX: pip install 'warp_zerostore[jax]' (or jax==0.10.2 jaxlib==0.10.2)."
    ) from e

from .ops import DifferentiationError, FunctionOp, JaxOp, KernelOp, kernel_op, op
from .signature import BridgeError
from .stock import jax_kernel

# Errors print as their public path (warp_zerostore.jax.BridgeError).
for _public in (BridgeError, DifferentiationError):
    _public.__module__ = __name__

__all__ = ["BridgeError", "DifferentiationError", "FunctionOp", "JaxOp", "KernelOp", "jax_kernel", "kernel_op", "op"]
