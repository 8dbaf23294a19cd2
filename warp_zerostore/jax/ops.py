"""Bridged ops: a Warp kernel (`kernel_op`) or a function of several launches (`op`) as a JAX function.

A `JaxOp` binds a call's arguments, picks the `signature.Specialization` for their dtypes, and
calls a ``jax.custom_vjp`` whose forward and backward are each one Warp FFI call (``jax_callable``) running
`calls`. Forward mode and differentiating the backward are refused with `DifferentiationError`.
"""

from __future__ import annotations

import functools
import sys
import warnings
from typing import Any, Callable

import jax
import jax.numpy as jnp
import numpy as np
import warp

from .. import _compat
from ..access import argument_access, fully_stored, written
from ..codegen import pre_backward, warn_backward
from ..copy_adjoint import gradients_kept
from ..options import effective_zero_store
from .calls import GRAD, OUT, Calls
from .signature import (
    IN_OUT,
    OUTPUT,
    BridgeError,
    Param,
    output_shape,
    parameters_of,
    python_scalar_type,
    specialize,
)


class DifferentiationError(NotImplementedError):
    """Forward mode (``jax.jvp``, ``jacfwd``) or a second derivative of a bridged op, which it does not have."""


def _jax_callable():
    module = _compat.jax_ffi_module()
    if module is None:
        raise ImportError(
            f"warp_zerostore.jax needs Warp's JAX FFI (warp.jax_experimental.ffi.jax_callable, warp-lang 1.9 or later); this is warp-lang {warp.__version__}."
        )
    return module.jax_callable


def _check_platform(op) -> None:
    platform = jax.default_backend()
    platforms = _compat.jax_ffi_platforms()
    if platform in ("cpu", "gpu", "cuda") and ("cuda" if platform == "gpu" else platform) not in platforms:
        raise BridgeError(
            f"{op.describe()}: warp-lang {warp.__version__}'s JAX FFI runs on {sorted(platforms)} only, and JAX's "
            f"default backend here is '{platform}'. Use warp-lang 1.19 (CPU and CUDA) or run JAX on a GPU."
        )


def _refuse_jvp(fn: Callable, message: str) -> Callable:
    """``fn`` with a JVP rule that raises: JAX asks for it only when ``fn``'s inputs carry tangents."""
    guarded = jax.custom_jvp(fn)

    def jvp(primals, tangents):
        raise DifferentiationError(message)

    guarded.defjvp(jvp)
    return guarded


def _innermost_code(fn):
    while getattr(fn, "__wrapped__", None) is not None:
        fn = fn.__wrapped__
    return getattr(fn, "__code__", None)


# jax.linearize traces a custom_vjp op as jax.vjp does, and only the linear function it returns fails (with a
# bare TypeError, outside the op): the op is refused while jax.linearize's own frame is on the stack.
_LINEARIZE_CODE = _innermost_code(jax.linearize)


def _under_linearize() -> bool:
    frame = sys._getframe(1)
    while frame is not None:
        if frame.f_code is _LINEARIZE_CODE:
            return True
        frame = frame.f_back
    return False


class _Specialized:
    """The differentiable JAX function of one op for one set of input dtypes."""

    def __init__(self, op: JaxOp, spec):
        self.op = op
        self.spec = spec
        self.calls = Calls(op, spec)
        jax_callable = _jax_callable()
        _, _, n_fwd = self.calls.forward_signature()
        _, _, n_bwd = self.calls.backward_signature()
        options = {"vmap_method": "broadcast_all"}
        if any(not p.is_array for p in op.params):
            options["graph_mode"] = _compat.jax_graph_mode_none()  # scalars are read on the host in the call
        self.forward_ffi = jax_callable(self.calls.forward_function(), num_outputs=n_fwd, **options)
        self.backward_ffi = (
            jax_callable(self.calls.backward_function(), num_outputs=n_bwd, **options) if n_bwd else None
        )
        self.input_names = [p.name for p in self.calls.inputs]
        fn = jax.custom_vjp(self._primal)
        fn.defvjp(self._fwd, self._bwd)
        self.apply = jax.jit(fn)

    def _shapes(self, inputs) -> dict:
        return {n: tuple(x.shape) for n, x in zip(self.input_names, inputs)}

    def _primal(self, *inputs):
        shapes = self._shapes(inputs)
        where = self.op.describe()
        dims = {
            p.name + OUT: output_shape(_like(p) if p.role == IN_OUT else p, shapes, self.spec.types, where)
            for p in self.calls.returns
        }
        forward = _refuse_jvp(functools.partial(self.forward_ffi, output_dims=dims), self._second_order_message())
        return tuple(forward(*inputs))

    def _second_order_message(self) -> str:
        return (
            f"{self.op.describe()}: its gradient is not differentiable (no second derivatives: jax.hessian, grad of "
            f"grad, jacfwd of grad). Differentiate once, or write the derivative as a Warp kernel and bridge that."
        )

    def _fwd(self, *inputs):
        outputs = self._primal(*inputs)
        return outputs, (inputs, outputs)

    def _bwd(self, residuals, cotangents):
        inputs, outputs = residuals
        if self.backward_ffi is None:
            return tuple(None for _ in inputs)
        by_return = dict(zip([p.name for p in self.calls.returns], zip(outputs, cotangents)))
        args = list(inputs)
        args += [by_return[p.name][0] for p in self.calls.pure_outputs]
        args += [by_return[p.name][1] for p in self.calls.float_returns]
        shapes = self._shapes(inputs)
        dims = {}
        for p in self.calls.grads:
            dims[p.name + GRAD] = output_shape(_like(p), shapes, self.spec.types, self.op.describe())
        backward = _refuse_jvp(functools.partial(self.backward_ffi, output_dims=dims), self._second_order_message())
        grads = iter(backward(*args))
        return tuple(next(grads) if n in self.spec.differentiable else None for n in self.input_names)


def _like(p: Param) -> Param:
    """An in-out or input array's own shape, as an output spec."""
    return Param(p.name, p.annotation, OUTPUT, p.name)


class JaxOp:
    """A differentiable JAX function made from Warp launches; see `op` and `kernel_op`, which make them.

    Call it with JAX arrays (and scalars) for the function's inputs; it returns the outputs and the new values of
    the ``in_out`` arrays.

    Args:
        fn: The Python function whose parameters (annotated like a kernel's) are the op's.
        outputs: ``{output parameter: shape}``: the name of an input it is shaped like, or a tuple.
        in_out: Names of arrays updated in place.
        zero_outputs: Zero-fill outputs before the function runs.
        name: The op's name in messages; None: the function's qualified name.
        module: The Python module the op is reported in; None: the function's.
        location: ``file:line`` for messages; None: where the function is defined.
    """

    #: whether the backward may write the adjoint buffers of outputs (then it gets private cotangent copies)
    writes_output_adjoints = True
    #: whether the backward re-runs writes into in-out arrays (then it gets a private copy of their old value)
    replay_writes = True

    def __init__(
        self, fn: Callable, outputs: dict, in_out=(), *, zero_outputs=True, name=None, module=None, location=None
    ):
        code = getattr(fn, "__code__", None)
        self.fn = fn
        self.zero_outputs = zero_outputs
        self.name = name or getattr(fn, "__qualname__", repr(fn))
        self.location = location or (f"{code.co_filename}:{code.co_firstlineno}" if code else "unknown location")
        self.module = module or getattr(fn, "__module__", __name__)
        self.params = parameters_of(fn, outputs, in_out, self.describe())
        self._specialized: dict = {}

    def describe(self) -> str:
        """How messages name the op.

        Returns:
            ``JAX op 'name' (file:line)``.
        """
        return f"JAX op '{self.name}' ({self.location})"

    def __repr__(self) -> str:
        return f"<{self.describe()}>"

    def __call__(self, *args, **kwargs):
        _check_platform(self)
        values = self._bind(args, kwargs)
        spec = specialize(self.params, values, self.describe())
        key = tuple((n, np.dtype(v.dtype).str, v.ndim) for n, v in values.items())
        specialized = self._specialized.get(key)
        if specialized is None:
            specialized = self._specialized[key] = _Specialized(self, spec)
        if _under_linearize() and any(isinstance(v, jax.core.Tracer) for v in values.values()):
            raise DifferentiationError(self._forward_mode_message())
        try:
            results = specialized.apply(*[values[n] for n in specialized.input_names])
        except TypeError as e:
            if "forward-mode" not in str(e) and "jvp" not in str(e):
                raise
            raise DifferentiationError(self._forward_mode_message()) from e
        return results[0] if len(results) == 1 else results

    def _forward_mode_message(self) -> str:
        return (
            f"{self.describe()}: forward-mode differentiation (jax.jvp, jax.jacfwd, jax.linearize) is not "
            f"supported; it has reverse mode only. Use jax.grad, jax.vjp or jax.jacrev."
        )

    def _bind(self, args, kwargs) -> dict:
        inputs = [p for p in self.params if p.takes_input]
        names = [p.name for p in inputs]
        if len(args) > len(inputs):
            raise BridgeError(
                f"{self.describe()}: takes {len(inputs)} arguments ({', '.join(names)}), got {len(args)}."
            )
        given = dict(zip(names, args))
        for name, value in kwargs.items():
            if name not in names:
                outputs = [p.name for p in self.params if p.role == OUTPUT]
                hint = " (outputs are allocated by the op, not passed)" if name in outputs else ""
                raise BridgeError(f"{self.describe()}: unexpected argument '{name}'{hint}; it takes {names}.")
            if name in given:
                raise BridgeError(f"{self.describe()}: argument '{name}' given twice.")
            given[name] = value
        missing = [n for n in names if n not in given]
        if missing:
            raise BridgeError(f"{self.describe()}: missing argument(s) {missing}.")
        values = {}
        for p in inputs:
            value = given[p.name]
            if p.is_array:
                values[p.name] = jnp.asarray(value)
            else:
                scalar = python_scalar_type(p.annotation)
                dtype = None if scalar is Any else _compat.numpy_scalar(scalar)
                values[p.name] = jnp.reshape(jnp.asarray(value, dtype=dtype), (1,))
        return values

    # -- what runs inside the FFI call (see calls.py)

    def writes_in_full(self, name: str, values: dict) -> bool:
        """Whether running the op stores every element of output ``name`` (then it needs no zero fill).

        Args:
            name: An output parameter.
            values: ``{parameter: Warp array or scalar}`` of this call.

        Returns:
            True when no zero fill is needed; False here (a function's stores are not analysed).
        """
        return False

    def reads_output(self, name: str) -> bool:
        """Whether the op's backward may read the value of output ``name``.

        Args:
            name: An output parameter.

        Returns:
            True here (a function's reads are not analysed).
        """
        return True

    def run(self, values: dict) -> None:
        """Run the forward launches (inside the FFI call).

        Args:
            values: ``{parameter: Warp array or scalar}`` over JAX's buffers.

        Raises:
            NotImplementedError: Always; `FunctionOp` and `KernelOp` implement it.
        """
        raise NotImplementedError

    def run_backward(self, values: dict, adjoints: dict) -> None:
        """Run the adjoint launches (inside the FFI call of the backward).

        Args:
            values: ``{parameter: Warp array or scalar}`` over JAX's buffers, the residuals included.
            adjoints: ``{parameter: adjoint array or None}``: cotangents in, gradients out.

        Raises:
            NotImplementedError: Always; `FunctionOp` and `KernelOp` implement it.
        """
        raise NotImplementedError


class FunctionOp(JaxOp):
    """A function of several launches; its backward replays them on a Tape (see `op`, which makes it).

    Args:
        fn: The function that launches the kernels.
        outputs: ``{output parameter: shape}``.
        in_out: Names of arrays updated in place.
        tape: Makes the Tape the backward replays on; None: ``wp.Tape``.
        zero_outputs: Zero-fill outputs before the function runs.
        name: The op's name in messages.
    """

    def __init__(self, fn, outputs, in_out=(), *, tape: Callable | None = None, zero_outputs=True, name=None):
        super().__init__(fn, outputs, in_out, zero_outputs=zero_outputs, name=name)
        self.tape = tape or warp.Tape

    def run(self, values: dict) -> None:
        """Call the function on Warp arrays over JAX's buffers.

        Args:
            values: ``{parameter: Warp array or scalar}``.
        """
        self.fn(**values)

    def run_backward(self, values: dict, adjoints: dict) -> None:
        """Re-run the function on a Tape and run its backward, the cotangents as the outputs' gradients.

        Args:
            values: ``{parameter: Warp array or scalar}``.
            adjoints: ``{parameter: adjoint array or None}``.
        """
        for name, adjoint in adjoints.items():
            if adjoint is not None:
                values[name].grad = adjoint
        tape = self.tape()
        # The cotangents are in place before the function runs again: Warp's forward wp.copy would copy the
        # source's (zero) gradient over the destination's cotangent in the copied window, and the source would
        # get no gradient. Copies copy values only here; their adjoints are recorded as usual.
        with gradients_kept([v for v in values.values() if isinstance(v, warp.array)]), tape:
            self.fn(**values)
        tape.backward()


class KernelOp(JaxOp):
    """One kernel launch; its backward is the kernel's adjoint launch (see `kernel_op`, which makes it).

    Args:
        kernel: The ``wp.Kernel``.
        outputs: ``{output parameter: shape}``.
        in_out: Names of arrays updated in place (the kernel needs ``zero_store=True``).
        dim: The launch dimension; None: the first array's shape.
        zero_outputs: Zero-fill outputs the kernel does not provably store in full.
        name: The op's name in messages; None: the kernel's key.

    Raises:
        BridgeError: ``in_out`` is given for a kernel without ``zero_store=True``.
    """

    replay_writes = False  # Warp's adjoint kernels replay loads, not stores or atomics

    def __init__(self, kernel, outputs, in_out=(), *, dim=None, zero_outputs=True, name=None):
        fn = _compat.kernel_function(kernel)
        super().__init__(fn, outputs, in_out, zero_outputs=zero_outputs, name=name or kernel.key, module=fn.__module__)
        self.kernel = kernel
        self.dim = dim
        # A kernel that writes a parameter passed as an input would write JAX's (immutable) buffer.
        inputs = [p.name for p in self.params if p.role not in (IN_OUT, OUTPUT)]
        for parameter, surely in written(kernel, inputs):
            remedy = f"Declare it in_out=({parameter!r},) (the kernel needs zero_store=True), or make it an output."
            if surely:
                raise BridgeError(
                    f"{self.describe()}: the kernel writes its input '{parameter}', which would change JAX's buffer "
                    f"behind its back. {remedy}"
                )
            warnings.warn(
                f"{self.describe()}: the kernel may write its input '{parameter}' (a use the bridge cannot follow), "
                f"which would change JAX's buffer. {remedy}",
                stacklevel=3,
            )
        if in_out and _zero_store(kernel) is not True:
            raise BridgeError(
                f"{self.describe()}: in_out={tuple(in_out)!r} needs a kernel built with zero_store=True "
                f"(@wp.kernel(zero_store=True)): without it the store's adjoint keeps the new value's cotangent "
                f"in the gradient of the old value."
            )

    @property
    def writes_output_adjoints(self) -> bool:
        """Whether the adjoint launch writes (zeroes) the output adjoints it reads: the kernel's mode is True."""
        # Only a zero_store=True store adjoint writes (zeroes) the adjoint it reads; Warp's own store adjoint
        # zeroes an output's adjoint only when it is the array's .grad, which a launch's adj_inputs never are.
        return _zero_store(self.kernel) is True

    def _dim(self, values: dict):
        if self.dim is not None:
            return self.dim
        for p in self.params:
            if p.is_array:
                return values[p.name].shape
        raise BridgeError(f"{self.describe()}: no array parameter to take the launch dimension from; pass dim=.")

    def writes_in_full(self, name: str, values: dict) -> bool:
        """Whether the launch stores every element of output ``name`` (`warp_zerostore.access.fully_stored`).

        Args:
            name: An output parameter.
            values: ``{parameter: Warp array or scalar}`` of this call.

        Returns:
            True when the kernel stores it in full over a launch of its shape (then no zero fill is needed).
        """
        ndim = fully_stored(self.kernel).get(name)
        array = values[name]
        dim = self._dim(values)
        dim = (dim,) if isinstance(dim, int) else tuple(dim)
        return ndim is not None and ndim == array.ndim == len(dim) and dim == tuple(array.shape)

    def reads_output(self, name: str) -> bool:
        """Whether the kernel's source reads output ``name`` (then its backward may read its value).

        Args:
            name: An output parameter.

        Returns:
            False only when the kernel provably never reads it.
        """
        access = argument_access(self.kernel).get(name)
        return access is None or access.reads

    def run(self, values: dict) -> None:
        """Launch the kernel.

        Args:
            values: ``{parameter: Warp array or scalar}``.
        """
        warp.launch(self.kernel, dim=self._dim(values), inputs=[values[p.name] for p in self.params])

    def run_backward(self, values: dict, adjoints: dict) -> None:
        """Launch the kernel's adjoint.

        Args:
            values: ``{parameter: Warp array or scalar}``.
            adjoints: ``{parameter: adjoint array or None}``.
        """
        adj = [adjoints.get(p.name) if p.is_array else type(values[p.name])(0) for p in self.params]
        # JAX hands the backward the inputs as they were before the op (in_out arrays hold their pre-op values):
        # a flagged kernel's PRE backward is the one for that memory (codegen/replay.py).
        in_out = any(p.role == IN_OUT for p in self.params)
        kernel = (pre_backward(self.kernel) if in_out else None) or self.kernel
        warn_backward(kernel)
        warp.launch(
            kernel,
            dim=self._dim(values),
            inputs=[values[p.name] for p in self.params],
            adj_inputs=adj,
            adjoint=True,
        )


def _zero_store(kernel):
    return effective_zero_store(kernel)  # the package's one resolver of the flag: kernel > module > process


def op(outputs: dict, *, in_out=(), tape: Callable | None = None, zero_outputs: bool = True, name: str | None = None):
    """Make a differentiable JAX function from a function that launches Warp kernels.

    The function takes Warp arrays (and scalars), annotated like a kernel; ``outputs`` maps each output
    parameter (they come last) to its shape: the name of an input it is shaped like, or a tuple. ``in_out``
    names arrays the function updates in place: the op returns their new value and differentiates through the
    old one. The backward replays the launches on ``tape()`` (default: Warp's ``wp.Tape``); for temporaries a
    later launch overwrites, pass ``tape=lambda: wp.Tape(snapshot=True)`` (this package's Tape, which restores
    them in the backward). Temporaries need ``requires_grad=True``.
    Outputs are zero-filled before the function runs; ``zero_outputs=False`` skips that for functions that
    write every element of every output.

    Args:
        outputs: ``{output parameter: shape}``: the name of an input it is shaped like, or a tuple.
        in_out: Names of arrays the function updates in place (returned with the outputs).
        tape: Makes the Tape the backward replays the launches on; None: Warp's ``wp.Tape``.
        zero_outputs: Zero-fill outputs before the function runs.
        name: The op's name in messages; None: the function's qualified name.

    Returns:
        A decorator that turns the function into a `FunctionOp`.

    Example:
        ```python
        import jax, jax.numpy as jnp
        import warp_zerostore as wp
        import warp_zerostore.jax as wpj

        @wp.kernel(zero_store=True)
        def scale(x: wp.array(dtype=float), s: float, y: wp.array(dtype=float)):
            i = wp.tid()
            y[i] = s * x[i]

        @wpj.op(outputs={"y": "x"})
        def scale_twice(x: wp.array(dtype=float), s: float, y: wp.array(dtype=float)):
            t = wp.empty_like(x, requires_grad=True)
            wp.launch(scale, dim=x.shape, inputs=[x, s, t])
            wp.launch(scale, dim=x.shape, inputs=[t, s, y])

        x = jnp.arange(4.0, dtype=jnp.float32)
        g = jax.grad(lambda x: scale_twice(x, 3.0).sum())(x)
        assert (g == 9.0).all()
        ```
    """

    def decorate(fn):
        return FunctionOp(fn, outputs, in_out, tape=tape, zero_outputs=zero_outputs, name=name)

    return decorate


def kernel_op(
    kernel, outputs: dict | None = None, *, in_out=(), dim=None, zero_outputs: bool = True, name: str | None = None
) -> KernelOp:
    """Make a differentiable JAX function from one Warp kernel; it keeps the kernel's ``zero_store`` flag.

    ``outputs`` maps output parameters (the kernel's last ones) to a shape (an input's name or a tuple);
    ``in_out`` names arrays the kernel updates in place (the kernel must have ``zero_store=True``); ``dim``
    fixes the launch dimension (default: the first array's shape). Outputs are zero-filled before the launch
    (XLA's buffers are uninitialised), except those the kernel provably stores in full without reading them
    (a top-level ``y[i] = ...``, ``i`` from ``wp.tid()``, launched over ``y``'s shape: see
    `warp_zerostore.access.fully_stored`); ``zero_outputs=False`` skips the fill for every output, for
    kernels that write every element in other ways.

    Args:
        kernel: The ``wp.Kernel``.
        outputs: ``{output parameter: shape}``: an input's name or a tuple; None: no outputs.
        in_out: Names of arrays the kernel updates in place (needs ``zero_store=True``).
        dim: The launch dimension; None: the first array's shape.
        zero_outputs: Zero-fill outputs the kernel does not provably store in full.
        name: The op's name in messages; None: the kernel's key.

    Returns:
        The `KernelOp`, a differentiable JAX function.

    Raises:
        BridgeError: ``in_out`` without ``zero_store=True``, or parameters the bridge cannot map.

    Example:
        ```python
        import jax, jax.numpy as jnp
        import warp_zerostore as wp
        import warp_zerostore.jax as wpj

        @wp.kernel(zero_store=True)
        def double_store(xa: wp.array(dtype=float), xb: wp.array(dtype=float), y: wp.array(dtype=float)):
            i = wp.tid()
            y[i] = 2.0 * xa[i]
            y[i] = 3.0 * xb[i]

        f = wpj.kernel_op(double_store, outputs={"y": "xa"})
        x = jnp.ones(4, dtype=jnp.float32)
        ga, gb = jax.grad(lambda a, b: f(a, b).sum(), argnums=(0, 1))(x, x)
        assert (ga == 0.0).all() and (gb == 3.0).all()
        ```
    """
    return KernelOp(kernel, outputs or {}, in_out, dim=dim, zero_outputs=zero_outputs, name=name)
