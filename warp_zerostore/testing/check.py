"""check_gradients: a function's Tape gradients against central finite differences, worst element named.

The function is run on fresh copies of its input arrays every time, so it may overwrite them; the check
differentiates the final values of its outputs with respect to the initial values of its inputs. Finite
differences run in float64 when the function accepts float64 arrays (generic kernels, ``dtype=Any``) and
in the inputs' own dtype otherwise, with a rounding allowance derived from that dtype.
"""

from __future__ import annotations

import inspect
import logging
import math
from dataclasses import dataclass
from typing import Callable, Mapping, Sequence

import numpy as np
import warp

from .. import _compat, _progress

_log = logging.getLogger(__name__)

MODES = ("vjp", "jvp")

#: Default ``rtol`` = ``atol`` for the dtype the Tape runs in (the values of JAX's ``check_grads``).
TOLERANCE = {np.dtype(np.float16): 1e-2, np.dtype(np.float32): 2e-3, np.dtype(np.float64): 1e-5}

#: Finite-difference step, relative to ``max(1, |x|)``: 1e-6 in float64; in float16/32 the cube root of
#: the machine epsilon, which balances the truncation and rounding errors of a central difference.
STEP = {np.dtype(np.float16): 0.1, np.dtype(np.float32): 5e-3, np.dtype(np.float64): 1e-6}

# Rounding allowance of a finite difference: ROUNDING_ULPS * eps(dtype) * sum|c * y| / step.
ROUNDING_ULPS = 8


class GradientMismatch(AssertionError):
    """A Tape gradient that differs from its finite difference by more than the tolerance.

    Attributes: ``array`` (the input, for ``vjp``, or the output, for ``jvp``, holding the worst element),
    ``output`` (the output whose cotangent was pulled back, for ``vjp``; ``array`` for ``jvp``), ``index``
    (its NumPy index, element then component), ``tape``, ``finite_difference``, ``tolerance``, ``mode``,
    ``failing`` (elements outside the tolerance) and ``total`` (elements compared).
    """

    def __init__(self, message: str, **fields):
        super().__init__(message)
        for key, value in fields.items():
            setattr(self, key, value)


@dataclass(frozen=True)
class GradientCheck:
    """What a passing `check_gradients` compared.

    Attributes:
        mode: ``"vjp"`` or ``"jvp"``.
        precision: The dtype finite differences ran in: ``"float64"``, or the inputs' own.
        note: Why finite differences did not run in float64, or ``""``.
        total: Elements compared.
        worst: The largest ``|tape - finite difference| / tolerance`` (at most 1 when passing).
    """

    mode: str
    precision: str
    note: str
    total: int
    worst: float


def check_gradients(
    fn: Callable,
    inputs: Sequence | Mapping,
    outputs: Sequence[str | int] | None = None,
    *,
    mode: str = "vjp",
    wrt: Sequence[str | int] | None = None,
    eps: float | None = None,
    rtol: float | None = None,
    atol: float | None = None,
    float64: bool | None = None,
    cotangents: Mapping[str, np.ndarray] | None = None,
    seed: int = 0,
    device=None,
) -> GradientCheck:
    """Check ``fn``'s Tape gradients against central finite differences; raise `GradientMismatch`.

    ``fn(*inputs)`` (or ``fn(**inputs)`` for a dict) launches Warp kernels. Its outputs are the arrays it
    returns plus the inputs named in ``outputs`` (names or positions); if it returns nothing and
    ``outputs`` is None, every float input array is an output (its final value), with or without
    ``requires_grad`` (each run gives every float array a gradient). ``wrt`` (default: every input array
    with ``requires_grad=True``) are differentiated at their initial values. Each run gets fresh copies of
    the input arrays, so ``fn`` may overwrite them. Before every backward pass the gradient of every array
    the recorded launches touch is zeroed, so arrays that outlive a call (module-level buffers) start clean.

    ``mode="vjp"``: one backward pass per output with random cotangents ``c`` (or ``cotangents``, by output
    name), compared element by element with the central difference of ``sum(c * output)`` along each input
    element. ``mode="jvp"``: one backward pass per output element gives ``J v`` for a random tangent ``v``,
    compared with the central difference of the outputs along ``v``.

    Finite differences run in float64 when ``fn`` accepts float64 versions of its arrays (generic
    kernels); ``float64=True`` requires that, ``False`` forbids it. Otherwise they run in the inputs' own
    dtype with an allowance for rounding. Each input element ``x`` moves by ``eps * max(1, |x|)`` (``eps``
    default: 1e-6 in float64, the cube root of the dtype's epsilon otherwise). An element passes when
    ``|tape - fd| <= atol * max(1, max|fd|) + rtol * |fd| + rounding``, ``max|fd|`` taken over the values of one
    comparison (one output's pull-back onto one input for ``vjp``, one output for ``jvp``), so a stiff output
    does not loosen another's check; ``rtol`` and ``atol`` default to JAX's per-dtype values (float16 1e-2,
    float32 2e-3, float64 1e-5) for the dtype the Tape ran in.

    Args:
        fn: Launches Warp kernels on its arguments; may return output arrays.
        inputs: The arguments: a sequence (``fn(*inputs)``) or a mapping (``fn(**inputs)``) of Warp arrays and
            other values.
        outputs: Inputs (names or positions) that are outputs too; None: as described above.
        mode: ``"vjp"`` (reverse mode: one backward per output) or ``"jvp"`` (one backward per output element).
        wrt: Inputs to differentiate (names or positions); None: every input array with ``requires_grad=True``.
        eps: The finite-difference step, relative to ``max(1, |x|)``; None: the dtype's default.
        rtol: Relative tolerance; None: JAX's for the dtype the Tape ran in.
        atol: Absolute tolerance, scaled by ``max(1, max|fd|)``; None: JAX's for the dtype.
        float64: True: finite differences must run in float64; False: never; None: when ``fn`` allows.
        cotangents: ``{output name: NumPy array}`` for ``mode="vjp"``; None: random ones.
        seed: Seed of the random cotangents and tangents.
        device: The Warp device the copies are made on; None: each input's own.

    Returns:
        A `GradientCheck` saying what was compared.

    Raises:
        GradientMismatch: An element differs by more than the tolerance (the worst one is named).
        ValueError: An unknown ``mode``, a tolerance or step that would make the check vacuous, ``cotangents``
            with ``mode="jvp"``, or inputs and outputs it cannot use.

    Example:
        ```python
        import warp_zerostore as wp
        from warp_zerostore.testing import check_gradients

        @wp.kernel(zero_store=True)
        def square(x: wp.array(dtype=float), y: wp.array(dtype=float)):
            i = wp.tid()
            y[i] = x[i] * x[i]

        x = wp.array([1.0, -2.0, 0.5], dtype=float, requires_grad=True)
        y = wp.zeros(3, dtype=float, requires_grad=True)
        check_gradients(lambda x, y: wp.launch(square, dim=3, inputs=[x, y]), [x, y])
        ```
    """
    if mode not in MODES:
        raise ValueError(f"check_gradients: mode must be 'vjp' or 'jvp', got {mode!r}.")
    _check_options(eps, rtol, atol)
    problem = _Problem(fn, inputs, outputs, wrt, device)
    if cotangents is not None and mode != "vjp":
        raise ValueError("check_gradients: cotangents apply to mode='vjp' only; leave them out for mode='jvp'.")

    tape_dtype = problem.working_dtype()
    fd_promote, note = problem.float64_plan(float64)
    fd_dtype = np.dtype(np.float64) if fd_promote else tape_dtype
    step = eps if eps is not None else STEP[fd_dtype]
    rtol = TOLERANCE[tape_dtype] if rtol is None else rtol
    atol = TOLERANCE[tape_dtype] if atol is None else atol
    rng = np.random.default_rng(seed)

    if mode == "vjp":
        cot = problem.cotangents(rng, cotangents)
        tape = problem.tape_vjp(cot)
        comparisons = problem.fd_vjp(cot, fd_promote, fd_dtype, step, tape)
    else:
        comparisons = problem.jvp(rng, fd_promote, fd_dtype, step)

    precision = "float64" if fd_promote else str(fd_dtype)
    rerun = fd_promote and tape_dtype != np.float64
    return _compare(problem, mode, comparisons, rtol, atol, precision, note, rerun)


def vjp(
    fn: Callable,
    inputs: Sequence | Mapping,
    cotangents: Mapping[str, np.ndarray],
    outputs: Sequence[str | int] | None = None,
    *,
    wrt: Sequence[str | int] | None = None,
    device=None,
) -> tuple[dict, dict]:
    """Run ``fn`` once on a Tape and pull ``cotangents`` (by output name) back: ``(final values, gradients)``.

    The same conventions as `check_gradients` (fresh copies of the inputs, outputs, ``wrt``); both
    dicts hold float64 NumPy arrays, by name. Use it to compare a Tape with a reference of your own.

    Args:
        fn: Launches Warp kernels on its arguments; may return output arrays.
        inputs: The arguments: a sequence (``fn(*inputs)``) or a mapping (``fn(**inputs)``).
        cotangents: ``{output name: NumPy array}`` to pull back.
        outputs: Inputs (names or positions) that are outputs too; None: as in `check_gradients`.
        wrt: Inputs to differentiate; None: every input array with ``requires_grad=True``.
        device: The Warp device the copies are made on; None: each input's own.

    Returns:
        ``(values, gradients)``: the outputs' final values and the gradients of ``wrt``, float64 NumPy arrays
        by name.

    Example:
        ```python
        import numpy as np
        import warp_zerostore as wp
        from warp_zerostore.testing import vjp

        @wp.kernel(zero_store=True)
        def double(x: wp.array(dtype=float), y: wp.array(dtype=float)):
            y[wp.tid()] = 2.0 * x[wp.tid()]

        x = wp.array([1.0, 2.0], dtype=float, requires_grad=True)
        y = wp.zeros(2, dtype=float, requires_grad=True)
        values, grads = vjp(lambda x, y: wp.launch(double, dim=2, inputs=[x, y]), {"x": x, "y": y},
                            {"y": np.ones(2)}, outputs=["y"])
        assert grads["x"].tolist() == [2.0, 2.0] and grads["y"].tolist() == [0.0, 0.0]
        ```
    """
    problem = _Problem(fn, inputs, outputs, wrt, device)
    cot = problem.cotangents(None, cotangents)
    arrays, outs, tape = problem.run(problem.base, promote=False, record=True)
    grads = problem.pull_back(arrays, outs, tape, cot)
    return {name: _values(a) for name, a in outs.items()}, grads


def _check_options(eps, rtol, atol) -> None:
    """Refuse options that would make the check vacuous (every element passes) or NaN."""
    if eps is not None and not (isinstance(eps, (int, float)) and math.isfinite(eps) and eps > 0):
        raise ValueError(
            f"check_gradients: eps must be a finite number > 0 (the finite-difference step, relative to "
            f"max(1, |x|)), got {eps!r}. Leave it out for the default of the dtype differences run in."
        )
    for name, value in (("rtol", rtol), ("atol", atol)):
        if value is not None and not (isinstance(value, (int, float)) and math.isfinite(value) and value >= 0):
            raise ValueError(
                f"check_gradients: {name} must be a number >= 0 and finite, got {value!r}: a negative, NaN or "
                f"infinite tolerance would let every element pass. Leave it out for the dtype's default."
            )


@dataclass
class _Comparison:
    """Tape values against finite differences for one array: ``output``'s pull-back onto input ``array``
    (vjp), or output ``array`` along the tangent (jvp). Tolerances scale with this comparison's own values."""

    array: str
    output: str
    label: str
    tape: np.ndarray
    fd: np.ndarray
    rounding: np.ndarray
    step: Callable  #: index -> the finite-difference step used there, as text for messages


# ------------------------------------------------------------------------------------------------------------


def _values(a) -> np.ndarray:
    return a.numpy().astype(np.float64)


def _stored(values: np.ndarray, np_dtype) -> np.ndarray:
    """``values`` rounded to ``np_dtype``, back in float64."""
    return np.asarray(values, dtype=np.float64).astype(np_dtype).astype(np.float64)


class _Problem:
    """``fn`` with its inputs, callable on NumPy values: fresh arrays each run, outputs found by name."""

    def __init__(self, fn, inputs, outputs, wrt, device):
        self.fn = fn
        self.fn_name = getattr(fn, "__qualname__", None) or getattr(fn, "__name__", None) or type(fn).__name__
        if isinstance(inputs, Mapping):
            self.keyword = True
            names = [str(k) for k in inputs]
            values = list(inputs.values())
        elif isinstance(inputs, (list, tuple)):
            self.keyword = False
            values = list(inputs)
            names = _positional_names(fn, len(values))
        else:
            raise TypeError(
                f"check_gradients: inputs must be a list or tuple of the arguments of {self.fn_name}, or a dict "
                f"of its keyword arguments; got {type(inputs).__name__}."
            )
        self.names = names
        self.passthrough = {}  # everything but float arrays (ints, structs, int arrays), passed as it is
        self.dtype, self.base, self.requires_grad = {}, {}, {}
        self.device = device
        integer_grads = []  # non-float arrays created with requires_grad=True
        for name, value in zip(names, values):
            if isinstance(value, warp.array) and _compat.is_float(value.dtype):
                if self.device is None:
                    self.device = value.device
                self.dtype[name] = value.dtype
                self.base[name] = _values(value)
                self.requires_grad[name] = bool(value.requires_grad)
            else:
                self.passthrough[name] = value
                if isinstance(value, warp.array) and value.requires_grad:
                    integer_grads.append(f"'{name}' is an integer array ({_compat.type_repr(value.dtype)})")
        if self.device is None:
            self.device = "cpu"
        self.wrt = self._select(wrt, "wrt") if wrt is not None else [n for n in self.dtype if self.requires_grad[n]]
        if not self.wrt and integer_grads:
            raise ValueError(
                f"check_gradients: {', '.join(integer_grads)} with requires_grad=True, but integer arrays are "
                f"not differentiated, so {self.fn_name} has nothing to check. Give requires_grad=True to the float "
                "input arrays to differentiate (float16/32/64 scalars, vectors, matrices, ...), or name them in wrt."
            )
        if not self.wrt:
            raise ValueError(
                f"check_gradients: no input array of {self.fn_name} has requires_grad=True, so there is nothing to "
                "differentiate. Create the arrays to check with requires_grad=True, or name them in wrt=[...]."
            )
        for name in self.wrt:
            if not self.requires_grad[name]:
                raise ValueError(
                    f"check_gradients: wrt names '{name}', created with requires_grad=False. Create it with "
                    "requires_grad=True, or leave it out of wrt."
                )
        self.explicit_outputs = self._select(outputs, "outputs") if outputs is not None else None
        self.outputs_given = outputs is not None
        self.output_names = None  # fixed by the first run
        self.output_dtype = {}

    def _select(self, keys, what) -> list:
        chosen = []
        for key in keys:
            name = self.names[key] if isinstance(key, int) and 0 <= key < len(self.names) else key
            if name not in self.dtype:
                arrays = ", ".join(repr(n) for n in self.dtype) or "none"
                raise ValueError(
                    f"check_gradients: {what} names {key!r}, which is not a float input array of {self.fn_name} "
                    f"(float input arrays: {arrays}). Name them by position or by name; only float16/32/64 "
                    "scalars, vectors, matrices, quaternions and transforms can be differentiated."
                )
            chosen.append(name)
        return chosen

    # -- running fn ------------------------------------------------------------------------------------------

    def array_dtype(self, name, promote):
        dtype = self.dtype[name]
        if promote and _compat.is_float(dtype):
            return _compat.with_scalar_type(dtype, warp.float64)
        return dtype

    def run(self, values: Mapping[str, np.ndarray], promote: bool, record: bool):
        """Run ``fn`` on fresh arrays holding ``values``; return (input arrays, outputs by name, tape or None)."""
        arrays = {}
        for name in self.dtype:
            dtype = self.array_dtype(name, promote)
            data = np.asarray(values[name], dtype=np.float64).astype(_compat.numpy_scalar(dtype))
            # on a Tape every float array gets a gradient: an output made without one is still differentiated
            requires_grad = record or self.requires_grad[name]
            arrays[name] = warp.array(data, dtype=dtype, device=self.device, requires_grad=requires_grad)
        args = {name: arrays.get(name, self.passthrough.get(name)) for name in self.names}
        tape = warp.Tape() if record else None
        if tape is not None:
            with tape:
                result = self.call(args)
        else:
            result = self.call(args)
        return arrays, self._outputs(arrays, result), tape

    def call(self, args: dict):
        if self.keyword:
            return self.fn(**args)
        return self.fn(*args.values())

    def _outputs(self, arrays, result) -> dict:
        if result is None:
            returned = []
        elif isinstance(result, warp.array):
            returned = [("output", result)]
        elif isinstance(result, Mapping):
            returned = [(str(k), v) for k, v in result.items()]
        elif isinstance(result, (list, tuple)):
            returned = [(f"output[{i}]", v) for i, v in enumerate(result)]
        else:
            raise TypeError(
                f"check_gradients: {self.fn_name} returned {type(result).__name__}; return None, a Warp array, "
                "or a tuple, list or dict of Warp arrays."
            )
        outs, seen = {}, set()
        for label, a in returned:
            if not isinstance(a, warp.array):
                raise TypeError(
                    f"check_gradients: {self.fn_name} returned {label} of type {type(a).__name__}, not a Warp array."
                )
            same = [n for n, b in arrays.items() if b is a]
            name = same[0] if same else label
            if id(a) not in seen:
                outs[name] = a
                seen.add(id(a))
        explicit = self.explicit_outputs
        if explicit is None and not outs:
            explicit = list(self.dtype)
        for name in explicit or ():
            if id(arrays[name]) not in seen:
                outs[name] = arrays[name]
                seen.add(id(arrays[name]))
        if not outs:
            raise ValueError(
                f"check_gradients: {self.fn_name} returned no arrays and outputs=[] names none, so there is "
                "nothing to compare. Name the arrays it writes (outputs=['y']), or leave outputs out to check "
                "every float input array's final value."
            )
        if self.output_names is None:
            self.output_names = list(outs)
            self.output_dtype = {name: a.dtype for name, a in outs.items()}
        elif list(outs) != self.output_names:
            raise ValueError(
                f"check_gradients: {self.fn_name} returned outputs {list(outs)} in one run and {self.output_names} "
                "in another; it must return the same arrays every time."
            )
        return outs

    def loss_terms(self, outs, cot) -> dict:
        """Per output: ``sum(c * y)``, and ``sum|c * y|`` (its rounding scale)."""
        terms = {}
        for name, a in outs.items():
            products = cot[name] * _values(a)
            terms[name] = (float(np.sum(products)), float(np.sum(np.abs(products))))
        return terms

    # -- precision ---------------------------------------------------------------------------------------------

    def working_dtype(self) -> np.dtype:
        """The least precise float dtype among differentiated inputs and outputs: the Tape's precision."""
        arrays, outs, _ = self.run(self.base, promote=False, record=False)
        dtypes = [_compat.numpy_scalar(self.dtype[n]) for n in self.wrt]
        dtypes += [_compat.numpy_scalar(a.dtype) for a in outs.values() if _compat.is_float(a.dtype)]
        for name, a in outs.items():
            if not _compat.is_float(a.dtype):
                raise TypeError(
                    f"check_gradients: output '{name}' of {self.fn_name} has dtype {_compat.type_repr(a.dtype)}; "
                    "outputs must be float arrays. Leave it out of outputs."
                )
        return max((np.dtype(d) for d in dtypes), key=lambda d: np.finfo(d).eps)

    def float64_plan(self, float64) -> tuple[bool, str]:
        """Whether finite differences re-run ``fn`` in float64, and why not when they don't."""
        if float64 is False:
            return False, "float64=False"
        if all(np.dtype(_compat.numpy_scalar(t)) == np.float64 for t in self.dtype.values()):
            return True, ""
        try:
            _, outs, _ = self.run(self.base, promote=True, record=False)
            self.output_names = None
            narrow = [n for n, a in outs.items() if np.dtype(_compat.numpy_scalar(a.dtype)) != np.float64]
            reason = f"outputs {narrow} stay below float64" if narrow else ""
        except Exception as error:  # noqa: BLE001 - any failure means fn cannot run in float64
            self.output_names = None
            reason = f"{type(error).__name__}: {error}"
        if not reason:
            return True, ""
        if float64:
            raise ValueError(
                f"check_gradients(float64=True): {self.fn_name} cannot run on float64 arrays ({reason}). Make its "
                "kernels generic (wp.array(dtype=typing.Any)) and allocate its arrays like its inputs, or pass "
                "float64=None to fall back to finite differences in the inputs' dtype."
            )
        reason = reason.splitlines()[0]
        _log.info("%s: finite differences in the inputs' dtype, not float64 (%s)", self.fn_name, reason)
        return False, f"{self.fn_name} cannot run on float64 arrays: {reason[:100]}{'...' if len(reason) > 100 else ''}"

    # -- Tape side ---------------------------------------------------------------------------------------------

    def cotangents(self, rng, given) -> dict:
        _, outs, _ = self.run(self.base, promote=False, record=False)
        cot = {}
        for name, a in outs.items():
            shape = a.numpy().shape
            if given is not None:
                if name not in given:
                    raise ValueError(
                        f"check_gradients: cotangents has no entry for output '{name}' (outputs: {list(outs)}). "
                        "Give one NumPy array per output."
                    )
                c = np.asarray(given[name], dtype=np.float64)
                if c.shape != shape:
                    raise ValueError(
                        f"check_gradients: cotangents['{name}'] has shape {c.shape}; output '{name}' has {shape}."
                    )
            else:
                c = rng.uniform(-1.0, 1.0, size=shape)
            cot[name] = _stored(c, _compat.numpy_scalar(a.dtype))
        return cot

    def require_gradients(self, outs) -> None:
        for name, a in outs.items():
            if a.grad is None:
                raise ValueError(
                    f"check_gradients: output '{name}' of {self.fn_name} has no gradient: create it with "
                    "requires_grad=True (e.g. wp.zeros(..., requires_grad=True))."
                )

    @staticmethod
    def zero_gradients(arrays, outs, tape) -> None:
        """Zero the gradient of every array the recorded launches touch, not only the inputs and outputs: a
        buffer that outlives one call (a module-level array) would carry its gradient into the next."""
        for a in [*_compat.tape_arrays(tape), *arrays.values(), *outs.values()]:
            if a.grad is not None:
                a.grad.zero_()

    def pull_back(self, arrays, outs, tape, cot) -> dict:
        """One backward pass from cotangents ``cot`` (by output name; outputs left out get none)."""
        self.require_gradients(outs)
        self.zero_gradients(arrays, outs, tape)
        seeds = {
            a: warp.array(cot[name].astype(_compat.numpy_scalar(a.dtype)), dtype=a.dtype, device=a.device)
            for name, a in outs.items()
            if name in cot
        }
        tape.backward(grads=seeds)
        return {name: _values(arrays[name].grad) for name in self.wrt}

    def tape_vjp(self, cot) -> dict:
        """Per output: the pull-back of its cotangent alone, by input name."""
        arrays, outs, tape = self.run(self.base, promote=False, record=True)
        return {name: self.pull_back(arrays, outs, tape, {name: cot[name]}) for name in outs}

    # -- finite differences ------------------------------------------------------------------------------------

    def fd_vjp(self, cot, promote, fd_dtype, step, tape) -> list:
        """Per output and ``wrt`` input: the central difference of ``sum(c * output)`` along each input
        element, with its rounding allowance, against the Tape's pull-back ``tape[output][input]``."""
        eps = float(np.finfo(fd_dtype).eps)
        comparisons = []
        bar = _progress.bar(sum(self.base[n].size for n in self.wrt), f"{self.fn_name}: finite differences", "element")
        for name in self.wrt:
            g = {out: np.zeros_like(self.base[name]) for out in self.output_names}
            r = {out: np.zeros_like(self.base[name]) for out in self.output_names}
            steps = step * np.maximum(1.0, np.abs(self.base[name]))
            for idx in np.ndindex(self.base[name].shape):
                x = self.base[name][idx]
                plus, minus = _stored(x + steps[idx], fd_dtype), _stored(x - steps[idx], fd_dtype)
                values = dict(self.base)
                values[name] = self.base[name].copy()
                values[name][idx] = plus
                terms_plus = self.loss_terms(self.run(values, promote, record=False)[1], cot)
                values[name][idx] = minus
                terms_minus = self.loss_terms(self.run(values, promote, record=False)[1], cot)
                for out in self.output_names:
                    (lp, sp), (lm, sm) = terms_plus[out], terms_minus[out]
                    g[out][idx] = (lp - lm) / (plus - minus)
                    r[out][idx] = ROUNDING_ULPS * eps * max(sp, sm) / (plus - minus)
                bar.update()

            def step_at(idx, steps=steps):
                return f"step {float(steps[idx]):g} ({step:g} * max(1, |x|) at this element)"

            for out in self.output_names:
                label = f"vjp of input '{name}' through output '{out}'"
                comparisons.append(_Comparison(name, out, label, tape[out][name], g[out], r[out], step_at))
        bar.close()
        return comparisons

    def jvp(self, rng, promote, fd_dtype, step) -> list:
        """Per output: ``J v`` from one backward pass per output element, and the central difference along
        ``v``. Each input element moves by ``step * max(1, |x|)``, so a large input does not set the step of
        the others; ``v`` is the direction the rounded points actually differ in, per unit of ``2 * step``."""
        eps = float(np.finfo(fd_dtype).eps)
        tangent = {n: rng.uniform(-1.0, 1.0, size=self.base[n].shape) for n in self.wrt}
        steps = {n: step * np.maximum(1.0, np.abs(self.base[n])) for n in self.wrt}
        plus, minus = dict(self.base), dict(self.base)
        for n in self.wrt:
            plus[n] = _stored(self.base[n] + steps[n] * tangent[n], fd_dtype)
            minus[n] = _stored(self.base[n] - steps[n] * tangent[n], fd_dtype)
        direction = {n: (plus[n] - minus[n]) / (2 * step) for n in self.wrt}
        out_plus = {k: _values(a) for k, a in self.run(plus, promote, record=False)[1].items()}
        out_minus = {k: _values(a) for k, a in self.run(minus, promote, record=False)[1].items()}
        fd = {k: (out_plus[k] - out_minus[k]) / (2 * step) for k in out_plus}
        rounding = {
            k: ROUNDING_ULPS * eps * np.maximum(np.abs(out_plus[k]), np.abs(out_minus[k])) / (2 * step)
            for k in out_plus
        }
        used = np.concatenate([steps[n].ravel() for n in self.wrt])
        span = f"{float(used.min()):g} to {float(used.max()):g}" if used.size else "none"

        def step_text(_idx):
            return f"steps {step:g} * max(1, |x|) per input element: {span}, along a random tangent"

        arrays, outs, tape = self.run(self.base, promote=False, record=True)
        self.require_gradients(outs)
        comparisons = []
        for name, out in outs.items():
            jv = np.zeros(out.numpy().shape)
            for idx in np.ndindex(jv.shape):
                self.zero_gradients(arrays, outs, tape)
                seed = np.zeros(jv.shape)
                seed[idx] = 1.0
                seed = seed.astype(_compat.numpy_scalar(out.dtype))
                out.grad.assign(warp.array(seed, dtype=out.dtype, device=out.device))
                tape.backward()
                jv[idx] = sum(float(np.sum(_values(arrays[n].grad) * direction[n])) for n in self.wrt)
            label = f"jvp of output '{name}'"
            comparisons.append(_Comparison(name, name, label, jv, fd[name], rounding[name], step_text))
        return comparisons


def _positional_names(fn, count: int) -> list:
    """Names of ``fn``'s first ``count`` positional parameters, else ``inputs[i]``."""
    try:
        params = [
            p.name
            for p in inspect.signature(fn).parameters.values()
            if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)
        ]
    except (TypeError, ValueError):
        params = []
    if len(params) >= count:
        return params[:count]
    return [f"inputs[{i}]" for i in range(count)]


def _index_text(index: tuple) -> str:
    return "[" + ", ".join(str(i) for i in index) + "]"


def _compare(problem, mode, comparisons, rtol, atol, precision, note, rerun) -> GradientCheck:
    worst = (0.0, None, None, None)  # ratio, comparison, index, its scale
    failing = {}  # array name -> elements outside the tolerance in any comparison
    for c in comparisons:
        scale = max([1.0, float(np.max(np.abs(c.fd)))] if c.fd.size else [1.0])
        tol = atol * scale + rtol * np.abs(c.fd) + c.rounding
        with np.errstate(divide="ignore", invalid="ignore"):
            ratio = np.abs(c.tape - c.fd) / tol
        ratio = np.where(np.isnan(ratio), np.inf, ratio)
        failing[c.array] = failing.get(c.array, np.zeros(ratio.shape, dtype=bool)) | (ratio > 1.0)
        if ratio.size and float(np.max(ratio)) > worst[0]:
            idx = np.unravel_index(int(np.argmax(ratio)), ratio.shape)
            worst = (float(ratio[idx]), c, tuple(int(i) for i in idx), scale)
    total = sum(mask.size for mask in failing.values())
    if worst[0] <= 1.0:
        return GradientCheck(mode, precision, note, total, worst[0])

    _, c, idx, scale = worst
    name = c.array
    t, f = float(c.tape[idx]), float(c.fd[idx])
    tol = atol * scale + rtol * abs(f) + float(c.rounding[idx])
    dtype = problem.dtype.get(name) if mode == "vjp" else problem.output_dtype[name]
    element_dims = len(_compat.element_shape(dtype))
    where = f"element {_index_text(idx[: len(idx) - element_dims])}"
    if element_dims:
        where += f", component {_index_text(idx[-element_dims:])}"
    shape = c.tape.shape[: len(idx) - element_dims]
    how = f"central, {precision}" + (" re-run" if rerun else "") + f", {c.step(idx)}"
    if note:
        how += f"; {note.split(':')[0]}"
    failing_total = sum(int(mask.sum()) for mask in failing.values())
    message = (
        f"check_gradients(mode={mode!r}) of {problem.fn_name}: Tape and finite differences disagree at "
        f"{name}{_index_text(idx)}: {c.label}, shape {shape}, dtype {_compat.type_repr(dtype)}, {where}\n"
        f"  tape              : {t: .9e}\n"
        f"  finite difference : {f: .9e}   ({how})\n"
        f"  |difference|      : {abs(t - f):.3e} > tolerance {tol:.3e} "
        f"(atol {atol:g} * {scale:.3g} + rtol {rtol:g} * |fd| + rounding {float(c.rounding[idx]):.2e}; "
        f"{scale:.3g} = max(1, max|fd|) of this {'pull-back' if mode == 'vjp' else 'output'})\n"
        f"  outside tolerance : {int(failing[name].sum())} of {failing[name].size} values of {name}, "
        f"{failing_total} of {total} in all\n"
        "  What to do: if the function overwrites arrays, build its kernels with @wp.kernel(zero_store=True) "
        "(accumulate mode keeps an overwritten element's gradient); if a kernel reads a value that a later "
        "launch overwrites, the backward pass replays against the new value: write to a fresh array instead; "
        "if the function has kinks (abs, min, max, branches) near the inputs, draw inputs away from them."
    )
    raise GradientMismatch(
        message,
        array=name,
        output=c.output,
        index=idx,
        tape=t,
        finite_difference=f,
        tolerance=tol,
        mode=mode,
        failing=failing_total,
        total=total,
    )
