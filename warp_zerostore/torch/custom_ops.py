"""One registered PyTorch operator per bridged op, so ``torch.compile``, ``torch.func`` and ``opcheck`` see it.

Each `warp_zerostore.torch.ops.WarpOp` registers, once when it is made, two operators in the ``warp_zerostore``
namespace (``torch.library.Library`` definitions with an explicit schema, nothing mutated: an op writes only the
outputs it allocates), each with CPU and CUDA implementations, a fake implementation, an Autograd kernel and a
vmap rule.

* ``<name>(inputs...) -> outputs``: runs the function. Its fake implementation allocates the outputs' shapes and
  dtypes only (Dynamo treats the op as opaque; AOTAutograd and Inductor trace through the fake), and checks
  nothing else: a wrong dtype, shape or device then fails when the op runs, with the bridge's own error rather
  than a Dynamo trace. Its Autograd kernel, when a gradient is wanted: on real tensors with nothing tracing
  (eager), the eager path itself (`autograd.WarpFunction`: the Tape recorded in forward and replayed in
  backward), so calling the operator costs what calling the op costs; while tracing (fake or functional
  tensors, dispatch modes), one autograd node whose backward calls the backward operator, which a graph can
  hold.
* ``<name>_backward(inputs..., outputs, grad_outputs, needs) -> gradients``: the input gradients that ``needs``
  asks for. Backward is an operator of its own because a compiled graph carries tensors only, never a
  ``wp.Tape``: a ``kernel_op`` launches its kernel's adjoint on the saved inputs and outputs; an ``op`` runs its
  function again on a ``wp.Tape`` (fresh outputs) and replays that (`autograd`). Differentiating its result
  raises `warp_zerostore.torch.autograd.DoubleBackwardError`.

``torch.library.Library`` rather than ``torch.library.custom_op``: the same registrations without custom_op's
Python layers around every call (dynamo-disable wrappers, default filling, a tensor-list autograd adapter), which
cost more than a small Warp launch.

Both vmap rules loop over the batch (a Warp kernel has no batch dimension to map): ``torch.vmap`` of a bridged
op calls it once per batch element and stacks the results.

Parameters the schema cannot carry (unannotated ones, vector, matrix or struct values) leave an op
unregistered: it keeps the ``torch.autograd.Function`` path (`autograd.WarpFunction`), which works in
eager autograd, and ``torch.compile`` graph-breaks around it.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

import torch
import warp

from .autograd import DoubleBackwardError, WarpFunction, double_backward_message, refuse_double_backward

NAMESPACE = "warp_zerostore"

#: the schema type of each scalar annotation a bridged op's non-tensor parameter may have
SCALAR_SCHEMA = {
    float: "float",
    int: "int",
    bool: "bool",
    **{t: "float" for t in (warp.float16, warp.float32, warp.float64)},
    **{
        t: "int"
        for t in (warp.int8, warp.uint8, warp.int16, warp.uint16, warp.int32, warp.uint32, warp.int64, warp.uint64)
    },
    warp.bool: "bool",
}

_names_taken: set = set()


@dataclass
class Registered:
    """A bridged op's two registered operators (the ``OpOverload`` objects are what calls go to)."""

    name: str  #: ``<name>`` in ``torch.ops.warp_zerostore.<name>``
    forward: torch._ops.OpOverload
    backward: torch._ops.OpOverload
    library: torch.library.Library  #: holds the registrations, kept alive with the op
    refusal: str  #: the DoubleBackwardError message


def schema_type(param) -> str | None:
    """The schema type of one parameter, or None when the dispatcher cannot carry it."""
    if param.is_array:
        return "Tensor"
    try:
        return SCALAR_SCHEMA.get(param.annotation)
    except TypeError:  # unhashable annotation
        return None


def unregistrable(op, signature) -> list:
    """Names of ``op``'s parameters no schema type (or default) fits (empty: it can be registered)."""
    return [p.name for p in op.inputs if schema_type(p) is None or _default(signature.parameters[p.name]) is None]


def _unique_name(label: str) -> str:
    base = re.sub(r"\W+", "_", label).strip("_") or "op"
    base = base if base[0].isalpha() else f"op_{base}"
    name, n = base, 1
    while name in _names_taken or f"{name}_backward" in _names_taken:
        n += 1
        name = f"{base}_{n}"
    _names_taken.update((name, f"{name}_backward"))
    return name


def _default(param) -> str | None:
    """A parameter's default in schema syntax ("" for none); None when the schema cannot carry it."""
    default = param.default
    if default is param.empty:
        return ""
    if isinstance(default, (bool, int, float)) and repr(default) not in ("inf", "-inf", "nan"):
        return f"={default!r}"
    return None


def register(op, signature) -> Registered:
    """Register ``op``'s forward and backward operators (once, when the op is made)."""
    params = signature.parameters
    arguments = [f"{schema_type(p)} {p.name}{_default(params[p.name])}" for p in op.inputs]
    returns = "Tensor" if len(op.outputs) == 1 else f"({', '.join('Tensor' for _ in op.outputs)})"
    positional = [f"{schema_type(p)} a{i}" for i, p in enumerate(op.inputs)]
    name = _unique_name(op.name)
    backward_name = f"{name}_backward"
    lib = torch.library.Library(NAMESPACE, "FRAGMENT")  # its registrations live as long as the op
    lib.define(f"{name}({', '.join(arguments)}) -> {returns}")
    lib.define(
        f"{backward_name}({', '.join([*positional, 'Tensor[] outputs', 'Tensor?[] grad_outputs', 'bool[] needs'])})"
        " -> Tensor[]"
    )
    for key in ("CPU", "CUDA"):
        lib.impl(name, lambda *values: op.forward(_with_defaults(values, op, signature)), key)
        lib.impl(backward_name, lambda *args: op.backward(args[:-3], *args[-3:]), key)
    qualified = f"{NAMESPACE}::{name}"
    torch.library.register_fake(
        qualified, lambda *values: op.fake_outputs(_with_defaults(values, op, signature)), lib=lib
    )
    torch.library.register_fake(f"{qualified}_backward", lambda *args: _fake_gradients(args[:-3], args[-1]), lib=lib)
    namespace = getattr(torch.ops, NAMESPACE)
    registered = Registered(
        name,
        getattr(namespace, name).default,
        getattr(namespace, backward_name).default,
        lib,
        double_backward_message(op),
    )
    lib.impl(name, _forward_autograd(registered, op, signature), "Autograd", with_keyset=True)
    lib.impl(backward_name, _backward_autograd(registered, op), "Autograd", with_keyset=True)
    torch.library.register_vmap(qualified, _loop_over_batch(registered.forward), lib=lib)
    torch.library.register_vmap(f"{qualified}_backward", _loop_over_batch(registered.backward), lib=lib)
    return registered


def _with_defaults(values: tuple, op, signature) -> tuple:
    """The dispatcher drops trailing arguments equal to their schema defaults; put them back."""
    missing = op.inputs[len(values) :]
    return (*values, *(signature.parameters[p.name].default for p in missing))


# -- autograd ------------------------------------------------------------------------------------------------


def _setup_context(ctx, inputs, output) -> None:
    outputs = output if isinstance(output, tuple) else (output,)
    ctx.set_materialize_grads(False)
    ctx.scalars = [None if isinstance(v, torch.Tensor) else v for v in inputs]
    ctx.n_inputs = sum(isinstance(v, torch.Tensor) for v in inputs)
    # saved for backward, and so that PyTorch's version counters catch an in-place edit before it
    ctx.save_for_backward(*(v for v in inputs if isinstance(v, torch.Tensor)), *outputs)
    ctx.mark_non_differentiable(*(t for t in outputs if not t.is_floating_point()))


def _gradients(ctx, registered: Registered, needs_input_grad, grad_outputs, functorch: bool = False) -> tuple:
    saved = ctx.saved_tensors  # raises if an input or output was modified in place since forward
    tensors = iter(saved[: ctx.n_inputs])
    values = [next(tensors) if s is None else s for s in ctx.scalars]
    needs = [bool(n) for n in needs_input_grad]
    if not any(needs) or all(g is None for g in grad_outputs):
        return (None,) * len(values)
    args = (*values, list(saved[ctx.n_inputs :]), list(grad_outputs), needs)
    grads = iter(FunctorchBackwardCall.apply(registered, *args) if functorch else registered.backward(*args))
    return tuple(next(grads) if n else None for n in needs)


def _below_autograd(overload, keyset, args):
    """``overload``'s CPU/CUDA/fake implementation, skipping its Autograd kernel (what custom_op does too)."""
    with torch._C._AutoDispatchBelowAutograd():
        return overload.redispatch(keyset & torch._C._after_autograd_keyset, *args)


class RegisteredCall(torch.autograd.Function):
    """``RegisteredCall.apply(registered, keyset, *values)``: the forward operator's Autograd kernel when a
    gradient is wanted; one autograd node whose backward calls the backward operator."""

    @staticmethod
    def forward(registered, keyset, *values):
        return _below_autograd(registered.forward, keyset, values)

    @staticmethod
    def setup_context(ctx, inputs, output):
        ctx.registered = inputs[0]
        _setup_context(ctx, inputs[2:], output)

    @staticmethod
    def backward(ctx, *grad_outputs):
        return (None, None, *_gradients(ctx, ctx.registered, ctx.needs_input_grad[2:], grad_outputs))


def _is_eager(values) -> bool:
    """Real tensors, no dispatch mode (fake, proxy, functionalization) and no torch.func transform active."""
    return (
        torch._C._len_torch_dispatch_stack() == 0
        and not torch._C._are_functorch_transforms_active()
        and all(type(v) in _PLAIN_TENSORS for v in values if isinstance(v, torch.Tensor))
    )


_PLAIN_TENSORS = (torch.Tensor, torch.nn.Parameter)


def _forward_autograd(registered: Registered, op, signature):
    def kernel(keyset, *values):
        if torch.is_grad_enabled() and any(isinstance(v, torch.Tensor) and v.requires_grad for v in values):
            if _is_eager(values):
                # eager: the op's Tape recorded in forward and replayed in backward (no wrapping twice, an @op
                # not run again); traced (compile, opcheck): the backward operator, which a graph can hold
                outputs = WarpFunction.apply(op, True, *_with_defaults(values, op, signature))
                return outputs[0] if len(outputs) == 1 else outputs
            return RegisteredCall.apply(registered, keyset, *values)
        return _below_autograd(registered.forward, keyset, values)

    return kernel


def _backward_autograd(registered: Registered, op):
    def kernel(keyset, *args):
        grads = _below_autograd(registered.backward, keyset, args)
        if torch.is_grad_enabled():  # create_graph=True: the gradients must refuse a second differentiation
            values, outputs, grad_outputs = args[:-3], args[-3], args[-2]
            grads = refuse_double_backward(op, grads, [*values, *outputs, *grad_outputs])
        return grads

    return kernel


class FunctorchCall(torch.autograd.Function):
    """``FunctorchCall.apply(registered, *values)``: the forward operator under ``torch.func`` transforms.

    ``torch.func.grad``/``vjp`` need an ``autograd.Function`` with ``setup_context`` (the autograd formula a
    custom op registers is not one), so under those transforms a call goes through this Function, with the same
    formulas; vmap reaches the operators' own loop rules through it (``generate_vmap_rule``).
    """

    generate_vmap_rule = True

    @staticmethod
    def forward(registered, *values):
        return registered.forward(*values)

    @staticmethod
    def setup_context(ctx, inputs, output):
        ctx.registered = inputs[0]
        _setup_context(ctx, inputs[1:], output)

    @staticmethod
    def backward(ctx, *grad_outputs):
        return (None, *_gradients(ctx, ctx.registered, ctx.needs_input_grad[1:], grad_outputs, functorch=True))


class FunctorchBackwardCall(torch.autograd.Function):
    """The backward operator under ``torch.func`` transforms; differentiating it raises DoubleBackwardError."""

    generate_vmap_rule = True

    @staticmethod
    def forward(registered, *args):
        return tuple(registered.backward(*args))

    @staticmethod
    def setup_context(ctx, inputs, output):
        ctx.refusal = inputs[0].refusal

    @staticmethod
    def backward(ctx, *_):
        raise DoubleBackwardError(ctx.refusal)


def _fake_gradients(values, needs) -> list:
    return [torch.empty_like(v, memory_format=torch.contiguous_format) for v, n in zip(values, needs) if n]


# -- vmap: a loop over the batch -----------------------------------------------------------------------------


def _select(value, dim, index: int):
    if dim is None:
        return value
    if isinstance(value, (list, tuple)):
        return [_select(v, d, index) for v, d in zip(value, dim)]
    return value.select(dim, index)


def _loop_over_batch(overload):
    """A vmap rule: ``overload`` once per batch element (inputs selected along their batch dimension), the
    results stacked along dimension 0."""

    def rule(info, in_dims, *args):
        results = [overload(*(_select(a, d, b) for a, d in zip(args, in_dims))) for b in range(info.batch_size)]
        first = results[0]
        if isinstance(first, torch.Tensor):
            return torch.stack(results), 0
        stacked = [torch.stack(parts) for parts in zip(*results)]
        if isinstance(first, tuple):
            return tuple(stacked), (0,) * len(stacked)
        return stacked, [0] * len(stacked)

    return rule
