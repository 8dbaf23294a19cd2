"""Tensors at a bridged op's boundary: what each parameter accepts, zero-copy wrapping, output allocation.

An ``wp.array(dtype=D, ndim=k)`` parameter takes a tensor of D's scalar type with ``k`` dimensions plus D's
component shape (``wp.vec3``: a trailing 3, ``wp.mat33``: trailing 3, 3). A contiguous tensor of that dtype
is wrapped without a copy; a non-contiguous one is copied once to a contiguous tensor; anything else is
refused with an error naming the argument. Buffers the bridge hands to PyTorch (outputs, gradients) are
allocated by PyTorch, so its allocator and stream bookkeeping own them.
"""

from __future__ import annotations

import functools
import inspect
from dataclasses import dataclass
from typing import Any

import torch
import warp

from .. import _compat, _memory

EMPTY = inspect.Parameter.empty


def resolve_annotation(annotation, globals_: dict):
    """An annotation as an object; string annotations (``from __future__ import annotations``) evaluated."""
    if isinstance(annotation, str):
        return eval(annotation, globals_)  # noqa: S307 - the user's own source text, as Warp itself does
    return annotation


def is_array_annotation(annotation) -> bool:
    """True for ``wp.array(...)`` annotations (not indexed or fabric arrays, which the bridge refuses)."""
    return isinstance(annotation, warp.array)


def describe(annotation) -> str:
    """``wp.array(dtype=vec3f, ndim=1)`` for messages."""
    dtype = "Any" if annotation.dtype is Any else getattr(annotation.dtype, "__name__", str(annotation.dtype))
    return f"wp.array(dtype={dtype}, ndim={annotation.ndim})"


@dataclass
class Param:
    """One parameter of a bridged op: where errors point, and what it accepts."""

    op: str
    name: str
    annotation: Any = EMPTY

    @property
    def is_array(self) -> bool:
        return is_array_annotation(self.annotation)

    def where(self) -> str:
        return f"{self.op}: argument '{self.name}'"


def warp_dtype_for(param: Param, tensor: torch.Tensor):
    """The Warp dtype a tensor becomes for ``param``; raises TypeError naming the argument on a mismatch."""
    annotation = param.annotation
    if not param.is_array or annotation.dtype is Any:
        try:
            return warp.dtype_from_torch(tensor.dtype)
        except Exception:
            raise TypeError(
                f"{param.where()} is a {tensor.dtype} tensor, which Warp has no dtype for. "
                f"Convert it, e.g. {param.name}.to(torch.float32)."
            ) from None
    expected = warp.dtype_to_torch(_compat.scalar_type(annotation.dtype))
    if tensor.dtype != expected:
        raise TypeError(
            f"{param.where()} must be a {expected} tensor for {describe(annotation)}, got {tensor.dtype}. "
            f"Convert it with {param.name}.to({expected}) (the bridge does not change dtypes silently), or "
            f"annotate the parameter with the Warp dtype you pass (dtype=Any takes the tensor's own)."
        )
    return annotation.dtype


def check_shape(param: Param, tensor: torch.Tensor, dtype) -> None:
    """A tensor has the array's dimensions followed by the dtype's component shape (vec3: a trailing 3)."""
    components = _compat.element_shape(dtype)
    array_ndim = param.annotation.ndim if param.is_array else max(tensor.dim(), 1)
    ndim = array_ndim + len(components)
    if tensor.dim() == ndim and tuple(tensor.shape[array_ndim:]) == components:
        return
    target = describe(param.annotation) if param.is_array else f"a Warp array of {dtype.__name__}"
    trailing = f", the last {len(components)} of sizes {components}" if components else ""
    raise ValueError(
        f"{param.where()} must have {ndim} dimensions{trailing} for {target}, got shape "
        f"{tuple(tensor.shape)}. Reshape the tensor or change the parameter's annotation."
    )


def check_device(param: Param, tensor: torch.Tensor, device: torch.device, first: str) -> None:
    if tensor.device.type not in ("cpu", "cuda"):
        raise ValueError(f"{param.where()} is on {tensor.device}; Warp runs on 'cpu' and 'cuda' devices only.")
    if tensor.device != device:
        raise ValueError(
            f"{param.where()} is on {tensor.device} but '{first}' is on {device}; all tensors of one call "
            f"must be on one device. Move it with {param.name}.to('{device}')."
        )


def check_kind(param: Param, value) -> None:
    """A tensor for an array parameter, a Python value for an annotated scalar one; TypeError naming it if not."""
    if not isinstance(value, torch.Tensor):
        if param.is_array:
            raise TypeError(
                f"{param.where()} must be a torch.Tensor for {describe(param.annotation)}, got "
                f"{type(value).__name__}. Pass a tensor (e.g. torch.as_tensor({param.name}))."
            )
    elif param.annotation is not EMPTY and not param.is_array:
        raise TypeError(
            f"{param.where()} is annotated {param.annotation!r}, which takes a Python value, got a tensor. "
            f"Pass {param.name}.item() for a scalar, or annotate it as wp.array(...)."
        )


def input_array(param: Param, value, device: torch.device, first: str):
    """``(warp value, wrapped tensor)`` for one argument: a tensor becomes a Warp array over its memory.

    The array never shares ``value.grad`` (the bridge gives it its own gradient buffer), so nothing lands in a
    leaf's ``.grad`` except what PyTorch adds from the gradient the op returns. Non-contiguous tensors are
    copied once (``.contiguous()``); everything else is zero copy. Non-tensor arguments pass through.
    """
    check_kind(param, value)
    if not isinstance(value, torch.Tensor):
        return value, None
    check_device(param, value, device, first)
    dtype = warp_dtype_for(param, value)
    check_shape(param, value, dtype)
    tensor = row_major(value) if value.is_contiguous() else value.contiguous()
    return wrap(tensor, dtype), tensor


@functools.cache
def _warp_device(device: torch.device):
    return warp.device_from_torch(device)


@functools.cache
def _element_layout(dtype) -> tuple:
    """``(bytes per scalar, component shape)`` of a Warp dtype (cached: asked for every array of every call)."""
    return _compat.dtype_size_bytes(_compat.scalar_type(dtype)), _compat.element_shape(dtype)


def wrap(tensor: torch.Tensor, dtype):
    """A Warp array of ``dtype`` over ``tensor``'s memory, no gradient: ``wp.from_torch(tensor, dtype,
    requires_grad=False)`` for a dtype the caller has already checked, built directly with ``wp.array(ptr=...)``
    (about half of from_torch's per-call cost, paid for every argument, output and gradient of every call).

    Falls back to ``wp.from_torch`` (its checks and errors) for an empty tensor or components that are not the
    tensor's contiguous trailing dimensions.
    """
    size, components = _element_layout(dtype)
    shape = tuple(tensor.shape)
    strides = tuple(s * size for s in tensor.stride())
    if components:
        k = len(components)
        inner = (size * components[-1], size) if k == 2 else (size,)
        if shape[-k:] != components or strides[-k:] != inner[-k:]:
            return warp.from_torch(tensor, dtype=dtype, requires_grad=False)
        shape, strides = shape[:-k] or (1,), strides[:-k] or (size,)  # as from_torch does
    ptr = tensor.data_ptr()
    if not ptr:
        return warp.from_torch(tensor, dtype=dtype, requires_grad=False)
    storage = tensor.untyped_storage()
    base, nbytes = storage.data_ptr(), storage.nbytes()
    array = warp.array(
        ptr=ptr,
        dtype=dtype,
        shape=shape,
        strides=strides,
        capacity=nbytes - (ptr - base),
        device=_warp_device(tensor.device),
        copy=False,
    )
    _compat.hold_source(array, tensor, base, nbytes)
    return array


def row_major(tensor: torch.Tensor) -> torch.Tensor:
    """A contiguous tensor viewed with the strides of a fresh contiguous tensor (same memory, no copy).

    PyTorch calls a tensor contiguous whatever the strides of its size-1 dimensions (``col.t()``,
    ``s.expand(1)``, a one-channel ``CHW.permute(1, 2, 0)``); Warp requires an array's gradient to have the
    array's strides exactly, and the gradient buffers the bridge allocates are laid out row-major.
    """
    strides, step = [], 1
    for n in reversed(tensor.shape):
        strides.append(step)
        step *= max(n, 1)
    strides = tuple(reversed(strides))
    if tensor.stride() == strides:
        return tensor
    return tensor.as_strided(tensor.shape, strides, tensor.storage_offset())


def is_differentiable(dtype) -> bool:
    """Floating-point arrays carry gradients; integer and boolean ones do not."""
    return warp.dtype_to_torch(_compat.scalar_type(dtype)).is_floating_point


@dataclass(frozen=True)
class Layout:
    """What an output's shape function sees of an input under ``torch.compile`` (fake tensors, no memory): the
    Warp array's ``shape`` (sizes may be symbolic), ``dtype`` and ``ndim``."""

    shape: tuple
    dtype: Any

    @property
    def ndim(self) -> int:
        return len(self.shape)


def layout_of(param: Param, tensor: torch.Tensor) -> Layout:
    """The Warp array ``tensor`` would become for ``param``, without checking it (the call that runs checks)."""
    dtype = param.annotation.dtype if param.is_array and param.annotation.dtype is not Any else None
    if dtype is None:
        try:
            dtype = warp.dtype_from_torch(tensor.dtype)
        except Exception:
            dtype = warp.float32  # refused when the op runs
    ndim = param.annotation.ndim if param.is_array else max(tensor.dim() - len(_compat.element_shape(dtype)), 1)
    shape = tuple(tensor.shape[:ndim])
    return Layout(shape + (1,) * (ndim - len(shape)), dtype)  # a wrong shape: any layout, refused when run


def empty_output(shape: tuple, dtype, device: torch.device) -> torch.Tensor:
    """An output's tensor (uninitialised): the array's shape, then the dtype's component shape."""
    return torch.empty(
        (*shape, *_compat.element_shape(dtype)),
        dtype=warp.dtype_to_torch(_compat.scalar_type(dtype)),
        device=device,
    )


def output_array(shape: tuple, dtype, device: torch.device):
    """``(array, tensor)``: a zero-filled output, allocated by PyTorch and seen by Warp without a copy."""
    tensor = empty_output(shape, dtype, device)
    array = wrap(tensor, dtype)
    array.zero_()
    return array, tensor


def attach_grad(array, like: torch.Tensor, zero: bool = True) -> torch.Tensor:
    """Give ``array`` a fresh gradient buffer allocated by PyTorch (zeroed unless ``zero=False``); return it.

    Buffers are zeroed by Warp (a memset on the op's stream) rather than ``torch.zeros``: same result, and on a
    busy CPU it does not wait for PyTorch's intra-op thread pool.
    """
    grad = torch.empty_like(like, memory_format=torch.contiguous_format)
    array.grad = wrap(grad, array.dtype)
    if zero:
        array.grad.zero_()
    return grad


def grad_block(nbytes: int, device) -> object:
    """A zeroed byte buffer holding the gradients of a group of views (see ``autograd.Recording``)."""
    return warp.zeros(max(nbytes, 1), dtype=warp.uint8, device=device)


def grad_view(base: int, end: int, offset: int, like):
    """A gradient array for ``like`` at ``offset`` bytes from ``base`` (a buffer ending at ``end``), with
    ``like``'s shape and strides (negative ones included): views share one buffer as they share one array."""
    return warp.array(
        ptr=base + offset,
        dtype=like.dtype,
        shape=like.shape,
        strides=like.strides,
        capacity=end - base - offset,
        device=like.device,
        copy=False,
    )


def grad_span(array) -> tuple:
    """``(first byte, one past the last byte)`` of the elements of ``array.grad``."""
    return _memory.byte_span(array.grad)
