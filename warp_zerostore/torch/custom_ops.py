"""One registered PyTorch custom operator per bridged op, so ``torch.compile``, ``torch.func`` and ``opcheck`` see it.

Each `warp_zerostore.torch.ops.WarpOp` registers, once when it is made, two operators in the
``warp_zerostore`` namespace (``torch.library.custom_op`` with an explicit schema, ``mutates_args=()``: an op
writes only the outputs it allocates). Calls under ``torch.compile`` and ``torch.func`` reach them; in eager
mode a call takes the ``torch.autograd.Function`` path (`autograd.WarpFunction`, cheaper at small
sizes).

* ``<name>(inputs...) -> outputs``: runs the function. Its fake implementation allocates the outputs' shapes and
  dtypes only (Dynamo treats the op as opaque; AOTAutograd and Inductor trace through the fake), and checks
  nothing else: a wrong dtype, shape or device then fails when the op runs, with the bridge's own error rather
  than a Dynamo trace.
* ``<name>_backward(inputs..., outputs, grad_outputs, needs) -> gradients``: the input gradients that ``needs``
  asks for. Backward is an op of its own because a compiled graph carries tensors only, never a ``wp.Tape``:
  a ``kernel_op`` launches its kernel's adjoint on the saved inputs and outputs; an ``op`` runs its function
  again on a ``wp.Tape`` (fresh outputs) and replays that (`autograd`). Its autograd formula raises
  `warp_zerostore.torch.autograd.DoubleBackwardError`.

Both have a vmap rule that loops over the batch (a Warp kernel has no batch dimension to map): ``torch.vmap``
of a bridged op calls it once per batch element and stacks the results.

Parameters the schema cannot carry (unannotated ones, vector, matrix or struct values) leave an op
unregistered: it keeps the ``torch.autograd.Function`` path (`autograd.WarpFunction`), which works in
eager autograd, and ``torch.compile`` graph-breaks around it.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

import torch
import warp

from .autograd import DoubleBackwardError, double_backward_message

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

    name: str  #: ``warp_zerostore::<name>``
    forward: torch._ops.OpOverload
    backward: torch._ops.OpOverload
    definitions: tuple  #: the ``CustomOpDef`` objects, kept alive with the op
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

    forward = torch.library.custom_op(
        f"{NAMESPACE}::{name}",
        lambda *values: op.forward(_with_defaults(values, op, signature)),
        mutates_args=(),
        schema=f"({', '.join(arguments)}) -> {returns}",
    )
    backward = torch.library.custom_op(
        f"{NAMESPACE}::{name}_backward",
        lambda *args: op.backward(args[:-3], *args[-3:]),
        mutates_args=(),
        schema=f"({', '.join([*positional, 'Tensor[] outputs', 'Tensor?[] grad_outputs', 'bool[] needs'])}) -> Tensor[]",
    )
    forward.register_fake(lambda *values: op.fake_outputs(_with_defaults(values, op, signature)))
    backward.register_fake(lambda *args: _fake_gradients(args[:-3], args[-1]))
    refusal = double_backward_message(op)
    registered = Registered(name, forward._opoverload, backward._opoverload, (forward, backward), refusal)
    forward.register_autograd(_backward_formula(registered), setup_context=_setup_context)
    backward.register_autograd(_refuse(refusal), setup_context=lambda ctx, inputs, output: None)
    forward.register_vmap(_loop_over_batch(registered.forward))
    backward.register_vmap(_loop_over_batch(registered.backward))
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


def _backward_formula(registered: Registered):
    def backward(ctx, *grad_outputs):
        return _gradients(ctx, registered, ctx.needs_input_grad, grad_outputs)

    return backward


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


def _refuse(message: str):
    def backward(ctx, *_):
        raise DoubleBackwardError(message)

    return backward


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
