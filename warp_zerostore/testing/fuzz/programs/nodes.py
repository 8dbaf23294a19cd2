"""The language of drawn launch sequences: arrays, kernels (each a drawn kernel of ``fuzz.nodes``), and the steps
run before, inside and after a Tape.

A program holds a few shared arrays: scalar arrays ``s0, s1, ...`` and vec3 arrays ``v0, ...`` shaped like the
launch (1 to 3 dimensions, `THREADS` elements), and ``c0``, the accumulator of ``wp.atomic_add`` (``ACC``
elements). Each `Launch` binds a kernel's array parameters to them (``x``, ``y`` scalar; ``xv``, ``yv`` vec3;
``acc`` the accumulator): launches share arrays, so one updates what another read, and one array may be passed under
two parameters (``x`` and ``y``, or ``xv`` and ``yv``) where the kernel reads it only at the thread's own element
(no thread reads what another writes). Between launches: ``wp.copy`` with offsets and a count (recorded on the
Tape), ``fill_``, ``zero_`` and ``assign`` (never recorded: constant writes). The same steps may run before the
Tape (``setup``) and after it, before ``backward()`` (``after``: a mutation after record).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Optional, Tuple, Union

from ..nodes import ACC, THREADS
from ..nodes import Program as KernelProgram

#: The kind of array each kernel parameter takes: "f" scalar, "v" vec3 (both shaped like the launch), "acc" the
#: accumulator (``ACC`` scalars).
PARAMETER_KINDS = {"x": "f", "xv": "v", "y": "f", "acc": "acc", "yv": "v"}
#: Parameters a kernel writes (``y``, ``acc``, ``yv``) and only reads (``x``, ``xv``).
WRITTEN = ("y", "acc", "yv")
#: Pairs of parameters one array may be passed under (a kernel that reads its ``x``/``xv`` at its own element).
ALIASES = (("x", "y"), ("xv", "yv"))


@dataclass(frozen=True)
class Array:
    """A program array: ``kind`` "f" (scalars), "v" (vec3) or "acc"; ``retain_grad``: its ``.grad`` keeps what the
    backward pass leaves there (Warp >= 1.13; `oracle` does not compare it)."""

    name: str
    kind: str
    retain_grad: bool = False

    def shape(self, launch: tuple) -> tuple:
        """The array's shape (NumPy's: a vec3 array has a trailing 3)."""
        if self.kind == "acc":
            return (ACC,)
        return tuple(launch) + ((3,) if self.kind == "v" else ())

    def flat_shape(self) -> tuple:
        """The shape the reference keeps it in: ``(THREADS,)``, ``(THREADS, 3)`` or ``(ACC,)``."""
        return {"f": (THREADS,), "v": (THREADS, 3), "acc": (ACC,)}[self.kind]

    @property
    def elements(self) -> int:
        """Warp elements (a vec3 is one): what ``wp.copy`` counts and offsets."""
        return ACC if self.kind == "acc" else THREADS


@dataclass(frozen=True)
class Kernel:
    """A drawn kernel (``program``: its body over ``x, xv, y, acc`` and ``yv`` when it has one) and its options:
    ``backward`` is its ``enable_backward`` (None: the module's); ``held`` are the parameters it reaches through a
    ``@wp.struct`` argument (``s.y[i]``); ``own`` says every load of ``x``/``xv`` is at the thread's own element."""

    program: KernelProgram
    backward: Optional[bool] = None
    held: Tuple[str, ...] = ()
    own: bool = False


@dataclass(frozen=True)
class Launch:
    """``wp.launch`` of kernel ``kernel`` with ``args``: ``(parameter, array name)`` for each array parameter."""

    kernel: int
    args: Tuple[Tuple[str, str], ...]

    def binding(self) -> dict:
        return dict(self.args)


@dataclass(frozen=True)
class Copy:
    """``wp.copy(dest, src, dest_offset=..., src_offset=..., count=...)``: windows of elements in row-major order."""

    dest: str
    src: str
    dest_offset: int
    src_offset: int
    count: int


@dataclass(frozen=True)
class Fill:
    """``dest.fill_(value)`` (form "fill_") or ``dest.zero_()`` (form "zero_", value 0)."""

    dest: str
    form: str
    value: float = 0.0


@dataclass(frozen=True)
class SetData:
    """``dest.assign(values)``: a NumPy constant of the array's shape (flat, row-major, ``values``)."""

    dest: str
    values: Tuple[float, ...]


Step = Union[Launch, Copy, Fill, SetData]
#: Steps never recorded on a Tape: constant writes (`oracle`'s rule).
CONSTANT_WRITES = (Fill, SetData)


@dataclass(frozen=True)
class Program:
    """A drawn launch sequence: its dtype and launch shape, arrays, kernels and steps.

    ``helpers`` are ``@wp.func`` helpers every kernel may call (each kernel's ``program.helpers`` is this tuple),
    so one helper is shared by a forward-only kernel and a differentiated one. ``module_backward`` False puts the
    kernels in a module with ``enable_backward=False`` (a kernel opts back in with ``backward=True``).
    """

    dtype: str
    launch: Tuple[int, ...]
    arrays: Tuple[Array, ...]
    kernels: Tuple[Kernel, ...]
    setup: Tuple[Step, ...] = ()
    body: Tuple[Step, ...] = ()
    after: Tuple[Step, ...] = ()
    helpers: tuple = ()
    module_backward: bool = True

    def array(self, name: str) -> Array:
        return next(a for a in self.arrays if a.name == name)

    def differentiated(self, kernel: int) -> bool:
        """Whether Warp builds kernel ``kernel``'s backward: its own option, else the module's."""
        option = self.kernels[kernel].backward
        return self.module_backward if option is None else option

    def steps(self) -> tuple:
        return self.setup + self.body + self.after


__all__ = [
    "ALIASES",
    "Array",
    "CONSTANT_WRITES",
    "Copy",
    "Fill",
    "Kernel",
    "Launch",
    "PARAMETER_KINDS",
    "Program",
    "SetData",
    "Step",
    "WRITTEN",
]
