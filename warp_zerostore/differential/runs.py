"""A program's arrays on one path and what a run of it gave (`Result`): shared by `paths` and `bridges`."""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import warp

from .. import _compat
from ..testing.fuzz.programs.nodes import CONSTANT_WRITES, Copy, Launch, Program

#: The hazard kinds that claim the plain Tape's gradient is wrong (the others say what the Tape cannot do).
CLAIMS = ("overwrite", "stale read", "mutated after record")
#: The claims a measuring Tape measures (the values a reader read, put back).
VALUE_CLAIMS = ("stale read", "mutated after record")


@dataclass
class Result:
    """What one path gave: forward values at the Tape's exit and gradients (array name -> flat float64), or the
    error it raised; the hazards a checking or snapshot Tape recorded (``(kind, real, message, measured status)``:
    a measuring Tape's `measure.Measured` status, "" elsewhere) and every warning of the run (``(category name,
    message)``)."""

    outputs: dict = field(default_factory=dict)
    grads: dict = field(default_factory=dict)
    error: str = ""
    error_type: str = ""
    hazards: list = field(default_factory=list)
    warnings: list = field(default_factory=list)
    measured: dict = field(default_factory=dict)  # a measuring Tape's passes: {pass: {array name: gradient}}

    @property
    def ran(self) -> bool:
        return not self.error

    def real_claims(self) -> list:
        return [h for h in self.hazards if h[0] in CLAIMS and h[1]]

    def measured_claims(self) -> list:
        """Value hazards (stale reads, mutations) a measuring Tape labelled real by their measured effect."""
        return [h for h in self.hazards if h[0] in VALUE_CLAIMS and h[1] and h[3:4] in (("effect",), ("joint",))]

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


def entry_arrays(module, j: int, case) -> dict:
    """The program's arrays after ``setup``: the values a bridge or a rollout starts from."""
    a = make_arrays(case.program, case.data)
    getattr(module, f"p{j}_setup")(a)
    return a


__all__ = ["CLAIMS", "VALUE_CLAIMS", "Result", "cotangent_arrays", "entry_arrays", "flat", "make_arrays", "written"]
