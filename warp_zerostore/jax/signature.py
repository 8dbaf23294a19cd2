"""The parameters of a bridged op and their concrete Warp types for one call's JAX dtypes.

Warp's FFI (``jax_callable``) needs a fully typed Python function. A bridged op's parameters may be generic
(``wp.array(dtype=Any)``) and its scalars may be traced, so each distinct set of input dtypes gets its own
`Specialization`: array types made concrete, and every scalar passed as a one-element array (read on
the host inside the call), which is what lets a traced scalar through ``jax.jit``.
"""

from __future__ import annotations

import inspect
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import warp

from .. import _compat

INPUT = "input"
IN_OUT = "in_out"
OUTPUT = "output"


class BridgeError(TypeError):
    """A bridged op's definition or call is wrong; the message names the op and the argument."""


@dataclass
class Param:
    """One parameter of the op's function: an input, an input-output (in-place) array, or an output."""

    name: str
    annotation: Any
    role: str
    #: for outputs: the input whose shape it takes, or a shape tuple
    spec: Any = None
    is_array: bool = field(init=False)

    def __post_init__(self):
        self.is_array = _compat.is_array_type(self.annotation)  # read on every call: computed once

    @property
    def takes_input(self) -> bool:
        return self.role in (INPUT, IN_OUT)

    @property
    def returns_output(self) -> bool:
        return self.role in (IN_OUT, OUTPUT)


@dataclass
class Specialization:
    """One call signature: the concrete Warp type of each parameter and what gets a gradient."""

    #: parameter name -> concrete Warp type (scalars stay scalars here; see ``ffi_type``)
    types: dict
    #: names of the input and in-out arrays that get a gradient (float dtypes)
    differentiable: list = field(default_factory=list)

    def ffi_type(self, param: Param):
        """What the FFI function declares: arrays as they are, scalars as one-element arrays."""
        t = self.types[param.name]
        return t if param.is_array else warp.array(dtype=t, ndim=1)


def parameters_of(fn, outputs: dict, in_out, where: str) -> list:
    """The op's `Param` list, in the function's order; checks ``outputs`` and ``in_out`` against it."""
    signature = inspect.signature(fn)
    params = signature.parameters
    if any(p.kind in (p.VAR_POSITIONAL, p.VAR_KEYWORD) for p in params.values()):
        raise BridgeError(f"{where}: *args and **kwargs parameters are not supported; name every parameter.")
    in_out = tuple(in_out or ())
    if not isinstance(outputs, dict) or not (outputs or in_out):
        raise BridgeError(
            f"{where}: outputs must be a dict from output parameter name to its shape, e.g. outputs={{'y': 'x'}} "
            f"(y shaped like input x), or in_out must name an array the function updates in place; got "
            f"outputs={outputs!r}, in_out={in_out!r}."
        )
    for label, names in (("outputs", list(outputs)), ("in_out", list(in_out))):
        unknown = [n for n in names if n not in params]
        if unknown:
            raise BridgeError(
                f"{where}: {label} names {unknown}, which are not parameters of the function "
                f"(its parameters: {list(params)})."
            )
    both = set(outputs) & set(in_out)
    if both:
        raise BridgeError(f"{where}: {sorted(both)} are in both outputs and in_out; an argument is one or the other.")
    annotations = _annotations(fn)
    result = []
    for name in params:
        annotation = annotations.get(name)
        if annotation is None:
            raise BridgeError(f"{where}: parameter '{name}' has no Warp type annotation (e.g. wp.array(dtype=float)).")
        role = OUTPUT if name in outputs else IN_OUT if name in in_out else INPUT
        param = Param(name, annotation, role, outputs.get(name))
        if role != INPUT and not param.is_array:
            raise BridgeError(f"{where}: {role} parameter '{name}' must be a wp.array, not {annotation!r}.")
        if not param.is_array and not _is_scalar_type(annotation):
            raise BridgeError(
                f"{where}: parameter '{name}' is {annotation!r}; JAX ops take wp.array parameters and scalars "
                f"(int, float, wp.float64, ...) only, not structs."
            )
        result.append(param)
    order = [p.role for p in result]
    if OUTPUT in order and any(r != OUTPUT for r in order[order.index(OUTPUT) :]):
        names = [p.name for p in result]
        raise BridgeError(
            f"{where}: output parameters must come last (after every input and in_out parameter); the "
            f"function's order is {names}."
        )
    return result


def _annotations(fn) -> dict:
    try:
        return inspect.get_annotations(fn, eval_str=True)
    except Exception:  # noqa: BLE001 - a kernel's func resolves them here; a plain fn may need its closure
        return dict(getattr(fn, "__annotations__", {}))


def _is_scalar_type(t) -> bool:
    return t in (int, float, bool) or t is Any or _compat.is_scalar_type(t)


def python_scalar_type(t):
    """The Warp scalar type of a scalar parameter annotated ``int``/``float``/``bool``."""
    return {int: warp.int32, float: warp.float32, bool: warp.bool}.get(t, t)


def specialize(params: list, values: dict, where: str) -> Specialization:
    """Concrete Warp types for one call; ``values`` maps input names to JAX arrays (scalars already arrays)."""
    types = {}
    for p in params:
        if not p.takes_input:
            continue
        value = values[p.name]
        jax_dtype = np.dtype(value.dtype)
        if p.is_array:
            types[p.name] = _concrete_array(p, jax_dtype, value.ndim, where)
        else:
            scalar = python_scalar_type(p.annotation)
            types[p.name] = _warp_dtype(jax_dtype, p, where) if scalar is Any else scalar
    for p in params:
        if p.role == OUTPUT:
            types[p.name] = _concrete_output(p, types, where)
    differentiable = [p.name for p in params if p.takes_input and p.is_array and _is_float_array(types[p.name])]
    return Specialization(types, differentiable)


def _is_float_array(t) -> bool:
    return _compat.is_float(_compat.array_type_dtype(t))


def _warp_dtype(np_dtype, p: Param, where: str):
    dtype = _compat.warp_dtype_from_numpy(np_dtype)
    if dtype is None:
        raise BridgeError(f"{where}: argument '{p.name}' has dtype {np_dtype}, which Warp has no type for.")
    return dtype


def _concrete_array(p: Param, jax_dtype, jax_ndim: int, where: str):
    annotation = p.annotation
    dtype = _compat.array_type_dtype(annotation)
    ndim = _compat.array_type_ndim(annotation)
    element = _compat.element_shape(dtype) if not _compat.is_generic(dtype) else ()
    if jax_ndim != ndim + len(element):
        raise BridgeError(
            f"{where}: argument '{p.name}' has {jax_ndim} dimensions; its type {_compat.type_repr(annotation)} "
            f"needs {ndim + len(element)} ({ndim} array dimension(s) + {len(element)} for the dtype)."
        )
    if _compat.is_generic(dtype):
        concrete = _warp_dtype(jax_dtype, p, where)
        if not _compat.dtype_matches(concrete, dtype):
            raise BridgeError(
                f"{where}: argument '{p.name}' has dtype {jax_dtype}, which does not fit "
                f"{_compat.type_repr(annotation)}; generic JAX op parameters take scalar dtypes (Any)."
            )
        return warp.array(dtype=concrete, ndim=ndim)
    expected = _compat.numpy_scalar(dtype)
    if np.dtype(jax_dtype) != np.dtype(expected):
        raise BridgeError(
            f"{where}: argument '{p.name}' has dtype {jax_dtype}, but the parameter is "
            f"{_compat.type_repr(annotation)} (dtype {np.dtype(expected)}); cast it with .astype()."
        )
    return annotation


def _concrete_output(p: Param, types: dict, where: str):
    dtype = _compat.array_type_dtype(p.annotation)
    ndim = _compat.array_type_ndim(p.annotation)
    if not _compat.is_generic(dtype):
        return p.annotation
    like = p.spec if isinstance(p.spec, str) else None
    if like is None or like not in types or not _compat.is_array_type(types[like]):
        raise BridgeError(
            f"{where}: output '{p.name}' has a generic dtype; give its shape as the name of an input array "
            f"(outputs={{'{p.name}': 'x'}}) so it takes that input's dtype, or annotate a concrete dtype."
        )
    return warp.array(dtype=_compat.array_type_dtype(types[like]), ndim=ndim)


def output_shape(p: Param, shapes: dict, types: dict, where: str) -> tuple:
    """The Warp shape (without element dimensions) of an output, from its spec and the inputs' shapes."""
    spec = p.spec
    if isinstance(spec, str):
        if spec not in shapes:
            raise BridgeError(f"{where}: output '{p.name}' is shaped like '{spec}', which is not an input array.")
        like = types[spec]
        element = len(_compat.element_shape(_compat.array_type_dtype(like)))
        shape = tuple(shapes[spec])
        return shape[: len(shape) - element] if element else shape
    if isinstance(spec, int):
        return (spec,)
    try:
        return tuple(int(d) for d in spec)
    except TypeError:
        raise BridgeError(
            f"{where}: output '{p.name}' shape must be an input name, an int or a tuple of ints, got {spec!r}."
        ) from None
