"""Every path a drawn program runs on: stock Warp and flagged kernels, each on a plain Tape, the snapshot Tape and
the check Tape; and, sampled, the flagged program as a ``warp_zerostore.torch`` op, a ``warp_zerostore.jax`` op and
a checkpointed rollout step.

Each path runs on fresh arrays made from the drawn data: ``setup`` untaped, the body recorded, the outputs read,
the ``after`` steps, then ``backward()`` with every array's cotangent. Every warning of the whole forward and
backward is recorded (never printed): the package warns at build, launch or ``backward()`` time, so a path's own
warnings are what it said. What a path gives is a `Result`.
"""

from __future__ import annotations

import contextlib
import dataclasses
import importlib.util
import io
import warnings

import warp

from .. import _compat
from ..tape import Tape as PackageTape
from ..testing.fuzz.programs.nodes import Program
from .runs import Result, cotangent_arrays, entry_arrays, flat, make_arrays, written

#: The Tape each path records on: Warp's own, the snapshot Tape, the check Tape (reporting, never raising), and the
#: measuring Tape (judged apart: its gradients are the plain Tape's, its labels are what is judged).
TAPES = {
    "plain": lambda: warp.Tape(),
    "snapshot": lambda: PackageTape(snapshot=True),
    "check": lambda: PackageTape(check="warn"),
    "measure": lambda: PackageTape(check="warn", measure=True),
}
#: The reference path: stock Warp on a plain Tape, as users run it.
STOCK = ("stock", "plain")
TAPE_PATHS = tuple((v, t) for t in ("plain", "snapshot", "check") for v in ("stock", "zero_store"))
#: The measuring Tape's paths (`verdicts.judge_measure`).
MEASURE_PATHS = (("stock", "measure"), ("zero_store", "measure"))
#: Sampled paths of the flagged program (`BRIDGES`), where they apply (`applies`).
BRIDGES = ("torch", "jax", "rollout")
#: How many steps a rollout path runs (the body repeated; the reference runs it as often).
ROLLOUT_STEPS = 2


def run_tape(module, j: int, case, variant: str, tape: str, repeat: int = 1) -> Result:
    """Program ``p{j}`` of ``module`` with ``variant``'s kernels on a ``tape`` Tape (``repeat``: the body run so many
    times in a row, for the rollout's stock counterpart)."""
    program = case.program
    result = Result()
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        try:
            a = make_arrays(program, case.data)
            getattr(module, f"p{j}_setup")(a)
            recorder = TAPES[tape]()
            body = getattr(module, f"p{j}_body_{variant}")
            with recorder:
                for _ in range(repeat):
                    body(a)
            result.outputs = {n: flat(program, n, v.numpy()) for n, v in a.items()}
            getattr(module, f"p{j}_after")(a)
            try:
                recorder.backward(grads={a[n]: g for n, g in cotangent_arrays(program, case.cotangents).items()})
            finally:
                result.hazards = [
                    (h.kind, h.real, h.message(), getattr(h.measured, "status", ""))
                    for h in getattr(recorder, "hazards", [])
                ]
            result.grads = {n: flat(program, n, v.grad.numpy()) for n, v in a.items()}
            result.measured = _measured(program, a, recorder)
        except Exception as error:  # noqa: BLE001 - a path that raises is a result too (a refusal or a crash)
            result.error, result.error_type = _short(error), type(error).__name__
    result.warnings = [(w.category.__name__, str(w.message)) for w in seen]
    return result


def _measured(program, a: dict, tape) -> dict:
    """A measuring Tape's passes' gradients by program array (``{pass: {name: flat}}``), where it ran any."""
    names = {id(v): n for n, v in a.items()}
    arrays = getattr(tape, "measured_arrays", {})
    out = {}
    for name, grads in getattr(tape, "measured_gradients", {}).items():
        out[str(name)] = {
            names[id(arrays[label])]: flat(program, names[id(arrays[label])], value)
            for label, value in grads.items()
            if value is not None and id(arrays.get(label)) in names
        }
    return out


def applies(program: Program, bridge: str) -> str:
    """Why ``bridge`` does not apply to ``program`` ("" where it does): no step after the Tape (an op or a rollout
    has no "after record"), something written; JAX needs Warp's JAX FFI on the CPU."""
    if program.after:
        return "a step after the Tape"
    if not written(program):
        return "writes nothing"
    if bridge in ("torch", "jax") and importlib.util.find_spec(bridge) is None:
        return f"{bridge} is not installed"
    if bridge == "jax" and (_compat.jax_ffi_module() is None or "cpu" not in _compat.jax_ffi_platforms()):
        return f"no JAX FFI on the CPU in warp-lang {warp.config.version}"
    if bridge == "rollout" and importlib.util.find_spec("checkpoint_schedules") is None:
        return "checkpoint-schedules is not installed"
    return ""


def run_bridge(module, j: int, case, bridge: str) -> Result:
    """The flagged program through ``bridge``: "torch", "jax" or "rollout" (`applies` first)."""
    result = Result()
    # Warp's FFI callback prints (to stdout, from 1.19) the traceback of an error inside a JAX op's backward
    printed = io.StringIO()
    with (
        warnings.catch_warnings(record=True) as seen,
        contextlib.redirect_stderr(printed),
        contextlib.redirect_stdout(printed),
    ):
        warnings.simplefilter("always")
        try:
            if bridge == "rollout":
                _rollout(module, j, case, result)
            else:
                from . import bridges  # noqa: PLC0415 - imports torch or jax, only when a bridge path runs

                getattr(bridges, f"run_{bridge}")(module, j, case, result)
        except Exception as error:  # noqa: BLE001
            result.error, result.error_type = _short(error), type(error).__name__
    result.warnings = [(w.category.__name__, str(w.message)) for w in seen]
    if printed.getvalue().strip():
        result.warnings.append(("stderr", printed.getvalue().strip().splitlines()[-1][:300]))
    return result


def _rollout(module, j: int, case, result: Result) -> None:
    from ..checkpoint import rollout  # noqa: PLC0415

    program = case.program
    a = entry_arrays(module, j, case)
    state_names = written(program)
    params = {n: v for n, v in a.items() if n not in state_names}
    body = getattr(module, f"p{j}_body_zero_store")

    def step(state, n):
        body({**dict(zip(state_names, state)), **params})

    tape = warp.Tape()
    with tape:
        run = rollout(step, [a[n] for n in state_names], ROLLOUT_STEPS, snapshots=1, params=list(params.values()))
    result.outputs = {n: flat(program, n, v.numpy()) for n, v in a.items()}
    tape.backward(grads={a[n]: g for n, g in cotangent_arrays(program, case.cotangents).items()})
    result.grads = {n: flat(program, n, v.grad.numpy()) for n, v in a.items()}
    run.close()


def repeated(program: Program, times: int) -> Program:
    """The program whose body runs ``times`` times: what a rollout of that many steps computes."""
    return dataclasses.replace(program, body=program.body * times)


def _short(error: Exception) -> str:
    text = f"{type(error).__name__}: {error}"
    return " ".join(text.split())[:600]


__all__ = [
    "BRIDGES",
    "MEASURE_PATHS",
    "ROLLOUT_STEPS",
    "Result",
    "STOCK",
    "TAPES",
    "TAPE_PATHS",
    "applies",
    "make_arrays",
    "repeated",
    "run_bridge",
    "run_tape",
    "written",
]
