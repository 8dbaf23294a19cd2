"""Every path a drawn program runs on: stock Warp and flagged kernels, each on a plain Tape, the snapshot Tape and
the check Tape; and, sampled, the flagged program as a ``warp_zerostore.torch`` op, a ``warp_zerostore.jax`` op and
a checkpointed rollout step.

Each path runs on fresh arrays made from the drawn data: ``setup`` untaped, the body recorded, the outputs read,
the ``after`` steps, then ``backward()`` with every array's cotangent. Every warning of the whole forward and
backward is recorded (never printed): the package warns at build, launch or ``backward()`` time, so a path's own
warnings are what it said. What a path gives is a `Result`.
"""

from __future__ import annotations

import dataclasses
import warnings
from dataclasses import dataclass, field

import numpy as np
import warp

from .. import _compat
from ..tape import Tape as PackageTape
from ..testing.fuzz.programs.nodes import CONSTANT_WRITES, Copy, Launch, Program

#: The Tape each path records on: Warp's own, the snapshot Tape, the check Tape (reporting, never raising).
TAPES = {
    "plain": lambda: warp.Tape(),
    "snapshot": lambda: PackageTape(snapshot=True),
    "check": lambda: PackageTape(check="warn"),
}
#: The reference path: stock Warp on a plain Tape, as users run it.
STOCK = ("stock", "plain")
TAPE_PATHS = tuple((v, t) for t in TAPES for v in ("stock", "zero_store"))
#: Sampled paths of the flagged program (`BRIDGES`), where they apply (`applies`).
BRIDGES = ("torch", "jax", "rollout")
#: How many steps a rollout path runs (the body repeated; the reference runs it as often).
ROLLOUT_STEPS = 2
#: The hazard kinds that claim the plain Tape's gradient is wrong (the others say what the Tape cannot do).
CLAIMS = ("overwrite", "stale read", "mutated after record")


@dataclass
class Result:
    """What one path gave: forward values at the Tape's exit and gradients (array name -> flat float64), or the
    error it raised; the hazards a checking or snapshot Tape recorded (``(kind, real, message)``) and every
    warning of the run (``(category name, message)``)."""

    outputs: dict = field(default_factory=dict)
    grads: dict = field(default_factory=dict)
    error: str = ""
    error_type: str = ""
    hazards: list = field(default_factory=list)
    warnings: list = field(default_factory=list)

    @property
    def ran(self) -> bool:
        return not self.error

    def real_claims(self) -> list:
        return [h for h in self.hazards if h[0] in CLAIMS and h[1]]

    def on_purpose(self) -> list:
        """Reports the checker makes on purpose with ``real=False`` (a linear stale read, a safe overwrite)."""
        return [h for h in self.hazards if h[0] in CLAIMS and not h[1]]


def dtypes(program: Program):
    scalar = warp.float32 if program.dtype == "float32" else warp.float64
    vec = warp.vec3 if program.dtype == "float32" else warp.vec3d
    return {"f": scalar, "acc": scalar, "v": vec}


def make_arrays(program: Program, values: dict, grads: bool = True) -> dict:
    """Warp arrays of the program's shapes holding ``values`` (flat, by name); with ``retain_grad`` where drawn."""
    types = dtypes(program)
    arrays = {}
    for a in program.arrays:
        data = np.reshape(values[a.name], a.shape(program.launch))
        extra = {"retain_grad": True} if a.retain_grad and _compat.HAS_RETAIN_GRAD else {}
        arrays[a.name] = warp.array(data, dtype=types[a.kind], requires_grad=grads, **extra)
    return arrays


def flat(program: Program, name: str, values) -> np.ndarray:
    """A copy (a CPU array's ``.numpy()`` is a view: later steps would change it), float64, in the flat shape."""
    return np.array(values, dtype=np.float64).reshape(program.array(name).flat_shape())


def cotangent_arrays(program: Program, cotangents: dict) -> dict:
    types = dtypes(program)
    return {
        a.name: warp.array(np.reshape(cotangents[a.name], a.shape(program.launch)), dtype=types[a.kind])
        for a in program.arrays
    }


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
                result.hazards = [(h.kind, h.real, h.message()) for h in getattr(recorder, "hazards", [])]
            result.grads = {n: flat(program, n, v.grad.numpy()) for n, v in a.items()}
        except Exception as error:  # noqa: BLE001 - a path that raises is a result too (a refusal or a crash)
            result.error, result.error_type = _short(error), type(error).__name__
    result.warnings = [(w.category.__name__, str(w.message)) for w in seen]
    return result


def written(program: Program) -> tuple:
    """The arrays the recorded body writes (launch outputs, copy destinations, constant writes), in program order."""
    names = set()
    for step in program.body:
        if isinstance(step, Launch):
            binding = step.binding()
            kernel = program.kernels[step.kernel].program
            names |= {binding[p] for p in _written_parameters(kernel) if p in binding}
        elif isinstance(step, Copy) or isinstance(step, CONSTANT_WRITES):
            names.add(step.dest)
    return tuple(a.name for a in program.arrays if a.name in names)


def _written_parameters(kernel) -> set:
    from ..testing.fuzz.nodes import CallStore, Store  # noqa: PLC0415
    from ..testing.fuzz.walk import iter_nodes  # noqa: PLC0415

    found = set()
    for node in iter_nodes(kernel.body):
        if isinstance(node, CallStore):
            found.add("y")
        elif isinstance(node, Store):
            found.add("acc" if node.op == "atomic" else node.array)
    return found


def applies(program: Program, bridge: str) -> str:
    """Why ``bridge`` does not apply to ``program`` ("" where it does): no step after the Tape (an op or a rollout
    has no "after record"), something written; JAX needs Warp's JAX FFI on the CPU."""
    if program.after:
        return "a step after the Tape"
    if not written(program):
        return "writes nothing"
    if bridge == "jax" and (_compat.jax_ffi_module() is None or "cpu" not in _compat.jax_ffi_platforms()):
        return f"no JAX FFI on the CPU in warp-lang {warp.config.version}"
    return ""


def run_bridge(module, j: int, case, bridge: str) -> Result:
    """The flagged program through ``bridge``: "torch", "jax" or "rollout" (`applies` first)."""
    result = Result()
    with warnings.catch_warnings(record=True) as seen:
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
    return result


def entry_arrays(module, j: int, case) -> dict:
    """The program's arrays after ``setup``: the values a bridge or a rollout starts from."""
    a = make_arrays(case.program, case.data)
    getattr(module, f"p{j}_setup")(a)
    return a


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
    "CLAIMS",
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
