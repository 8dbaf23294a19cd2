"""The measuring Tape (``Tape(measure=True)``): each value hazard's effect on this run's gradients, measured.

A stale read or a mutation after record is real by what the reader's backward could read; whether it changes a
gradient depends on the data (a ``wp.min`` branch that does not flip, a gradient that reaches only constants). The
measuring Tape records like a checking Tape and also keeps, at snapshot scale, what its readers read: at the first
change of an array after a recorded launch read it, the values it held (the snapshot Tape's save before a recorded
write, or the content before a change after record), for each reader launch (`Measure`). Its Tape holds the plain
Tape's entries only. At ``backward()`` it first runs extra backward passes over the Tape's entries with, around the
adjoint of each reader launch of the groups measured, its values put back and taken away again (`Around`), from the
same start (every gradient and every array the passes may touch saved and restored: `State`), then the user's plain
pass over the Tape's own entries, and compares, per gradient array, the plain gradients with each pass's: the
largest absolute and relative change.

* A hazard's effect is that of giving its reader launch site back what it read (a stale read and a mutation alike;
  the hazards of one reader site are measured together), alone where the budget allows (`PASSES` extra passes: one
  with every reader's values put back, and one per reader site while there are at most ``PASSES - 1``), else jointly
  with the others (`JOINT`).
* A change beyond the tolerance `check_gradients` uses (per dtype, `TOLERANCE`, as the fuzzers' oracle) makes the
  hazard real with its effect (`EFFECT`); none makes it ``real=False``, "no effect on this run's gradients"
  (`NO_EFFECT`), with a word on why it may matter on other data.
* What putting values back cannot measure is said so (`NOT_MEASURED`): an overwrite's leak, a ``retain_grad``
  double count, an atomic replay, a construct inside a kernel (a thread reading an element both before and after
  writing it, where no values put back serve both reads), a Tape holding callbacks of the user's (their side effects
  would run again), and anything past the memory cap (`MEMORY_CAP`: the measuring saves stop there).
* A change the user declared the backward must read (`intent.read_at_backward`) is no hazard, so it is not measured.

What is measured is observed (gradients the backward computed); the label follows from the measurement and the
stated tolerance. It never changes the user's gradients: the plain pass runs last, from the saved start.
"""

from __future__ import annotations

import dataclasses
import inspect

import numpy as np
import warp

from .. import _compat

#: per dtype, the tolerance `testing.check_gradients` uses (JAX's check_grads values; the fuzzers' oracle's too):
#: a change is an effect where ``|change| > tol * max(1, max|g|) + tol * |g|`` (``g``: the gradient put right)
TOLERANCE = {"float16": 1e-2, "float32": 2e-3, "float64": 1e-5}
#: extra backward passes at most: one with every hazard's values put back, and one per hazard group where the
#: groups number at most ``PASSES - 1`` (beyond, the effect is said to be joint)
PASSES = 8
#: bytes the measuring Tape keeps at most (its saves while recording, and the start it restores between passes);
#: beyond, it stops saving, and what it cannot put back is "not measured"
MEMORY_CAP = 1 << 30

EFFECT, NO_EFFECT, JOINT, NOT_MEASURED = "effect", "no effect", "joint", "not measured"


@dataclasses.dataclass(frozen=True)
class Measured:
    """What the measuring Tape found of one hazard.

    Attributes:
        status: `EFFECT` (its values put back change a gradient beyond the tolerance), `NO_EFFECT`, `JOINT` (the
            effect of every measured hazard's values put back together: too many to attribute within `PASSES`), or
            `NOT_MEASURED`.
        changes: ``(gradient, largest absolute change, largest relative change)`` per gradient array that changed.
        reason: Why `NOT_MEASURED`; for `JOINT`, how many hazards share it.
    """

    status: str
    changes: tuple = ()
    reason: str = ""

    @property
    def real(self) -> bool:
        return self.status != NO_EFFECT

    def describe(self) -> str:
        """The sentence a report ends with."""
        if self.status == NOT_MEASURED:
            return f"Not measured: {self.reason}."
        figures = ", ".join(f"{name} by up to {a:.3g} ({_percent(r)})" for name, a, r in self.changes) or "none"
        if self.status == NO_EFFECT:
            largest = f" (largest change: {figures})" if self.changes else ""
            return (
                f"Measured: no effect on this run's gradients{largest}, within the tolerance check_gradients uses; "
                "the values read at backward() give the same gradients on this data (a branch that does not flip, "
                "a gradient that reaches only constants), which other data may not."
            )
        if self.status == JOINT:
            return (
                f"Measured jointly with the other {self.reason}: putting their recorded values back changes the "
                f"gradients {figures}."
            )
        return f"Measured: putting back the values it read changes the gradients {figures}."


def _percent(ratio: float) -> str:
    return "no finite scale" if not np.isfinite(ratio) else f"{100 * ratio:.3g} %"


class Around:
    """What one recorded reader launch read of one array, put back around its adjoint in the passes that measure its
    group: before the adjoint the array takes ``values``; after it, what it held just before."""

    __slots__ = ("array", "values", "group", "held")

    def __init__(self, arr, values, group):
        self.array = arr
        self.values = values  # a device copy of what the reader read
        self.group = group
        self.held = None

    def put_back(self) -> None:
        with _compat.no_active_tape():
            self.held = warp.clone(self.array, requires_grad=False)
            _compat.copy_on_device(self.array, self.values)

    def undo(self) -> None:
        with _compat.no_active_tape():
            _compat.copy_on_device(self.array, self.held)
        self.held = None


@dataclasses.dataclass
class Swap:
    """A recorded launch whose backward, where its group's values are put back, is its PRE twin (the snapshot
    Tape's choice for a ``zero_store=True`` kernel given memory as the launch read it)."""

    entry: list
    original: object
    pre: object
    group: tuple


class Measure:
    """One measuring Tape's record of what its readers read: per reader launch, the values to put back around its
    adjoint (`Around`), kept from the first change after its read (a recorded write's snapshot, or the content before
    a change after record); and which groups cannot be measured, and why."""

    def __init__(self):
        self.around: dict = {}  # id(reader's Tape entry) -> (entry, [Around])
        self.pending: dict = {}  # id(array) -> {id(reader entry): (group, entry)}: read since its last change kept
        self.swaps: list = []
        #: group -> why no values put back can be right for it (a construct inside a kernel)
        self.inexact: dict = {}
        #: group -> why its values were not kept (the memory cap, a read through another array over the memory)
        self.unkept: dict = {}
        #: key of a mutation hazard -> True (a launch after the change reads the array: its gradient may leak
        #: through the change, a write no adjoint sees) or the array (it leaks where backward() seeds its gradient)
        self.leaky: dict = {}
        self.bytes = 0  # held by the copies made for measuring (the snapshots' own count apart)

    def read(self, arr, group: tuple, entry) -> None:
        """A recorded launch (its Tape ``entry``) read ``arr``: values to keep at the array's next change."""
        self.pending.setdefault(id(arr), {})[id(entry)] = (group, entry)

    def changed(self, arr, values, own=None, own_values=None) -> None:
        """``arr`` changes now; ``values``: what it held (what its pending readers read), on its device. A launch that
        read it and changes it itself (``own``, its Tape entry) read ``own_values``."""
        for group, entry in self.pending.pop(id(arr), {}).values():
            kept = own_values if entry is own and own_values is not None else values
            self.around.setdefault(id(entry), (entry, []))[1].append(Around(arr, kept, group))

    def not_kept(self, arr, why: str) -> None:
        """``arr`` changes now and what its pending readers read is not kept (``why``)."""
        for group, _ in self.pending.pop(id(arr), {}).values():
            self.unkept.setdefault(group, why)

    def groups(self) -> set:
        return {a.group for _, items in self.around.values() for a in items}

    def launches(self, entries: list, groups: set) -> list:
        """The Tape's entries for a pass that puts back the values of ``groups``: each reader's `Around` s on both
        sides of its entry (Warp's backward runs the entries last first), PRE twins swapped in."""
        for swap in self.swaps:
            _compat.replace_launch_kernel_entry(swap.entry, swap.pre if swap.group in groups else swap.original)
        if not groups:
            return entries
        out = []
        for entry in entries:
            found = self.around.get(id(entry))
            items = [a for a in found[1] if a.group in groups] if found is not None else []
            out += [a.undo for a in items]  # after the adjoint, in reverse: the first put back is undone last
            out.append(entry)
            out += [a.put_back for a in reversed(items)]  # before the adjoint
        return out

    def arrays(self) -> list:
        return [a.array for _, items in self.around.values() for a in items]


def run(
    measuring: Measure, hazards: list, group_of, backward, entries: list, ours: tuple, changed, named, kept: dict
) -> dict:
    """The extra passes, then the user's plain pass (the Tape's own entries, from the saved start); returns
    ``{position in hazards: Measured}``.

    Args:
        measuring: What the Tape kept of what its readers read.
        hazards: The value hazards to measure.
        group_of: ``group_of(hazard)``: the group whose values put back measure it (its reader's).
        backward: ``backward(entries)`` runs Warp's backward pass (seeds included) over those Tape entries.
        entries: The Tape's recorded entries.
        ours: The classes of this package's own entries (run again freely).
        changed: ``(arrays, gradients)``: the arrays a pass may change, and those whose gradients it may change.
        named: ``{name: array}`` of the gradients compared.
        kept: Filled with each pass's gradients on the host (``"plain"``, ``"joint"``, a group), for inspection.
    """
    callbacks = user_callbacks(entries, ours)
    arrays, gradients = changed
    arrays = arrays + measuring.arrays()
    reason = ""
    if callbacks:
        reason = (
            f"the Tape holds a callback recorded with record_func, {describe_callback(callbacks[0])}, whose side "
            "effects an extra backward pass would run again"
        )
    elif State.bytes_for(arrays, gradients) > MEMORY_CAP:
        reason = (
            f"saving the gradients and arrays the extra backward passes change would pass the measuring memory cap "
            f"({MEMORY_CAP >> 20} MiB, warp_zerostore.tape.measure.MEMORY_CAP)"
        )
    found: dict = {}
    groups: dict = {}
    present = measuring.groups()
    for position, hazard in enumerate(hazards):
        group = group_of(hazard)
        if reason:
            found[position] = Measured(NOT_MEASURED, reason=reason)
        elif group in measuring.inexact:
            found[position] = Measured(NOT_MEASURED, reason=_inexact(measuring.inexact[group]))
        elif group in measuring.unkept:
            found[position] = Measured(NOT_MEASURED, reason=measuring.unkept[group])
        elif group not in present:
            # every change of what a recorded launch read keeps it (a recorded write's snapshot, the content
            # before a change after record) unless said otherwise (`unkept`): nothing changed what it read
            found[position] = Measured(NO_EFFECT)
        else:
            groups[position] = group
    measured = sorted(set(groups.values()), key=repr)
    if not measured:
        backward(measuring.launches(entries, set()))
        return found
    if len(measured) == 1:
        passes = {measured[0]: {measured[0]}}
    elif len(measured) <= PASSES - 1:
        passes = {"joint": set(measured), **{g: {g} for g in measured}}
    else:
        passes = {"joint": set(measured)}
    start = State(arrays, gradients)
    results: dict = {}
    for name, switched in passes.items():
        start.put_back()
        try:
            backward(measuring.launches(entries, switched))
            results[name] = host_gradients(named)
        except Exception as error:  # noqa: BLE001 - a pass that fails measures nothing; the user's pass still runs
            results[name] = error
    start.put_back()
    backward(measuring.launches(entries, set()))  # the user's: the Tape's own entries, from the same start
    plain = host_gradients(named)
    kept.update({name: result for name, result in results.items() if isinstance(result, dict)}, plain=plain)
    found.update(_judged(groups, passes, results, plain, len(measured)))
    return found


def _judged(groups: dict, passes: dict, results: dict, plain: dict, count: int) -> dict:
    """Each hazard's `Measured` from the passes' gradients against the plain pass's."""
    judged = {}
    for name, result in list(results.items()):
        if isinstance(result, Exception):
            results[name] = Measured(NOT_MEASURED, reason=f"the extra backward pass raised {type(result).__name__}")
        else:
            results[name] = compare(plain, result)
    joint = results.get("joint")
    alone = {g for g in passes if g != "joint" and isinstance(results[g], tuple) and results[g][0]}
    interacting = isinstance(joint, tuple) and joint[0] and not alone and len(passes) > 1
    for position, group in groups.items():
        result = results.get(group, joint)
        if isinstance(result, Measured):
            judged[position] = result
        elif group not in results or interacting:
            others = f"{count - 1} measured hazard group(s)"
            if group not in results:
                others += f" (more than the {PASSES - 1} a measuring Tape attributes one by one)"
            beyond, changes = joint
            judged[position] = Measured(JOINT if beyond else NO_EFFECT, changes, others)
        else:
            beyond, changes = result
            judged[position] = Measured(EFFECT if beyond else NO_EFFECT, changes)
    return judged


def _inexact(message: str) -> str:
    return (
        "a construct inside the kernel: no values put back serve its reads ("
        + message.split(": ", 1)[0]
        + f": {message.split(': ', 1)[-1].split('. ')[0]})"
    )


def user_callbacks(entries: list, ours: tuple) -> list:
    """The Tape's recorded callables that are neither this package's entries (``ours``) nor Warp's own copy
    adjoints: a second backward would run their side effects again."""
    found = []
    for entry in entries:
        if _compat.is_kernel_launch(entry) or isinstance(entry, ours) or _compat.is_copy_adjoint(entry):
            continue
        found.append(entry)
    return found


def describe_callback(callback) -> str:
    function = inspect.unwrap(callback)
    code = getattr(function, "__code__", None)
    name = getattr(function, "__qualname__", type(function).__name__)
    return f"{name} ({code.co_filename}:{code.co_firstlineno})" if code is not None else name


class State:
    """Every gradient and array the extra passes may change, saved on its device, put back between passes."""

    def __init__(self, arrays: list, gradients: list):
        self.arrays = [(arr, _copy(arr)) for arr in _unique(arrays) if arr.size]
        self.gradients = [(arr, arr.grad, None if arr.grad is None else _copy(arr.grad)) for arr in _unique(gradients)]

    @staticmethod
    def bytes_for(arrays: list, gradients: list) -> int:
        total = sum(_nbytes(a) for a in _unique(arrays))
        return total + sum(_nbytes(a.grad) for a in _unique(gradients) if a.grad is not None)

    def put_back(self) -> None:
        with _compat.no_active_tape():
            for arr, saved in self.arrays:
                _compat.copy_on_device(arr, saved)
            for arr, grad, saved in self.gradients:
                if arr.grad is not grad:
                    arr.grad = grad
                if saved is not None:
                    _compat.copy_on_device(grad, saved)


def _unique(arrays: list) -> list:
    return list({id(a): a for a in arrays}.values())


def _nbytes(arr) -> int:
    return arr.size * _compat.dtype_size_bytes(arr.dtype)


def _copy(arr):
    with _compat.no_active_tape():
        return warp.clone(arr, requires_grad=False)


def host_gradients(named: dict) -> dict:
    """``{name: the array's gradient on the host}`` (None where it has none)."""
    return {name: None if arr.grad is None else arr.grad.numpy().copy() for name, arr in named.items()}


def compare(plain: dict, put_right: dict) -> tuple:
    """``(beyond the tolerance, changes)`` of one pass's gradients ``put_right`` against the plain pass's."""
    beyond, changes = False, []
    for name, fixed in put_right.items():
        got = plain.get(name)
        if fixed is None or got is None or fixed.shape != got.shape:
            continue
        tol = TOLERANCE.get(str(fixed.dtype), TOLERANCE["float32"])
        fixed64, got64 = fixed.astype(np.float64), got.astype(np.float64)
        if not (np.isfinite(fixed64).all() and np.isfinite(got64).all()):
            if not np.array_equal(fixed64, got64, equal_nan=True):
                beyond = True
                changes.append((name, float("inf"), float("inf")))
            continue
        change = np.abs(got64 - fixed64)
        largest = float(np.max(change, initial=0.0))
        if largest == 0.0:
            continue
        scale = float(np.max(np.abs(fixed64), initial=0.0))
        allowed = tol * max(1.0, scale) + tol * np.abs(fixed64)
        beyond |= bool(np.any(change > allowed))
        changes.append((name, largest, largest / scale if scale else float("inf")))
    return beyond, tuple(changes)


def content_copy(address: int, arr):
    """A device copy of the content a contiguous buffer at ``address`` holds of ``arr`` (a `contents.Known`'s:
    its elements in row-major order), taken now: the buffer may be brought up to date after."""
    with _compat.no_active_tape():
        view = warp.array(ptr=address, shape=arr.shape, dtype=arr.dtype, device=arr.device)
        return warp.clone(view, requires_grad=False)


__all__ = [
    "EFFECT",
    "JOINT",
    "MEMORY_CAP",
    "NOT_MEASURED",
    "NO_EFFECT",
    "PASSES",
    "TOLERANCE",
    "Measure",
    "Measured",
    "Around",
    "State",
    "Swap",
    "compare",
    "content_copy",
    "describe_callback",
    "host_gradients",
    "run",
    "user_callbacks",
]
