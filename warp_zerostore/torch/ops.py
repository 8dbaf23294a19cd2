"""A bridged op: a Python function that launches Warp kernels, called with tensors (``op``, ``kernel_op``).

A `WarpOp` knows the function's parameters (inputs, and the outputs it allocates), checks and wraps
the arguments of a call, and runs the function forward and backward; `custom_ops` registers that as a
PyTorch custom operator (once, when the op is made), `autograd` holds the Tape that backward replays.
"""

from __future__ import annotations

import functools
import inspect
import warnings
from dataclasses import dataclass
from typing import Any, Callable

import torch
import warp

from .. import _compat
from ..access import written
from ..codegen import pre_backward, warn_backward
from ..options import effective_zero_store
from . import arrays, custom_ops, streams
from .autograd import WarpFunction, record


@dataclass
class Output:
    """An output parameter: its annotation says the dtype, ``spec`` the shape (see `op`). ``in_out``: an input the
    function updates in place, returned updated; the function works on a copy (its ``spec`` is its own name)."""

    name: str
    annotation: Any
    spec: Any
    in_out: bool = False


@dataclass
class Call:
    """One call's arguments as the function sees them."""

    #: per input: (Warp array or plain value, the tensor a Warp array wraps or None)
    inputs: list
    #: per output: (Warp array, the tensor over the same memory)
    outputs: list


def _parameter_names(fn: Callable) -> list:
    return list(inspect.signature(fn).parameters)


def _call_by_name(fn: Callable, by_name: dict):
    """Call ``fn`` with the arguments its parameter names select (``lambda x: x.shape`` gets ``x``)."""
    return fn(**{name: by_name[name] for name in _parameter_names(fn)})


def _as_shape(value) -> tuple:
    return (value,) if isinstance(value, int) else tuple(value)


class WarpOp:
    """A differentiable PyTorch op made from a function that launches Warp kernels; see `op`, which makes it.

    Call it with the function's input parameters (tensors or Python values); it returns the outputs as tensors.

    Args:
        fn: The function that launches Warp kernels on Warp arrays.
        outputs: ``{output parameter: shape}``, as in `op`.
        in_out: Inputs the function updates in place: it gets a copy of each, returned updated, first.
        signature: The op's parameters; None: ``fn``'s signature.
        globals_: Where the annotations are resolved; None: ``fn``'s globals.
        name: The op's name in messages; None: the function's qualified name.
        location: ``file:line`` for messages; None: where the function is defined.
        adjoint: ``adjoint(args, adj_args, device)`` runs the function's adjoint directly (a `kernel_op`'s one
            launch); None: backward runs ``fn`` again on a ``wp.Tape`` and replays that.
        pre_memory: The adjoint runs on the in-out inputs as they were before the op (a ``zero_store=True``
            kernel's PRE backward), not on the updated copies.

    Raises:
        TypeError: ``*args``/``**kwargs`` parameters, or ``outputs`` not a non-empty dict.
        ValueError: ``outputs`` names something that is not a parameter.
    """

    def __init__(
        self,
        fn,
        outputs: dict,
        *,
        in_out=(),
        signature=None,
        globals_=None,
        name=None,
        location=None,
        adjoint=None,
        pre_memory: bool = False,
    ):
        code = getattr(fn, "__code__", None)
        self.fn = fn
        #: ``adjoint(args, adj_args)`` runs the function's adjoint directly (a kernel_op's one launch); without
        #: it, backward runs ``fn`` again on a ``wp.Tape`` and replays that
        self.adjoint = adjoint
        #: the adjoint runs on the in-out arrays' values from before the op (a zero_store=True kernel's PRE
        #: backward, codegen/replay.py), not on the updated copies
        self.pre_memory = pre_memory
        self.name = name or getattr(fn, "__qualname__", repr(fn))
        self.location = location or (f"{code.co_filename}:{code.co_firstlineno}" if code else "unknown location")
        signature = signature or inspect.signature(fn)
        globals_ = getattr(fn, "__globals__", {}) if globals_ is None else globals_
        params = signature.parameters
        where = self.describe()
        if any(p.kind in (p.VAR_POSITIONAL, p.VAR_KEYWORD) for p in params.values()):
            raise TypeError(f"{where}: *args and **kwargs parameters are not supported; name every parameter.")
        in_out = tuple(in_out or ())
        if not isinstance(outputs, dict) or not (outputs or in_out):
            raise TypeError(
                f"{where}: outputs must be a non-empty dict from output parameter name to its shape, e.g. "
                f"outputs={{'y': 'x'}} (y shaped like input x), or in_out must name an input the function updates "
                f"in place; got outputs={outputs!r}, in_out={in_out!r}."
            )
        unknown = [n for n in (*outputs, *in_out) if n not in params]
        both = [n for n in in_out if n in outputs]
        if both:
            raise ValueError(f"{where}: {both} are in both outputs and in_out; an argument is one or the other.")
        if unknown:
            raise ValueError(
                f"{where}: outputs names {unknown}, which are not parameters of the function "
                f"(its parameters: {list(params)}). Add them as parameters the function writes into."
            )
        self.order = list(params)
        self.inputs = [
            arrays.Param(where, p.name, arrays.resolve_annotation(p.annotation, globals_))
            for p in params.values()
            if p.name not in outputs
        ]
        input_names = [p.name for p in self.inputs]
        self.in_out = in_out
        # the updated in-out arrays first (in parameter order), then the outputs (in the order of `outputs`)
        self.outputs = [
            Output(
                n,
                self._output(n, arrays.resolve_annotation(params[n].annotation, globals_), n, input_names).annotation,
                n,
                True,
            )
            for n in self.order
            if n in in_out
        ]
        self.outputs += [
            self._output(name, arrays.resolve_annotation(params[name].annotation, globals_), spec, input_names)
            for name, spec in outputs.items()
        ]
        self.signature = signature.replace(parameters=[p for p in params.values() if p.name not in outputs])
        functools.update_wrapper(self, fn, updated=())
        self.__signature__ = self.signature
        #: the registered custom operators, or None (then `unregistered` says which parameters kept it out)
        self.registered = None
        self.unregistered = custom_ops.unregistrable(self, self.signature)
        if not self.unregistered:
            self.registered = custom_ops.register(self, self.signature)

    def _output(self, name: str, annotation, spec, input_names: list) -> Output:
        where = f"{self.describe()}: output '{name}'"
        if not arrays.is_array_annotation(annotation):
            raise TypeError(
                f"{where} must be annotated wp.array(dtype=..., ndim=...) so the bridge knows what to allocate, "
                f"got {'no annotation' if annotation is arrays.EMPTY else repr(annotation)}."
            )
        if isinstance(spec, str):
            if spec not in input_names:
                raise ValueError(f"{where} is shaped like '{spec}', which is not an input (inputs: {input_names}).")
        elif isinstance(spec, int) or (isinstance(spec, tuple) and all(isinstance(n, int) for n in spec)):
            pass
        elif callable(spec):
            missing = [n for n in _parameter_names(spec) if n not in input_names]
            if missing:
                raise ValueError(
                    f"{where}: its shape function takes {missing}, which are not inputs (inputs: {input_names}); "
                    f"its parameter names pick the inputs it is called with."
                )
        else:
            raise TypeError(
                f"{where}: shape must be an input's name, an int or tuple of ints, or a function of inputs, "
                f"got {spec!r}."
            )
        if annotation.dtype is Any and not isinstance(spec, str):
            raise TypeError(
                f"{where} is annotated with dtype=Any; give it a concrete dtype, or take shape and dtype from an "
                f"input: outputs={{'{name}': '{input_names[0] if input_names else 'x'}'}}."
            )
        return Output(name, annotation, spec)

    def describe(self) -> str:
        """How messages name the op.

        Returns:
            ``warp_zerostore.torch op 'name' (file:line)``.
        """
        return f"warp_zerostore.torch op '{self.name}' ({self.location})"

    def __repr__(self) -> str:
        return f"<{self.describe()}{self.signature}>"

    # -- one call -------------------------------------------------------------------------------------------

    def __call__(self, *args, **kwargs):
        if torch.compiler.is_compiling():
            if self.registered is None:
                return self._call_uncompiled(args, kwargs)
            return self.registered.forward(*args, **kwargs)  # the schema binds them: Dynamo traces nothing of ours
        return self._call(args, kwargs)

    def _call(self, args, kwargs):
        values = self._bind(args, kwargs)
        if self.registered is not None and torch._C._are_functorch_transforms_active():
            return custom_ops.FunctorchCall.apply(self.registered, *values)
        # eager: the autograd.Function path, which records the op's Tape in forward when a gradient is wanted
        # and replays it in backward; the registered operator's Autograd kernel runs the same in eager mode,
        # this skips only the dispatcher (and keeps the bridge's own errors for devices it has no kernel for)
        recorded = torch.is_grad_enabled() and any(isinstance(v, torch.Tensor) and v.requires_grad for v in values)
        outputs = WarpFunction.apply(self, recorded, *values)
        return outputs[0] if len(outputs) == 1 else outputs

    #: ops the schema cannot carry, under torch.compile: a graph break, then eager
    _call_uncompiled = torch.compiler.disable(_call)

    def _bind(self, args, kwargs) -> list:
        try:
            bound = self.signature.bind(*args, **kwargs)
        except TypeError as e:
            raise TypeError(f"{self.describe()}: {e}; call it as {self.name}{self.signature}.") from None
        bound.apply_defaults()
        values = [bound.arguments[p.name] for p in self.inputs]
        for param, value in zip(self.inputs, values):
            arrays.check_kind(param, value)  # before the dispatcher, whose own errors name no argument
        return values

    # -- the registered operators' implementations ------------------------------------------------------------

    def forward(self, values) -> torch.Tensor | tuple:
        """Run the function on the tensors ``values`` (the registered operator's implementation).

        Args:
            values: The input values, in the order of the op's inputs.

        Returns:
            The outputs: one tensor, or a tuple of them.
        """
        device = self.device_of(values)
        with streams.on_torch_device(device), _compat.no_active_tape():
            call = self.prepare(values, device)
            self.run(call)
        outputs = tuple(tensor for _, tensor in call.outputs)
        return outputs[0] if len(outputs) == 1 else outputs

    def fake_outputs(self, values) -> torch.Tensor | tuple:
        """What `forward` returns, as empty tensors of the right shapes and dtypes (``torch.compile``'s fake
        tensors, possibly of symbolic shapes), also the op's Meta kernel. Checks nothing but a real meta tensor's
        device: under compile, a wrong dtype, shape or device fails when the op runs, with the bridge's error.

        Args:
            values: The input values (fake tensors under compile), in the order of the op's inputs.

        Returns:
            Empty output tensors: one, or a tuple of them.
        """
        tensors = [(p, v) for p, v in zip(self.inputs, values) if isinstance(v, torch.Tensor)]
        if not tensors:
            self.device_of(values)  # raises: no tensor, no device
        for param, tensor in tensors:
            # a real meta tensor (not compile's fake of one) reaches this as the op's Meta kernel: refuse it here
            if tensor.device.type == "meta" and not torch._subclasses.fake_tensor.is_fake(tensor):
                arrays.check_device(param, tensor, tensor.device, param.name)  # raises
        by_name = {
            p.name: arrays.layout_of(p, v) if isinstance(v, torch.Tensor) else v for p, v in zip(self.inputs, values)
        }
        outputs = tuple(arrays.empty_output(*self._layout(out, by_name), tensors[0][1].device) for out in self.outputs)
        return outputs[0] if len(outputs) == 1 else outputs

    def backward(self, values, outputs, grad_outputs, needs) -> list:
        """The gradients of the inputs ``needs`` marks (a list, in input order), given the forward's ``outputs`` and
        the gradients PyTorch passes for them (None: no gradient).

        Args:
            values: The input values, in the order of the op's inputs.
            outputs: The forward's output tensors.
            grad_outputs: The gradients PyTorch passes for the outputs (None: none for that output).
            needs: Per input, whether its gradient is wanted.

        Returns:
            The wanted inputs' gradients, in input order (zeros where the function gave none).
        """
        device = self.device_of(values)
        if self.adjoint is not None:
            with streams.torch_stream(device) as wp_device, _compat.no_active_tape():
                grads = self._adjoint_gradients(values, outputs, grad_outputs, needs, device, wp_device)
        else:
            # the function runs again, on fresh outputs, so launches that name no device need the default one
            with torch.no_grad(), streams.on_torch_device(device), _compat.no_active_tape():
                grads = record(self, self.prepare(values, device), device, needs).replay(grad_outputs)
        return [g if g is not None else torch.zeros_like(v) for g, v, n in zip(grads, values, needs) if n]

    def _adjoint_gradients(self, values, outputs, grad_outputs, needs, device, wp_device) -> list:
        first = next(p.name for p, v in zip(self.inputs, values) if isinstance(v, torch.Tensor))
        inputs = [arrays.input_array(p, v, device, first) for p, v in zip(self.inputs, values)]
        by_name = {p.name: value for p, (value, _) in zip(self.inputs, inputs)}
        position = {p.name: k for k, p in enumerate(self.inputs)}
        # an in-out array's adjoint carries the gradient through the update: it gets a buffer, wanted or not
        grads = [
            arrays.attach_grad(array, tensor)
            if (need or p.name in self.in_out) and tensor is not None and arrays.is_differentiable(array.dtype)
            else None
            for p, (array, tensor), need in zip(self.inputs, inputs, needs)
        ]
        for out, tensor, grad_output in zip(self.outputs, outputs, grad_outputs):
            _, dtype = self._layout(out, by_name)
            if out.in_out:
                # seeded with the updated array's gradient; after the adjoint it is the input's. The adjoint
                # runs on the values from before the op (PRE) or on the updated copy (POST, as a plain Tape).
                before, _ = inputs[position[out.name]]
                grad = grads[position[out.name]]
                if grad is not None and grad_output is not None:
                    grad.copy_(grad_output.reshape(grad.shape))
                if not self.pre_memory:
                    updated = arrays.wrap(tensor, dtype)
                    updated.grad = before.grad
                    by_name[out.name] = updated
                continue
            array = arrays.wrap(tensor, dtype)
            if arrays.is_differentiable(dtype):
                # a copy: store adjoints that zero what they read must not zero the caller's grad_output
                grad = arrays.attach_grad(array, tensor, zero=grad_output is None)
                if grad_output is not None:
                    grad.copy_(grad_output)
            by_name[out.name] = array
        args = [by_name[name] for name in self.order]
        self.adjoint(args, [a.grad if isinstance(a, warp.array) else None for a in args], wp_device)
        return grads

    def device_of(self, values) -> torch.device:
        """The device the op runs on: the first tensor argument's.

        Args:
            values: The input values, in the order of the op's inputs.

        Returns:
            That tensor's ``torch.device``.

        Raises:
            ValueError: No argument is a tensor.
        """
        for param, value in zip(self.inputs, values):
            if isinstance(value, torch.Tensor):
                arrays.check_device(param, value, value.device, param.name)
                return value.device
        raise ValueError(f"{self.describe()} got no tensor argument, so it has no device to run on; pass a tensor.")

    def prepare(self, values, device: torch.device) -> Call:
        """Check and wrap the arguments, allocate the outputs (zero-filled, on ``device``).

        Args:
            values: The input values, in the order of the op's inputs.
            device: The device the op runs on (`device_of`).

        Returns:
            The call's Warp arrays over the inputs and the new outputs.
        """
        first = next(p.name for p, v in zip(self.inputs, values) if isinstance(v, torch.Tensor))
        inputs = [arrays.input_array(p, v, device, first) for p, v in zip(self.inputs, values)]
        by_name = {p.name: value for p, (value, _) in zip(self.inputs, inputs)}
        tensors = {p.name: tensor for p, (_, tensor) in zip(self.inputs, inputs)}
        outputs = []
        for out in self.outputs:
            array, tensor = self._allocate(out, by_name, device)
            if out.in_out:  # the function updates a copy: the caller's tensor keeps its values
                tensor.copy_(tensors[out.name].reshape(tensor.shape))
            outputs.append((array, tensor))
        return Call(inputs, outputs)

    def _allocate(self, out: Output, by_name: dict, device: torch.device):
        return arrays.output_array(*self._layout(out, by_name), device)

    def _layout(self, out: Output, by_name: dict) -> tuple:
        """``(shape, Warp dtype)`` of an output, given the inputs by name (Warp arrays, or their layouts)."""
        where = f"{self.describe()}: output '{out.name}'"
        dtype = out.annotation.dtype
        if isinstance(out.spec, str):
            like = by_name[out.spec]
            if not isinstance(like, (warp.array, arrays.Layout)):
                raise TypeError(f"{where} is shaped like '{out.spec}', which must then be a tensor, got {like!r}.")
            shape = like.shape
            dtype = like.dtype if dtype is Any else dtype
        elif callable(out.spec):
            shape = _as_shape(_call_by_name(out.spec, by_name))
        else:
            shape = _as_shape(out.spec)
        if len(shape) != out.annotation.ndim:
            raise ValueError(
                f"{where} is {arrays.describe(out.annotation)} but its shape {shape} has {len(shape)} "
                f"dimensions; make the shape and the annotation's ndim agree."
            )
        return shape, dtype

    def run(self, call: Call) -> None:
        """Call the function with Warp arrays over the call's tensors.

        Args:
            call: What `prepare` made.
        """
        by_name = {p.name: value for p, (value, _) in zip(self.inputs, call.inputs)}
        by_name.update({out.name: array for out, (array, _) in zip(self.outputs, call.outputs)})
        self.fn(*(by_name[name] for name in self.order))


def op(outputs: dict | None = None, *, in_out=(), name: str | None = None):
    """Decorator: a function that launches Warp kernels on Warp arrays becomes a differentiable PyTorch op.

    ``outputs`` maps each output parameter (annotated ``wp.array(dtype=..., ndim=...)``) to its shape: an
    input's name (same shape, and same dtype when annotated ``dtype=Any``), an int or tuple, or a function
    whose parameter names pick the inputs it gets (``lambda x, n: (x.shape[0], n)``). The op takes the other
    parameters (tensors, or Python values), allocates the outputs zero-filled, calls the function with Warp
    arrays over the tensors' memory, and returns the outputs as tensors: one tensor, or a tuple in the order
    of ``outputs``. ``in_out`` names inputs the function updates in place: the function gets a copy of each,
    which the op returns updated (first, in parameter order), and the caller's tensor keeps its values.

    Guarantees (details in `warp_zerostore.torch`): gradients are PyTorch autograd's for the same math;
    Warp never touches a tensor's ``.grad`` (no leaf double counting); every backward call is independent
    (``retain_graph``, gradcheck's reentrancy) and leaves ``grad_output`` unchanged; double backward raises
    `DoubleBackwardError`; contiguous inputs of the right dtype are not copied, others are copied once
    (non-contiguous) or refused with an error naming the argument; kernels keep their ``zero_store`` flag;
    on CUDA the work runs on PyTorch's current stream without synchronising the device. The function must
    write only its outputs and its ``in_out`` copies.

    Args:
        outputs: ``{output parameter: shape}``: an input's name, an int or tuple, or a function of inputs.
        in_out: Inputs the function updates in place (returned updated; the caller's tensors are not changed).
        name: The op's name in messages; None: the function's qualified name.

    Returns:
        A decorator that turns the function into a `WarpOp`.

    Example:
        ```python
        import torch
        import warp_zerostore as wp
        import warp_zerostore.torch as wpt

        @wp.kernel
        def scale(x: wp.array(dtype=float), s: float, y: wp.array(dtype=float)):
            i = wp.tid()
            y[i] = s * x[i]

        @wpt.op(outputs={"y": "x"})
        def scaled(x: wp.array(dtype=float), s: float, y: wp.array(dtype=float)):
            wp.launch(scale, dim=x.shape, inputs=[x, s, y])

        x = torch.ones(4, requires_grad=True)
        scaled(x, 3.0).sum().backward()
        assert torch.equal(x.grad, torch.full((4,), 3.0))
        ```
    """

    def decorate(fn):
        return WarpOp(fn, {} if outputs is None else outputs, in_out=in_out, name=name)

    return decorate


def _refuse_written_inputs(kernel, label: str, names: list, outputs: dict, in_out: tuple) -> None:
    """A kernel that writes a parameter passed as an input would change the caller's tensor behind PyTorch's back
    (and the registered operator says it mutates nothing): refused where the source surely writes it, warned
    where the analysis only cannot rule it out."""
    inputs = [n for n in names if n not in outputs and n not in in_out]
    for parameter, surely in written(kernel, inputs):
        where = f"kernel_op '{label}' ({_compat.kernel_source_location(kernel)}): the kernel"
        remedy = (
            f"Declare it in_out=({parameter!r},): the op then updates a copy and returns it, the caller's tensor "
            f"keeps its values, and the gradient flows through the update; or make it an output."
        )
        if surely:
            raise ValueError(
                f"{where} writes its input '{parameter}', which would change the caller's tensor. {remedy}"
            )
        warnings.warn(
            f"{where} may write its input '{parameter}' (a use the bridge cannot follow), which would change the "
            f"caller's tensor. {remedy}",
            stacklevel=3,
        )


def kernel_op(kernel, outputs: dict | None = None, *, in_out=(), dim=None, name: str | None = None) -> WarpOp:
    """One kernel as a differentiable PyTorch op: the shortcut for an `op` that makes one launch.

    The op's parameters are the kernel's, less the ``outputs`` (as in `op`). ``dim`` is the launch
    grid: an argument's name (its array shape), an int or tuple, or a function of the inputs; by default the
    shape of the first output (an ``in_out`` array first).

    A kernel that writes an input updates it in place: name it in ``in_out``. The op then launches the kernel
    on a copy, returns the copy updated (before the outputs), leaves the caller's tensor as it was, and takes
    the gradient through the update (the in-out array's adjoint always gets a buffer). Its backward runs on
    the values from before the op for a ``zero_store=True`` kernel (its PRE backward, exact for a read before
    the update too), on the updated copy for others (what a plain ``wp.Tape`` gives). A kernel whose source
    writes an input not so named is refused; one that only may write it is warned about.

    Args:
        kernel: The ``wp.Kernel``.
        outputs: ``{output parameter: shape}``, as in `op`.
        in_out: Inputs the kernel updates in place (returned updated; the caller's tensors are not changed).
        dim: The launch grid: an argument's name, an int or tuple, or a function of the inputs; None: the shape
            of the first output.
        name: The op's name in messages; None: the kernel's key.

    Returns:
        The `WarpOp`.

    Raises:
        TypeError: ``kernel`` is not a Warp kernel.
        ValueError: ``dim`` names something that is not a kernel parameter, or the kernel writes an input that
            is neither an output nor in ``in_out``.

    Example:
        ```python
        from typing import Any
        import torch
        import warp_zerostore as wp
        import warp_zerostore.torch as wpt

        @wp.kernel
        def square(x: wp.array(dtype=Any), y: wp.array(dtype=Any)):
            i = wp.tid()
            y[i] = x[i] * x[i]

        squared = wpt.kernel_op(square, outputs={"y": "x"})
        x = torch.arange(3.0, requires_grad=True)
        squared(x).sum().backward()
        assert torch.equal(x.grad, 2 * x.detach())
        ```
    """
    if not isinstance(kernel, _compat.Kernel):
        raise TypeError(f"kernel_op takes a @wp.kernel, got {kernel!r}; for a Python function use @wpt.op.")
    outputs = {} if outputs is None else outputs
    in_out = tuple(in_out or ())
    fn = _compat.kernel_function(kernel)
    signature = inspect.signature(fn)
    names = list(signature.parameters)
    first_output = next(iter([*in_out, *outputs]), None) if isinstance(outputs, dict) else None
    label = name or _compat.kernel_key(kernel)
    _refuse_written_inputs(kernel, label, names, outputs, in_out)
    if isinstance(dim, str) and dim not in names:
        raise ValueError(f"kernel_op '{label}': dim names '{dim}', which is not a kernel parameter ({names}).")

    def grid(args):
        by_name = dict(zip(names, args))
        if dim is None or isinstance(dim, str):
            return by_name[dim or first_output].shape
        if callable(dim):
            return _as_shape(_call_by_name(dim, by_name))
        return dim

    def launch(*args):
        warp.launch(kernel, dim=grid(args), inputs=list(args))

    # A zero_store=True kernel's adjoint runs on the in-out arrays as they were before the op: its PRE backward
    twin = pre_backward(kernel) if in_out and effective_zero_store(kernel) is True else None
    pre_memory = twin is not None  # None too for a generic kernel's overload: the updated copy, as a plain Tape
    adjoint_kernel = twin or kernel

    def launch_adjoint(args, adj_args, device):
        # what wp.Tape.backward does for one recorded launch: gradients of arrays, none for Python values
        warn_backward(adjoint_kernel)
        warp.launch(
            adjoint_kernel, dim=grid(args), inputs=list(args), adj_inputs=list(adj_args), adjoint=True, device=device
        )

    bridged = WarpOp(
        launch,
        outputs,
        in_out=in_out,
        pre_memory=pre_memory,
        signature=signature,
        globals_=getattr(fn, "__globals__", {}),
        name=label,
        location=_compat.kernel_source_location(kernel),
        adjoint=launch_adjoint,
    )
    functools.update_wrapper(bridged, fn, updated=())
    return bridged
