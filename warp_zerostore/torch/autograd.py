"""A bridged op's ``wp.Tape``: record the op's launches, replay them fresh in each backward call.

`record` runs the op on a Tape; `Recording.replay` gives the input gradients of one backward call.
The registered ``<name>_backward`` operator of an ``op`` (`custom_ops`) records and replays in one go;
`WarpFunction`, the ``torch.autograd.Function`` of ops the dispatcher cannot carry, records in forward
and replays in backward.

Forward wraps the inputs (zero copy), allocates the outputs and, when some input needs a gradient, records the
op's launches on its own ``wp.Tape``. Every array that carries a gradient (inputs that need one, float
outputs, temporaries the op made with ``requires_grad=True``) has one at record time, so Warp records
``wp.copy``/``assign`` between them as it does on any Tape.

Each backward call is independent: it uses forward's gradient buffers the first time and fresh ones after
(the inputs' and temporaries' zeroed; views follow their array, and temporaries whose gradients overlap share
one buffer, as views of one array do), ``grad_output`` is COPIED into the outputs'
gradient buffers (store adjoints that zero what they read, or
loads that add into an output's gradient, touch the bridge's copy, never the caller's tensor), the Tape runs
backward, the inputs' gradient buffers are returned to PyTorch as they are (no copy), and every gradient buffer
is released. Nothing is written into a leaf's ``.grad`` by Warp, so PyTorch's accumulation of the returned
gradient is the only one. Calling backward again (``retain_graph=True``, gradcheck's reentrancy check)
gives the same result.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import torch
import warp

from .. import _compat
from . import arrays, streams


class DoubleBackwardError(RuntimeError):
    """Raised when a gradient computed by a bridged op is differentiated again."""


@dataclass
class GradGroup:
    """Arrays the op made whose gradients share memory (a temporary's views, however they overlap): one
    fresh zeroed buffer per backward call holds all their gradients, each at its recorded offset."""

    start: int  #: first byte of the group's gradients when recorded
    end: int  #: one past the last
    device: object
    #: (array, byte offset of its gradient's pointer from ``start``)
    members: list
    buffer: object = None

    def acquire(self) -> None:
        self.buffer = arrays.grad_block(self.end - self.start, self.device)
        base = self.buffer.ptr
        for array, offset in self.members:
            array.grad = arrays.grad_view(base, base + self.end - self.start, offset, array)

    def release(self) -> None:
        for array, _ in self.members:
            array.grad = None
        self.buffer = None


@dataclass
class Recording:
    """What forward leaves for backward."""

    op: object
    device: torch.device
    #: per op input: its Warp array and the tensor it wraps, or None (non-tensor, or needs no gradient)
    inputs: list
    #: per op output: its Warp array and tensor, or None when the output is not differentiable
    outputs: list
    tape: object = None
    #: arrays with a gradient the bridge did not allocate (temporaries made with requires_grad=True and their
    #: views), grouped by overlapping gradient memory
    groups: list = field(default_factory=list)
    #: (array, root, byte offset): arrays whose gradient is a view into an input's or output's (``x[1:]``)
    aliases: list = field(default_factory=list)
    #: the bridge's gradient buffers, by id of their array, as the tensors PyTorch allocated
    grads: dict = field(default_factory=dict)
    #: input position -> output position of each in-out array: the function updated a copy (the output), whose
    #: gradient after the backward is the input's
    in_out: dict = field(default_factory=dict)

    def acquire(self) -> None:
        """Give every array a gradient buffer: zeroed for inputs and temporaries; the outputs' ones are
        overwritten by `replay` (forward's buffers on the first backward, fresh ones after)."""
        for pair in self.inputs:
            if pair is not None and pair[0].grad is None:
                self.grads[id(pair[0])] = arrays.attach_grad(*pair)
        for pair in self.outputs:
            if pair is not None and pair[0].grad is None:
                self.grads[id(pair[0])] = arrays.attach_grad(*pair, zero=False)
        for group in self.groups:
            group.acquire()
        for array, root, offset in self.aliases:
            start, end = arrays.grad_span(root)
            array.grad = arrays.grad_view(start, end, offset, array)

    def find_aliases(self, recorded: list) -> None:
        """Sort the recorded arrays with gradients the bridge did not allocate into aliases (views such as
        ``x[1:]`` of an input, whose gradient is a view of the input's) and groups of temporaries whose
        gradients overlap (``t[0:n]`` and ``t[1:n+1]`` of a temporary ``t`` the op never passes itself).

        Views share gradient memory, so every backward call must give them one buffer again: a fresh buffer
        per array would split what one array's gradient accumulates.
        """
        roots = [pair[0] for pair in self.inputs + self.outputs if pair is not None]
        owned = {id(a) for a in roots}
        root_spans = [(arrays.grad_span(r), r) for r in roots]
        rest = []
        for a in recorded:
            if a.grad is None or id(a) in owned or a.size == 0:
                continue
            start, end = arrays.grad_span(a)
            root = next(((s, r) for (s, e), r in root_spans if s <= start and end <= e), None)
            if root is None:
                rest.append((start, end, a))
            else:
                self.aliases.append((a, root[1], int(a.grad.ptr) - root[0]))
        # overlapping gradient spans merged: one group per piece of memory the op's temporaries occupy
        spans = []
        for start, end, a in sorted(rest, key=lambda item: item[0]):
            if not spans or start >= spans[-1][1]:
                spans.append([start, end, []])
            spans[-1][1] = max(spans[-1][1], end)
            spans[-1][2].append(a)
        self.groups = [
            GradGroup(start, end, members[0].device, [(a, int(a.grad.ptr) - start) for a in members])
            for start, end, members in spans
        ]

    def release(self) -> None:
        """Drop every gradient buffer (the returned ones now belong to PyTorch)."""
        self.tape.gradients.clear()
        for pair in self.inputs + self.outputs:
            if pair is not None:
                pair[0].grad = None
        for group in self.groups:
            group.release()
        for array, _, _ in self.aliases:
            array.grad = None
        self.grads.clear()

    def replay(self, grad_outputs) -> list:
        """Input gradients (tensors, or None) for one backward call; see the module docstring."""
        self.acquire()
        try:
            for pair, grad_output in zip(self.outputs, grad_outputs):
                if pair is None:
                    continue
                if grad_output is None:
                    pair[0].grad.zero_()
                else:
                    self.grads[id(pair[0])].copy_(grad_output)
            _compat.refresh_struct_arguments(self.tape)  # structs hold their arrays' gradient pointers
            self.tape.backward()
            grads = [None if pair is None else self.grads[id(pair[0])] for pair in self.inputs]
            for k, j in self.in_out.items():
                if self.outputs[j] is not None:
                    grads[k] = self.grads[id(self.outputs[j][0])]
            return grads
        finally:
            self.release()


def record(op, call, device: torch.device, needs: list) -> Recording:
    """Run ``op`` on ``call`` with its launches recorded on a ``wp.Tape``: gradient buffers for the inputs that
    ``needs`` marks, the differentiable outputs, and whatever temporaries the function made with gradients."""
    in_out = {
        k: next(j for j, out in enumerate(op.outputs) if out.name == p.name)
        for k, p in enumerate(op.inputs)
        if p.name in op.in_out
    }
    recording = Recording(
        op,
        device,
        inputs=[
            pair if need and _differentiable(pair) and k not in in_out else None
            for k, (pair, need) in enumerate(zip(call.inputs, needs))
        ],
        outputs=[pair if _differentiable(pair) else None for pair in call.outputs],
        in_out=in_out,
    )
    recording.acquire()  # before recording: Warp records wp.copy only between arrays with gradients
    with warp.Tape() as recording.tape:
        op.run(call)
    recording.find_aliases(_compat.tape_arrays(recording.tape))
    return recording


class WarpFunction(torch.autograd.Function):
    """``WarpFunction.apply(op, recorded, *arguments)``; ``op`` is a `warp_zerostore.torch.ops.WarpOp`,
    ``recorded`` whether grad mode was on at the call and some argument requires grad (inside ``forward`` grad
    mode is always off, and ``ctx.needs_input_grad`` ignores it)."""

    @staticmethod
    def forward(ctx, op, recorded, *values):
        ctx.set_materialize_grads(False)
        device = op.device_of(values)
        with streams.on_torch_device(device), _compat.no_active_tape():
            call = op.prepare(values, device)
            ctx.recording = None
            if not recorded or op.pre_memory:
                # a PRE op's adjoint runs on its inputs as they were (op.backward), not on a replayed Tape
                op.run(call)
            else:
                needs = [isinstance(v, torch.Tensor) and v.requires_grad for v in values]
                ctx.recording = record(op, call, device, needs)
        out_tensors = tuple(tensor for _, tensor in call.outputs)
        ctx.mark_non_differentiable(*(tensor for array, tensor in call.outputs if not _differentiable((array, tensor))))
        if recorded:
            # PyTorch's version counters then catch an input or output modified in place before backward
            ctx.save_for_backward(*(v for v in values if isinstance(v, torch.Tensor)), *out_tensors)
            ctx.op, ctx.values, ctx.n_outputs = op, values, len(out_tensors)
        return out_tensors

    @staticmethod
    def backward(ctx, *grad_outputs):
        recording: Recording = ctx.recording
        saved = ctx.saved_tensors  # raises if an input or output was modified in place since forward
        if recording is None:
            return WarpFunction._adjoint_backward(ctx, saved, grad_outputs)
        if all(g is None for g, pair in zip(grad_outputs, recording.outputs) if pair is not None):
            return (None,) * (len(recording.inputs) + 2)
        with torch.no_grad(), streams.torch_stream(recording.device), _compat.no_active_tape():
            grads = recording.replay(grad_outputs)
        grads = [g if need else None for g, need in zip(grads, ctx.needs_input_grad[2:])]
        if torch.is_grad_enabled():  # create_graph=True: these gradients must refuse a second differentiation
            grads = refuse_double_backward(recording.op, grads, [*saved, *grad_outputs])
        return (None, None, *grads)

    @staticmethod
    def _adjoint_backward(ctx, saved, grad_outputs):
        op, needs = ctx.op, list(ctx.needs_input_grad[2:])
        if all(g is None for g in grad_outputs):
            return (None,) * (len(needs) + 2)
        outputs = saved[len(saved) - ctx.n_outputs :]
        with torch.no_grad():
            given = iter(op.backward(ctx.values, outputs, grad_outputs, needs))
        grads = [next(given) if need else None for need in needs]
        if torch.is_grad_enabled():
            grads = refuse_double_backward(op, grads, [*saved, *grad_outputs])
        return (None, None, *grads)


def _differentiable(pair) -> bool:
    """An (array, tensor) pair of a floating-point array; non-tensor arguments come as (value, None)."""
    return pair[1] is not None and arrays.is_differentiable(pair[0].dtype)


class _DifferentiableOnce(torch.autograd.Function):
    """Identity on gradients, in the graph of what they depend on; its backward raises DoubleBackwardError.

    The gradients come out of Warp with no graph, so this node takes the op's inputs and incoming gradients
    that require grad as extra (unused) arguments: differentiating a gradient with respect to any of them
    reaches this node, which refuses. (A node hanging off detached copies would be pruned by the engine and
    give silent zeros.)
    """

    @staticmethod
    def forward(ctx, message, count, *tensors):
        ctx.message = message
        return tuple(g.view_as(g) for g in tensors[:count])

    @staticmethod
    def backward(ctx, *_):
        raise DoubleBackwardError(ctx.message)


def refuse_double_backward(op, grads: list, depends_on: list) -> list:
    """``grads`` (tensors or None), each made to raise DoubleBackwardError if differentiated with respect to a
    tensor in ``depends_on`` (non-tensors and tensors that need no gradient are skipped)."""
    present = [g for g in grads if g is not None]
    depends_on = [t for t in depends_on if isinstance(t, torch.Tensor) and t.requires_grad]
    if not present or not depends_on:
        return grads
    wrapped = iter(_DifferentiableOnce.apply(double_backward_message(op), len(present), *present, *depends_on))
    return [None if g is None else next(wrapped) for g in grads]


def double_backward_message(op) -> str:
    return (
        f"{op.describe()} is differentiable once: its gradient was differentiated again (double backward, "
        f"e.g. create_graph=True then backward, gradgradcheck, Hessian-vector products), which the bridge does "
        f"not support. Keep this op out of the double-differentiated path, or write the gradient as a "
        f"bridged op of its own."
    )
