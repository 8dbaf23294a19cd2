"""What runs inside Warp's FFI callback: an op's forward, and its backward replayed from the op's inputs.

Both are plain Python functions over ``wp.array`` views of XLA's buffers, typed for one
`signature.Specialization` and handed to Warp's ``jax_callable``. Nothing is kept between the
forward and the backward call: the backward gets the op's inputs (and outputs) again from JAX and replays the
launches, so a jitted program holds everything the gradient needs.

Buffer rules (why the gradients stay right):

* XLA's output buffers arrive uninitialised: outputs and gradients are zeroed before any launch, except an
  output a kernel provably stores in full (``access.fully_stored``: ``y[i] = ...`` at the top level of the
  kernel, ``i`` from ``wp.tid()``, launched over ``y``'s shape), which the fill could not change.
* Cotangents JAX hands in are never written: each one is copied into a private buffer (a ``zero_store``
  adjoint zeroes the buffer it reads, and JAX may pass one buffer for several outputs).
* An in-out array starts the backward as its value *before* the op (a private copy where the backward
  re-runs launches that write it), with its gradient buffer holding the cotangent of its new value: the
  store adjoint consumes that, the loads add theirs.
"""

from __future__ import annotations

import inspect

import numpy as np
import warp

from .. import _compat
from .signature import IN_OUT, INPUT, OUTPUT, BridgeError, Param, Specialization

OUT, CT, GRAD, RES = "__out", "__ct", "__grad", "__res"


def _typed(body, names: list, types: list, module: str):
    """A function calling ``body(*arrays)``, with the named, annotated signature Warp's ``jax_callable`` reads."""

    def fn(*arrays):
        body(*arrays)

    fn.__signature__ = inspect.Signature(
        [inspect.Parameter(n, inspect.Parameter.POSITIONAL_OR_KEYWORD, annotation=t) for n, t in zip(names, types)]
    )
    fn.__annotations__ = dict(zip(names, types))
    fn.__annotations__["return"] = None
    fn.__module__ = module  # Warp preloads the kernels of this module before the call
    return fn


def host_scalar(array, p: Param, where: str):
    """A scalar parameter's value, from the one-element array it travels in (several under vmap)."""
    values = array.numpy()
    if values.size > 1 and not np.all(values == values.flat[0]):
        raise BridgeError(
            f"{where}: scalar argument '{p.name}' differs across a jax.vmap batch; scalars are one value per "
            f"call. Pass it as an array parameter to batch it."
        )
    return values.flat[0].item()


class Scratch:
    """Private buffers kept between calls (one per role, argument and shape): allocating them costs more
    than the launch for small arrays. Calls into one FFI function never overlap (Warp holds a lock)."""

    LIMIT = 64  # distinct shapes kept; beyond that the cache starts over

    def __init__(self):
        self.buffers: dict = {}

    def like(self, role: str, name: str, array):
        key = (role, name, array.shape, array.dtype, str(array.device))
        buffer = self.buffers.get(key)
        if buffer is None:
            if len(self.buffers) >= self.LIMIT:
                self.buffers.clear()
            buffer = self.buffers[key] = warp.empty_like(array)
        return buffer

    def zeros_like(self, role: str, name: str, array):
        buffer = self.like(role, name, array)
        buffer.zero_()
        return buffer

    def copy_of(self, role: str, name: str, array):
        buffer = self.like(role, name, array)
        warp.copy(buffer, array)
        return buffer


class Calls:
    """The forward and backward host functions of one op specialization."""

    def __init__(self, op, spec: Specialization):
        self.op = op
        self.spec = spec
        self.scratch = Scratch()
        params = op.params
        self.inputs = [p for p in params if p.takes_input]
        self.returns = [p for p in params if p.returns_output]
        self.float_returns = [p for p in self.returns if _compat.is_float(_compat.array_type_dtype(spec.types[p.name]))]
        self.pure_outputs = [p for p in params if p.role == OUTPUT]
        self.grads = [p for p in self.inputs if p.name in spec.differentiable]

    # -- signatures: forward (inputs -> in-out results, outputs); backward (inputs, outputs, cotangents -> grads)

    def forward_signature(self):
        names = [p.name for p in self.inputs] + [p.name + OUT for p in self.returns]
        types = [self.spec.ffi_type(p) for p in self.inputs] + [self.spec.types[p.name] for p in self.returns]
        return names, types, len(self.returns)

    def backward_signature(self):
        names = (
            [p.name for p in self.inputs]
            + [p.name + RES for p in self.pure_outputs]
            + [p.name + CT for p in self.float_returns]
            + [p.name + GRAD for p in self.grads]
        )
        types = (
            [self.spec.ffi_type(p) for p in self.inputs]
            + [self.spec.types[p.name] for p in self.pure_outputs]
            + [self.spec.types[p.name] for p in self.float_returns]
            + [self.spec.types[p.name] for p in self.grads]
        )
        return names, types, len(self.grads)

    def forward_function(self):
        names, types, _ = self.forward_signature()
        return _typed(self._forward, names, types, self.op.module)

    def backward_function(self):
        names, types, _ = self.backward_signature()
        return _typed(self._backward, names, types, self.op.module)

    # -- bodies

    def _split(self, arrays, groups):
        out, i = [], 0
        for group in groups:
            out.append({p.name: arrays[i + k] for k, p in enumerate(group)})
            i += len(group)
        return out

    def _forward(self, *arrays):
        ins, outs = self._split(arrays, [self.inputs, self.returns])
        values = {}
        for p in self.op.params:
            if p.role == INPUT:
                values[p.name] = ins[p.name] if p.is_array else host_scalar(ins[p.name], p, self.op.describe())
            elif p.role == IN_OUT:
                warp.copy(outs[p.name], ins[p.name])
                values[p.name] = outs[p.name]
            else:
                values[p.name] = outs[p.name]
        if self.op.zero_outputs:
            for p in self.pure_outputs:
                if not self.op.writes_in_full(p.name, values):
                    values[p.name].zero_()
        with _compat.no_active_tape():
            self.op.run(values)

    def _backward(self, *arrays):
        ins, results, cts, grads = self._split(arrays, [self.inputs, self.pure_outputs, self.float_returns, self.grads])
        for g in grads.values():
            g.zero_()
        values, adjoints = {}, {}
        for p in self.op.params:
            if p.role == INPUT:
                values[p.name] = ins[p.name] if p.is_array else host_scalar(ins[p.name], p, self.op.describe())
                adjoints[p.name] = grads.get(p.name)
            elif p.role == IN_OUT:
                # The value before the op. A replay that writes it (a Tape re-running launches) gets a private
                # copy; a kernel's adjoint launch does not replay stores, so it reads JAX's buffer in place.
                before = ins[p.name]
                values[p.name] = self.scratch.copy_of(IN_OUT, p.name, before) if self.op.replay_writes else before
                adjoints[p.name] = grads.get(p.name)
                if p.name in grads:
                    warp.copy(grads[p.name], cts[p.name])
            else:
                # Zeroed as in the forward where the op reads it; else (never read, and adjoint launches replay
                # no stores) JAX's result buffer stands in.
                read = self.op.reads_output(p.name)
                values[p.name] = self.scratch.zeros_like(OUTPUT, p.name, results[p.name]) if read else results[p.name]
                adjoints[p.name] = self._private_cotangent(p, cts)
        with _compat.no_active_tape():
            self.op.run_backward(values, adjoints)

    def _private_cotangent(self, p: Param, cts: dict):
        if p.name not in cts:
            return None
        if not self.op.writes_output_adjoints:
            return cts[p.name]  # the adjoint only reads it (a kernel without zero_store=True)
        return self.scratch.copy_of(CT, p.name, cts[p.name])
