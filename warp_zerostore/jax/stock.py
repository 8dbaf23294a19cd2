"""``warp_zerostore.jax_kernel``: Warp's ``jax_kernel``, with differentiable ``zero_store=True`` kernels bridged.

Warp's differentiable ``jax_kernel`` launches the adjoint with JAX's cotangent buffers as the outputs'
adjoints. A ``zero_store=True`` kernel's store adjoint zeroes the buffer it reads, so Warp's wrapper would
write zeros into arrays JAX treats as immutable (the caller's cotangent; one output's gradient when a
cotangent is shared). Such kernels go through `ops.kernel_op` instead, with Warp's calling
convention (inputs positional, the outputs returned as a list). Every other call is Warp's, unchanged.
"""

from __future__ import annotations

import inspect

from .. import _compat
from .ops import KernelOp, _zero_store
from .signature import BridgeError


def _warp_jax_kernel():
    module = _compat.jax_ffi_module()
    if module is None:
        raise ImportError("jax_kernel needs Warp's JAX FFI (warp-lang 1.9 or later).")
    return module.jax_kernel


def jax_kernel(kernel, *args, **kwargs):
    """Warp's ``jax_kernel``; a ``zero_store=True`` kernel with ``enable_backward=True`` gets the bridge.

    Args:
        kernel: The ``wp.Kernel`` to call from JAX.
        *args: Warp's own ``jax_kernel`` arguments, passed through.
        **kwargs: Warp's own ``jax_kernel`` keywords (``num_outputs``, ``in_out_argnames``, ``enable_backward``,
            ``launch_dims``, ``output_dims``, ...).

    Returns:
        A JAX-callable function; for a flagged differentiable kernel, one whose backward is the bridge's.

    Example:
        ```python
        import jax, jax.numpy as jnp
        import warp_zerostore as wp

        @wp.kernel(zero_store=True)
        def double_store(xa: wp.array(dtype=float), xb: wp.array(dtype=float), y: wp.array(dtype=float)):
            i = wp.tid()
            y[i] = 2.0 * xa[i]
            y[i] = 3.0 * xb[i]

        f = wp.jax_kernel(double_store, enable_backward=True)
        x = jnp.ones(4, dtype=jnp.float32)
        ct = jnp.ones(4, dtype=jnp.float32)
        _, vjp = jax.vjp(lambda a, b: f(a, b)[0], x, x)
        ga, gb = vjp(ct)
        assert (ga == 0.0).all() and (gb == 3.0).all() and (ct == 1.0).all()
        ```
    """
    warp_jax_kernel = _warp_jax_kernel()
    bound = inspect.signature(warp_jax_kernel).bind(kernel, *args, **kwargs)
    bound.apply_defaults()
    options = bound.arguments
    if not options.get("enable_backward") or _zero_store(kernel) is not True:
        return warp_jax_kernel(kernel, *args, **kwargs)
    return _bridged(kernel, options)


def _bridged(kernel, options: dict):
    params = [name for name, _ in _compat.kernel_parameters(kernel)]
    in_out = list(options.get("in_out_argnames") or ())
    num_outputs = options.get("num_outputs", 1)
    outputs = params[len(params) - (num_outputs - len(in_out)) :]
    launch_dims = options.get("launch_dims")
    output_dims = options.get("output_dims")
    first_array = next((n for n, t in _compat.kernel_parameters(kernel) if _compat.is_array_type(t)), None)
    specs = {}
    for name in outputs:
        dims = output_dims.get(name) if isinstance(output_dims, dict) else output_dims
        specs[name] = dims if dims is not None else launch_dims if launch_dims is not None else first_array
    if options.get("vmap_method", "broadcast_all") != "broadcast_all":
        raise BridgeError(
            f"jax_kernel({kernel.key}): a zero_store=True kernel with enable_backward=True is bridged by "
            f"warp_zerostore.jax, which batches with vmap_method='broadcast_all' only; drop vmap_method."
        )
    op = KernelOp(kernel, specs, in_out, dim=launch_dims)

    def call(*inputs):
        results = op(*inputs)
        return list(results) if isinstance(results, tuple) else [results]

    call.op = op
    return call
