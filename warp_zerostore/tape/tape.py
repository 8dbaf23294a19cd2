"""Overwrite safety on the Tape: hazards that name the bug, and snapshots that make in-place updates differentiable.

Warp's backward pass replays each recorded kernel against arrays as they are at ``backward()`` time, not as
they were when the launch was recorded. `Tape` watches recorded launches for three hazards:

* **overwrite** (write after write): elements one launch wrote are written again by a later launch. A real
  error only when the later kernel does not zero its store adjoints (``zero_store=True``, or Warp >= 1.13's
  stock behaviour); otherwise it is kept in ``tape.hazards`` with ``real=False`` and not warned about.
* **stale read** (write after read): a launch changes an array that an earlier launch, or the same launch,
  reads; the earlier launch's backward will re-read the new values.
* **mutated after record**: elements a recorded launch read changed outside recorded launches (``assign``,
  ``fill_``, NumPy/Torch writes through shared memory, untaped launches), found by comparing the array with its
  content after the last recorded launch that passed it, at the next recorded launch that passes it, or at
  ``backward()``.

Two more kinds say what the Tape cannot do, whatever ``check`` is (warned with ``check="off"`` too):

* **read before and after write** (with ``snapshot=True``): one thread read an element both before and after
  the launch wrote it; Warp's replay reads one value for both reads, so no snapshot can make both right.
* **not checked (graph capture)**: a launch recorded inside ``wp.ScopedCapture`` is not run (CPU, Warp >= 1.19)
  or runs later (CUDA graphs), so the Tape can neither see its reads and writes nor snapshot it.

Precision: written elements are the ones the instrumented twin of the kernel (`read_twin`, run on scratch
copies of every array argument before the launch) marks as stored into, whatever the value stored, together with
those whose bytes changed (a content diff: stores the twin cannot index, as through a row view). Read elements
come from the same twin, for arguments read by full element indexing (``x[i]``, ``x[i, j]``), in the kernel or in
the ``@wp.func`` helpers it passes them to; other arguments the kernel's source reads (`access`) count as
read in whole (conservative). A launch that read no element of an array is not one of its readers (for stale
reads and mutations alike), and a kernel built with ``enable_backward=False`` never is (Warp never replays it). A
thread reading back what it wrote in the same launch is not a stale read (replay reads the launch's output too).
One array passed under several labels of a launch is one array with the union of their accesses. Elements are
identified by memory address per device (`memory`), so views of one buffer are connected. Neither checks
nor snapshots change what the forward computes: the twin never runs on the user's arrays.

Contents are compared where the arrays live (`contents`: Warp kernels on the array's device): the checking Tape
keeps a device copy of each array a recorded launch read and brings back per-element change masks, the snapshot
Tape keeps fingerprints (`fingerprints`), compared at ``backward()``. Recording never copies a recorded array to
the host. The cost per launch follows the launch's own arrays and the views that overlap them (found by address,
`memory.Region.views`), not the arrays recorded before.

``snapshot=True`` saves, before a recorded launch, every array it may write that a recorded launch (earlier
or this one) reads. During ``backward()``, just before the launch's adjoint, each element gets back the value
the launch read: its input value, or its output value where the thread read it back after writing it; after the
adjoint, the input value. When ``backward()`` returns, arrays hold their values from the end of the forward pass.

Checks and snapshots act only on launches made through ``warp.launch`` / ``warp.launch_tiled`` (which the
Tape intercepts while it is entered with checks or snapshots on); with ``check="off"`` and
``snapshot=False`` (the default) the Tape is Warp's own and launches are untouched.
"""

from __future__ import annotations

import contextlib
import dataclasses
import logging
import operator
import os
import sys
import threading
import warnings
import weakref
from typing import Callable, Iterator

import numpy as np
import warp

from .. import _compat, config
from .._memory import byte_span
from ..access import ArgumentAccess, argument_access, struct_field_access
from ..codegen import pre_backward, replays_exactly
from ..codegen.replay import POST
from ..config import CheckLevel, validate_check, validate_measure
from ..options import effective_zero_store, store_adjoints_zero
from . import atomic_replay, contents, host_writes, measure, observe, read_twin, retained
from .fingerprints import Fingerprints
from .intent import is_declared
from .journal import JOURNAL
from .memory import AddressBook, Place
from .visualize import mark_hazards

_log = logging.getLogger(__name__)

OVERWRITE = "overwrite"
STALE_READ = "stale read"
MUTATED = "mutated after record"
REPLAY = "read before and after write"
CAPTURED = "not checked (graph capture)"
IN_STRUCT = "not checked (arrays in a struct)"
ATOMIC = "atomic replay"
KINDS = (OVERWRITE, STALE_READ, MUTATED, REPLAY, ATOMIC, CAPTURED, IN_STRUCT)
#: what the Tape did not look at: never counted as a hazard, always as a launch left unchecked
UNCHECKED = (CAPTURED, IN_STRUCT)
# Kinds about what the Tape cannot do, or that no Tape mends: reported (warned) even by a Tape with check="off".
_ALWAYS_REPORTED = (REPLAY, ATOMIC, CAPTURED, IN_STRUCT)
#: an overwrite's cause when the array was made with ``retain_grad=True``: no store adjoint zeroes its gradient,
#: so what the earlier writer gets is counted twice, on every Tape (reported with check="off" too)
RETAIN_GRAD = "retain_grad"


class OverwriteWarning(UserWarning):
    """A recorded launch sequence whose backward pass reads or accumulates the wrong values."""


class OverwriteError(RuntimeError):
    """Raised by ``Tape(check="error")`` at the launch that creates a hazard (at ``backward()`` for mutations)."""


@dataclasses.dataclass(frozen=True)
class Site:
    """One recorded launch of one kernel, and the argument a hazard is about.

    Attributes:
        launch: Its index in ``tape.launches``.
        kernel: The kernel's key.
        argument: The argument's label (``"x_in, x_out"`` for one array passed under several), or ``""``.
        location: Where the user launched it (``file:line``).
    """

    launch: int
    kernel: str
    argument: str
    location: str

    @property
    def ident(self) -> tuple:
        """``(kernel, argument, location)``: the site less its launch number (what makes hazards the same)."""
        return (self.kernel, self.argument, self.location)

    def describe(self) -> str:
        """How messages name the site.

        Returns:
            ``kernel 'k' (launch #n at file:line), argument 'x'``.
        """
        where = f"kernel '{self.kernel}' (launch #{self.launch} at {self.location})"
        return where + (f", {_arguments(self.argument)}" if self.argument else "")


def _arguments(argument: str) -> str:
    """``argument 'x'``, or ``arguments 'x_in' and 'x_out' (one array)`` for an array passed under several labels."""
    names = argument.split(", ")
    if len(names) == 1:
        return f"argument {argument!r}"
    return f"arguments {' and '.join(repr(n) for n in names)} (one array)"


@dataclasses.dataclass(frozen=True)
class Hazard:
    """One distinct hazard: ``writer`` changed values that ``reader`` (stale read, mutation) or an earlier
    writer (overwrite: ``earlier``) depends on.

    Attributes:
        kind: One of `KINDS`: ``"overwrite"``, ``"stale read"``, ``"mutated after record"``,
            ``"read before and after write"``, ``"not checked (graph capture)"``, ``"not checked (arrays in a
            struct)"``.
        writer: The launch that changed the values (None: a mutation found at ``backward()``).
        reader: The launch whose backward reads them (stale read, mutation).
        earlier: The launch that wrote them first (overwrite).
        real: False for an overwrite whose later writer zeroes its store adjoints or of an array without a
            gradient, and for a stale read whose reader's backward reads no value it loaded, or only for the
            adjoints of arrays without a gradient at its launch (kept, not warned about).
        elements: How many elements, where counted.
        cause: For a "read before and after write": ``""`` (one thread read an element before and after writing
            it), ``"aliased"`` (one array under two parameters, with no read twin to order the reads), ``"reads
            unknown"`` (a thread may read what it wrote, through reads the read twin does not follow), ``"reread"``
            (a thread read an element between two writes of the launch: no Tape can serve it) or
            ``"helper store"`` (a ``@wp.func`` helper stores into it, which Warp's backward runs again: an unflagged
            kernel's helper, or any kernel's helper storing through a ``@wp.struct`` it is passed). For an "overwrite":
            ``"no backward"`` (the later kernel is built with ``enable_backward=False``: always real), ``"no
            gradient"`` (the array has none to leak: an integer or bool dtype, or ``requires_grad=False`` when the
            later launch was recorded; never real) or ``"retain_grad"`` (the array was made with
            ``retain_grad=True``: no store adjoint zeroes its gradient, stock or flagged, so the earlier writer's
            inputs get it twice; always real). For an ``"atomic replay"``: ``"kernel"`` (the atomic is in the
            kernel's body), ``"helper"`` (in a ``@wp.func`` it calls, whose atomic the backward applies to memory
            again) or ``"helper log"`` (likewise, in a ``zero_store=True`` kernel, whose replay writes no memory).
        detail: What the kind names beyond its sites: for an ``"atomic replay"``, the atomic
            (`atomic_replay.UsedAtomic`); for a "mutated after record", the change (`journal.Change`: the visible
            calls that made it, with their ``file:line``, or the two points it happened between).
        measured: On a measuring Tape (``measure=True``), after ``backward()``: its effect on the gradients
            (`measure.Measured`); ``real`` then follows it for stale reads and mutations.
    """

    kind: str
    writer: Site | None
    reader: Site | None = None
    earlier: Site | None = None
    real: bool = True
    elements: int = 0
    cause: str = ""
    detail: object = None
    measured: object = None

    def key(self) -> tuple:
        """What makes two hazards the same one (a Tape reports each once): kind, sites less launch numbers.

        Returns:
            A hashable tuple.
        """

        # a launch builds this tuple from its sites' idents and looks it up before building a Hazard (`_write_hazards`)
        key = (
            self.kind,
            None if self.writer is None else self.writer.ident,
            None if self.reader is None else self.reader.ident,
            None if self.earlier is None else self.earlier.ident,
            self.real,
        )
        return key if self.detail is None else (*key, self.detail)

    def site_key(self) -> tuple:
        """`key` without ``real``: the same hazard before and after a measuring Tape measured it.

        Returns:
            A hashable tuple.
        """
        key = self.key()
        return key[:4] + key[5:]

    def message(self) -> str:
        """The warning's or error's text: what happened, where, what to do, and (measured) how much it matters.

        Returns:
            One paragraph naming the kernels, arguments and source lines.
        """
        text = self._finding()
        return text if self.measured is None else f"{text} {self.measured.describe()}"

    def _finding(self) -> str:
        if self.kind == ATOMIC:
            return _atomic_message(self)
        if self.kind == OVERWRITE:
            verdict = (
                "a real error: the later kernel does not zero its store adjoints, so the gradient of the "
                "overwritten values leaks into the earlier launch; decorate it with @wp.kernel(zero_store=True)"
                if self.real
                else "safe: the later kernel zeroes its store adjoints"
            )
            if self.cause == "no gradient":
                verdict = (
                    "safe: the array has no gradient (an integer or bool dtype, or requires_grad=False), so none leaks"
                )
            if self.cause == "no backward":
                verdict = (
                    "a real error: the later kernel is built with enable_backward=False, so no adjoint of its "
                    "stores runs and the gradient of the overwritten values leaks into the earlier launch; build it "
                    "with a backward and @wp.kernel(zero_store=True), or zero the array's .grad after it in a "
                    "tape.record_func"
                )
            if self.cause == RETAIN_GRAD:
                verdict = (
                    "a real error: the array was made with retain_grad=True, and no store adjoint zeroes the "
                    "gradient of such an array (stock Warp's and zero_store=True's alike: retain_grad keeps it for "
                    "you to read), so the earlier launch's adjoint gets the gradient of the overwritten values on "
                    "top of what the later write passes on: counted twice. Inspect the value through a separate "
                    "array (copy it into one made with retain_grad=True), or keep retain_grad=True only on an array "
                    "written once"
                )
            what = f"{self.elements} element(s) written by" if self.elements else "memory written by"
            again = "are written again by" if self.elements else "is written again by"
            return f"overwrite: {what} {self.earlier.describe()} {again} {self.writer.describe()}; {verdict}."
        if self.kind == STALE_READ:
            same = self.reader.launch == self.writer.launch
            return (
                f"stale read: {self.writer.describe()} changes {self.elements} element(s) of an array that "
                f"{'the same launch reads as' if same else self.reader.describe() + ' reads;'}"
                f"{' ' + _arguments(self.reader.argument) + ';' if same else ''} its backward pass will re-read "
                "the new values. Write to a new array, or record with wp.Tape(snapshot=True)."
            )
        if self.kind == REPLAY and self.cause == "helper store":
            return (
                f"read before and after write: in {self.writer.describe()}, a @wp.func helper stores into the "
                "array, which a recorded launch reads. Warp's backward re-runs the helper's stores into memory, "
                "so the snapshot's restore does not hold for the rest of that backward launch and the gradient "
                "may be off. Decorate the kernel with @wp.kernel(zero_store=True) (its replay sends the stores of "
                "a helper's array parameters to a log, never to memory; pass a struct's array to the helper as a "
                "parameter of its own), or store from the kernel itself."
            )
        if self.kind == REPLAY and self.cause == "reread":
            return (
                f"read between writes: in {self.writer.describe()}, {self.elements} element(s) are read by one thread "
                "between two writes of the same launch (after one, before another). Warp's backward reads them as "
                "the last write left them, so the gradient through that read is wrong on any Tape, stock Warp's "
                "too; no snapshot holds the value read. Keep the intermediate value in a local variable, or write "
                "it to a separate array."
            )
        if self.kind == REPLAY and self.cause == "reads unknown":
            return (
                f"read before and after write: in {self.writer.describe()}, a thread may read elements it wrote "
                "earlier in the launch, and the Tape cannot tell which (a read it does not follow, e.g. a tile "
                "load), so no snapshot can make both a read before the write and one after it right: the snapshot "
                "restores the values written, which is what a plain Tape gives (right for reads after the write). "
                "To be sure, write the result to a separate array."
            )
        if self.kind == REPLAY and self.cause == "aliased":
            return (
                f"read before and after write: in {self.writer.describe()}, {self.elements} element(s) are read "
                "through one parameter and written through another, so the Tape cannot tell a read before the "
                "write from one after it, and no snapshot can make both right: the snapshot restores the values "
                "written, which is what a plain Tape gives (right for reads after the write). To be sure, pass "
                "separate arrays."
            )
        if self.kind == REPLAY:
            return (
                f"read before and after write: in {self.writer.describe()}, {self.elements} element(s) are read by "
                "one thread both before and after the same launch writes them. Warp's backward replay reads one "
                "value for both reads, so no snapshot can make both right: the snapshot restores the value written "
                "(right for the later read; the gradient is right only if the earlier read's value does not matter, "
                "as in an accumulation a[i] = a[i] + v). To be sure, write the result to a separate array."
            )
        if self.kind == IN_STRUCT:
            return (
                f"not checked (arrays in a struct): {self.writer.describe()} passes arrays inside a @wp.struct to a "
                "generic parameter, whose fields the Tape cannot know from the kernel: its checks and snapshots say "
                "nothing about them (a stale read or an in-place update through them goes unseen). Type the "
                "parameter with the struct, or pass those arrays as kernel arguments, to have them checked."
            )
        if self.kind == CAPTURED:
            return (
                f"not checked (graph capture): {self.writer.describe()} was recorded inside wp.ScopedCapture / "
                "wp.capture_begin, where Warp records a launch without running it (CPU) or runs it later (CUDA "
                "graph), so Tape checks cannot see what it reads and writes and Tape(snapshot=True) cannot save "
                "its inputs. Record this Tape without graph capture to check it (for Newton's examples, "
                "use_cuda_graph/use_graph = False)."
            )
        found = f"at launch #{self.writer.launch} at {self.writer.location}" if self.writer else "at backward()"
        how = (
            f"outside any recorded kernel launch (wp.copy, assign, fill_, NumPy or Torch writes, untaped launches; "
            f"found {found})"
            if self.detail is None
            else f"{self.detail.describe()} (found {found})"
            if self.detail.writes
            else self.detail.describe()  # it says between which two points
        )
        return (
            f"mutated after record: the array read by {self.reader.describe()} changed after the launch was "
            f"recorded, {how}; its backward pass will read the new values. If that is a bug (an alias of the array "
            "written in place, an untaped write-back), record the change on the Tape or give the launch a copy; if "
            "the backward must read the new values (the adjoint method: a solve after the residual was recorded), "
            "declare it with warp_zerostore.read_at_backward(array)."
        )


def _atomic_message(hazard: Hazard) -> str:
    """An ``"atomic replay"``'s text: the kernel, the helper, the atomic's line, and what the backward does there."""
    use = hazard.detail
    if not use.helper:
        where = f"in {hazard.writer.describe()}, the value wp.{use.atomic} returns at {use.at} is used"
        why = (
            "Warp's backward runs the kernel's forward code again without its atomics, so there the value is not "
            "the forward's"
        )
    else:
        where = (
            f"in {hazard.writer.describe()}, the @wp.func '{use.helper}' called at {use.called_at} uses the value "
            f"wp.{use.atomic} returns ({use.at})"
        )
        why = (
            f"through a helper it changes '{use.array}' again: Warp's backward runs the helper's forward code, "
            f"atomic included, so '{use.array}' advances during backward() (the forward's state changes) and the "
            "value returned is another"
            if hazard.cause == "helper"
            else "through a helper of a zero_store=True kernel, the replay writes no memory but returns the value "
            f"'{use.array}' holds after the forward"
        )
    return (
        f"atomic replay: {where}. The backward replays this atomic: its return differs ({why}), so the gradient "
        "through what is computed from it (an index, an operand) is wrong on any Tape, snapshots included. Keep the "
        "returned value in an array the kernel writes and read it back in a @wp.func_replay (Warp's remedy), or "
        "compute the index without an atomic."
    )


# -- hazard listeners: who hears of each new hazard besides the Tape that found it

_listeners: list = []


@contextlib.contextmanager
def hazard_listener(callback: Callable[[Hazard], None]) -> Iterator[None]:
    """Within the block, every Tape calls ``callback(hazard)`` for each hazard it records (each distinct
    hazard once per Tape; real or not). ``python -m warp_zerostore check`` collects its report this way.

    Args:
        callback: Called with each `Hazard` as it is found.

    Yields:
        Nothing; the callback listens within the ``with`` block.

    Example:
        ```python
        import warnings

        import warp_zerostore as wp
        from warp_zerostore.tape import hazard_listener

        @wp.kernel
        def square_in_place(x: wp.array(dtype=float)):
            x[wp.tid()] = x[wp.tid()] * x[wp.tid()]

        found = []
        x = wp.array([3.0], dtype=float, requires_grad=True)
        with hazard_listener(found.append), warnings.catch_warnings():
            warnings.simplefilter("ignore", wp.OverwriteWarning)
            with wp.Tape(check="warn"):
                wp.launch(square_in_place, dim=1, inputs=[x])
        assert [h.kind for h in found] == ["stale read"]
        ```
    """
    _listeners.append(callback)
    try:
        yield
    finally:
        _listeners.remove(callback)


# -- helpers

_PACKAGE_DIR = os.path.dirname(os.path.dirname(__file__)) + os.sep  # warp_zerostore/


def _is_internal(filename: str) -> bool:
    """Whether a frame of ``filename`` is Warp's runtime or this package, not the user's program. Warp's
    examples and tests are programs as a user writes them: theirs are user frames."""
    internal = _INTERNAL.get(filename)
    if internal is None:
        path = filename if filename.startswith("<") else os.path.abspath(filename)
        internal = _INTERNAL[filename] = (
            path.startswith(_compat.warp_package_dirs() + (_PACKAGE_DIR,))
            and not path.startswith(_compat.warp_user_code_dirs())
        ) or path.startswith("<frozen")
    return internal


_INTERNAL: dict = {}


def _call_site(depth: int = 1) -> str:
    """``file:line`` of the first frame, from ``depth`` frames up, outside Warp's runtime and this package
    (`_is_internal`)."""
    frame = sys._getframe(depth)
    while frame is not None:
        internal = _INTERNAL.get(frame.f_code.co_filename)  # inlined `_is_internal`: four frames a launch
        if internal is None:
            internal = _is_internal(frame.f_code.co_filename)
        if not internal:
            break
        frame = frame.f_back
    if frame is None:
        return "<unknown>"
    # one instruction of one function: one line, without computing it (code objects compare equal across files)
    key = (frame.f_code.co_filename, frame.f_code, frame.f_lasti)
    location = _LOCATIONS.get(key)
    if location is None:
        if len(_LOCATIONS) > 65536:
            _LOCATIONS.clear()
        location = _LOCATIONS[key] = f"{frame.f_code.co_filename}:{frame.f_lineno}"
    return location


_LOCATIONS: dict = {}


def _user_stacklevel() -> int:
    """The ``warnings.warn`` stacklevel (from its caller) of the first frame outside Warp and this package."""
    level, frame = 1, sys._getframe(1)
    while frame is not None and _is_internal(frame.f_code.co_filename):
        frame, level = frame.f_back, level + 1
    return level


def _any(mask: np.ndarray) -> bool:
    """``mask.any()`` for a bool mask, without ``ndarray.any``'s per-call overhead (several times slower on the
    small masks a launch of a few dozen threads makes)."""
    return np.count_nonzero(mask) != 0


def _device_copy(arr):
    with _compat.no_active_tape():
        return warp.clone(arr, requires_grad=False)


def _copy_into(dest, src) -> None:
    with _compat.no_active_tape():
        warp.copy(dest, src)


class _Restore:
    """A Tape entry ``backward()`` calls in reverse order, like a launch's adjoint: copies saved values back."""

    def __init__(self, pairs):
        self.pairs = pairs  # [(array, saved device copy)]

    def __call__(self):
        for arr, saved in self.pairs:
            _copy_into(arr, saved)


class _Tracked:
    """What the Tape knows about one array object (its content, for mutation checks)."""

    def __init__(self, arr):
        self.array = arr  # keeps id() unique while tracked
        #: its content after the last recorded launch that passed it, on its device (`contents.Known`)
        self.values: contents.Known | None = None
        self.read = False  # a recorded launch read an element of it
        #: when ``values`` was last known right: `_point` (the journal's clock, then what was recorded there)
        self.at: tuple = (0, "", "")


# -- one recorded launch, phase by phase


class _ArrayUse:
    """One array argument of a recorded launch and what the Tape saved about it (a plain class with slots: a
    launch makes several, and check mode's cost is per launch)."""

    __slots__ = (
        "label",
        "array",
        "access",
        "labels",
        "crossed",
        "reads",
        "writes",
        "before",
        "changed",
        "known",
        "marks",
        "saved",
        "located",
    )

    def __init__(self, label: str, array, access: ArgumentAccess, labels, crossed: bool):
        self.label = label  # its labels, ", "-joined when one array is passed under several
        self.array = array
        self.access = access  # the union of its labels' accesses
        self.labels = labels
        self.crossed = crossed  # passed under several labels, read through one and written through another
        size = array.size
        self.reads = access.reads and size != 0  # the kernel's source reads it, and it has elements
        self.writes = access.writes and size != 0  # the kernel's source may write it, and it has elements
        #: check mode: the content from before the launch, on its device; after the launch, the content then
        self.before: contents.Known | None = None
        self.changed: np.ndarray | None = None  # the elements whose bytes the launch changed, where compared
        self.known = False  # ``before`` is the content the Tape knew (unchanged since the last launch passing it)
        self.marks: read_twin.ElementReads | None = None  # element reads and writes, when the twin ran
        self.saved = None  # device copy from before the launch (snapshot)
        self.located: Place | None = None  # `Tape._region` of the array, once looked up for this launch

    def reads_known(self) -> bool:
        return self.marks is not None and self.marks.reads_known


def _union(access: ArgumentAccess, other: ArgumentAccess) -> None:
    """One array passed under two labels: what either does; a read through one may follow a store through the
    other."""
    crossed = (access.reads and other.writes) or (access.writes and other.reads)
    access.reads_after_store |= other.reads_after_store or crossed
    access.reads |= other.reads
    access.stores |= other.stores
    access.accumulates |= other.accumulates
    access.value_read |= other.value_read
    access.adjoint_reads_result &= other.adjoint_reads_result
    if access.value_readers is not None:
        access.value_readers = None if other.value_readers is None else access.value_readers | other.value_readers
    access.helper_stores |= other.helper_stores
    access.surely_writes |= other.surely_writes


def _reads_across_labels(launch) -> bool:
    """Whether the launch passes one array under several labels and a thread reads an element after the launch
    wrote it. A PRE backward follows a store to later loads of the same parameter only: a load through another
    label would read the restored pre-launch value. Such a launch gets memory as it left it and the kernel's own
    (POST) backward, which is what a plain Tape runs."""
    return any(
        use.crossed and use.saved is not None and use.reads_known() and use.marks.any("after") for use in launch.uses
    )


def _reads_before_writing(use: _ArrayUse) -> bool:
    """Does the launch read the array's values from before it wrote them? Not where the twin shows every read
    follows the thread's own write (``v_out[i] = ...; x_out[i] = x[i] + v_out[i] * dt``): the value then read is
    the launch's output, which later writers' snapshots keep."""
    if not use.access.reads:
        return False
    if use.reads_known():
        return use.marks.any("before")
    return True


def _helper_stores_harmless(use: _ArrayUse) -> bool:
    """Warp's backward re-runs an unflagged kernel's helper stores into memory, each writing again what it wrote
    in the forward pass (its inputs restored). Harmless where no element the launch writes is read before the
    write (a chain that reads a link only after computing it): every read of a written element then wants the
    value written, which memory holds. Decided by the read twin's marks; without them, never."""
    marks = use.marks
    return marks is not None and marks.reads_known and not _any(marks.before & marks.written)


def _combined_marks(use: _ArrayUse, marks: dict, access: dict) -> read_twin.ElementReads | None:
    """The twin's marks of one array over its labels (reads through a read-only label count as before)."""
    if len(use.labels) == 1:
        return marks.get(use.label)
    found = [marks[label] for label in use.labels if label in marks]
    if not found:
        return None
    if len(found) == 1 and len(use.labels) == 1:
        return found[0]
    known = all(m.reads_known for m in found) and all(label in marks or not access[label].reads for label in use.labels)
    stored = None if any(m.stored is None for m in found) else np.logical_or.reduce([m.stored for m in found])
    rereads = [m.reread for m in found if m.reread is not None]
    return read_twin.ElementReads(
        np.logical_or.reduce([m.before for m in found]),
        np.logical_or.reduce([m.after for m in found]),
        np.logical_or.reduce([m.written for m in found]),
        reads_known=known,
        stored=stored,
        reread=np.logical_or.reduce(rereads) if rereads else None,
    )


class _Plan:
    """What a launch's array uses are, for one kernel and one set of array arguments: worked out once per launch
    site while it passes the same arrays (a loop launches the same kernel on the same arrays at every step)."""

    __slots__ = ("facts", "arrays", "uses", "shared")

    def __init__(self, facts: _KernelFacts, arrays: tuple):
        self.facts = facts
        self.arrays = arrays
        #: ``(label, array, access, labels, crossed)`` per distinct array
        self.uses = [
            (label, value, access, (label,), False)
            for (_, label, access), value in zip(facts.arrays, arrays)
            if isinstance(value, warp.array)
        ]
        if len({id(use[1]) for use in self.uses}) < len(self.uses):
            self.uses = _one_use_per_array(self.uses)
        #: ids of the arrays the launch does not write that lie in a region with one it writes (views), once asked
        self.shared: set | None = None


def _one_use_per_array(uses: list) -> list:
    """One array passed under several labels: one use, with all its labels and the union of their accesses."""
    merged, by_id = [], {}
    for label, value, access, _, _ in uses:
        use = by_id.get(id(value))
        if use is None:
            by_id[id(value)] = use = [label, value, access, [label], False]
            merged.append(use)
            continue
        if len(use[3]) == 1:
            use[2] = dataclasses.replace(use[2])  # the kernel's own entry stays as it is
        use[4] |= (use[2].reads and access.writes) or (use[2].writes and access.reads)
        use[3].append(label)
        use[0] = ", ".join(use[3])
        _union(use[2], access)
    return [tuple(use) for use in merged]


class _Launch:
    """A launch the Tape records: its kernel, its array arguments (each once) and where the user launched it."""

    __slots__ = ("kernel", "index", "location", "device", "uses", "plan", "sites", "replayed")

    def __init__(self, kernel, index: int, location: str, device, plan: _Plan):
        self.kernel = kernel
        self.plan = plan
        uses = [_ArrayUse(*use) for use in plan.uses]
        self.index = index
        self.location = location
        self.device = device
        self.uses = uses
        self.sites: dict = {}
        # Warp's backward replays its reads (False: built with enable_backward=False, so never a reader)
        self.replayed = _compat.kernel_has_backward(kernel)

    def site(self, label: str) -> Site:
        site = self.sites.get(label)
        if site is None:
            site = self.sites[label] = Site(self.index, self.kernel.key, label, self.location)
        return site

    def ident(self, label: str) -> tuple:
        """`Site.ident` of ``site(label)``, without building the Site."""
        return (self.kernel.key, label, self.location)


def _gradient_reads(launch: _Launch, readers: frozenset | None) -> bool:
    """Does any of ``readers`` (`ArgumentAccess.value_readers`: parameters and struct paths whose adjoints read a
    value the launch loaded) reach an array of this launch with a gradient? A scalar parameter has none (Warp's
    Tape keeps no gradient of it); None: any may."""
    if readers is None:
        return True
    if not readers:
        return False
    for use in launch.uses:
        if not _compat.carries_gradient(use.array):
            continue
        for label in use.labels:
            if any(label == root or label.startswith(root + ".") for root in readers):
                return True
    return False


class _KernelFacts:
    """What the Tape asks of a kernel at every launch, looked up once per kernel."""

    __slots__ = ("kernel", "arrays", "positions", "take", "fields", "structs", "access")

    def __init__(self, kernel):
        self.kernel = kernel
        access = argument_access(kernel)
        parameters = _compat.kernel_parameters(kernel)
        #: ``[(position, label, ArgumentAccess)]`` of its array parameters, then of the array fields of its
        #: ``@wp.struct`` parameters (labelled ``"s.q"``), which `fields` says where to find
        self.arrays = [
            (position, label, access[label]) for position, (label, _) in enumerate(parameters) if label in access
        ]
        self.positions = [position for position, _, _ in self.arrays]
        #: the arrays at `positions` of a launch's values, as a tuple (where every position is given)
        self.take = operator.itemgetter(*self.positions) if len(self.positions) > 1 else None
        #: ``[(position of the struct parameter, path of the field)]``, in the order of their entries in `arrays`
        self.fields = []
        for label, (position, path, field_access) in struct_field_access(kernel).items():
            self.arrays.append((position, label, field_access))
            self.fields.append((position, path))
        #: ``{label: ArgumentAccess}`` of every entry of `arrays`
        self.access = {label: use for _, label, use in self.arrays}
        #: ``[(position, label)]`` of the parameters that may take a ``@wp.struct`` whose arrays are not followed
        #: (a generic parameter: its fields are not known from the kernel)
        self.structs = [(position, label) for position, (label, t) in enumerate(parameters) if _compat.is_generic(t)]


def _facts(kernel) -> _KernelFacts:
    memo = _compat.memo(kernel)
    cached = memo.get("tape.facts")
    if cached is None:
        cached = memo["tape.facts"] = _KernelFacts(kernel)
    return cached


class _Recording(threading.local):
    active = False  # a recorded launch is under way on this thread: a launch it makes (a user's wrapper calling
    # the next name in the chain, ``warp.launch`` -> ``context.launch``) is that same launch, not another
    backward = 0  # package Tapes' backward() under way on this thread (nested: a callback's own backward)


_recording = _Recording()


def _launch_hook(original, args, kwargs):
    tape = _compat.active_tape()
    if isinstance(tape, Tape) and tape._intercepts() and not _recording.active:
        _recording.active = True
        try:
            return tape._recorded_launch(original, args, kwargs)
        finally:
            _recording.active = False
    if not _recording.active and _journaling(tape):  # a launch no package Tape records: its writes, by call site
        _journal_launch(_compat.launch_arguments(args, kwargs))
    return original(*args, **kwargs)


def _journaling(tape) -> bool:
    """Whether a call goes into the journal now: while a Tape holds it, except the calls a backward() makes with no
    checking or snapshot Tape recording (Warp's seeding of gradients, the restores, the measuring passes). A Tape
    entered inside a backward (a checkpointed rollout re-recording a step from a callback) records and journals as
    anywhere else."""
    if not JOURNAL.holders:
        return False
    return not _recording.backward or (isinstance(tape, Tape) and tape._intercepts())


def _host_write_hook(name, original, args, kwargs):
    if _recording.active:
        return original(*args, **kwargs)
    tape = _compat.active_tape()
    if _journaling(tape):
        write = host_writes.described(name, args, kwargs)
        if write is not None:
            JOURNAL.wrote(write.dest, _HOST_WRITE_NAMES[name], _call_site(3))
    _recording.active = True  # assign's own wp.copy is part of the same write
    try:
        if isinstance(tape, Tape) and tape.snapshot:
            return tape._recorded_host_write(name, original, args, kwargs)
        return original(*args, **kwargs)
    finally:
        _recording.active = False


#: how a report names each host write (`_compat.HOST_WRITES`)
_HOST_WRITE_NAMES = {"zero_": "zero_()", "fill_": "fill_()", "assign": "assign()", "copy": "wp.copy"}


def _journal_launch(a: dict) -> None:
    """A launch that no package Tape records: the arrays its source may write go into the journal, with its call."""
    if a.get("adjoint") or a.get("record_cmd"):
        return  # a backward's launch writes gradients; a command is launched later
    kernel = a["kernel"]
    facts = _compat.memo(kernel)  # kept on the kernel: gone with it
    writes = facts.get("tape.journaled")
    if writes is None:
        writes = facts["tape.journaled"] = _written_arguments(kernel)
    inputs, outputs = a.get("inputs") or (), a.get("outputs")
    values = list(inputs) + list(outputs) if outputs else inputs
    count, location = len(values), None
    for position, path, what in writes:
        value = values[position] if position < count else None
        if path is not None:
            value = _compat.struct_field(value, path) if _compat.is_struct_instance(value) else None
        if isinstance(value, warp.array):
            location = location or _call_site(3)
            JOURNAL.wrote(value, what, location)


def _written_arguments(kernel) -> list:
    """``[(position, struct field path or None, how the journal names the launch)]`` of the arrays a kernel's source
    may write."""
    facts = _facts(kernel)
    what = f"an untaped launch of kernel '{_compat.kernel_key(kernel)}'"
    paths = [None] * len(facts.positions) + [path for _, path in facts.fields]
    return [(position, path, what) for (position, _, access), path in zip(facts.arrays, paths) if access.writes]


def _point(launch: _Launch) -> tuple:
    """A moment the Tape knew an array's content: the journal's clock after ``launch``, and the launch."""
    return (JOURNAL.clock, launch.kernel.key, launch.location)


def _describe_point(at: tuple) -> str:
    _, kernel, location = at
    if kernel:
        return f"the recorded launch of kernel '{kernel}' at {location}"
    return f"the recorded {location}" if location else "the Tape's recording"


def _describe_found(writer: Site | None, backward_at: str) -> str:
    if writer is None:
        return f"backward() at {backward_at}"
    return f"the recorded launch of kernel '{writer.kernel}' at {writer.location}"


class _JournalHold:
    """A Tape's hold on the journal (`journal.JOURNAL`) and the hooks that fill it, from the moment it is entered
    until its ``backward()``, ``reset()`` or collection: never from import."""

    def __init__(self):
        self.open = True
        _compat.install_launch_hook(_launch_hook)
        _compat.install_host_write_hook(_host_write_hook)
        JOURNAL.hold()

    def close(self) -> None:
        if self.open:
            self.open = False
            JOURNAL.release()
            _compat.remove_host_write_hook()
            _compat.remove_launch_hook()


def _not_measurable(hazard: Hazard) -> str:
    """Why putting recorded values back cannot measure ``hazard`` (not a stale read, not a mutation)."""
    if hazard.kind == OVERWRITE and hazard.cause == RETAIN_GRAD:
        return "a retain_grad double count: no value read at backward() causes it, so no value put back changes it"
    if hazard.kind == OVERWRITE:
        return "an overwrite's gradient leak: no value read at backward() causes it, so no value put back changes it"
    if hazard.kind == ATOMIC:
        return "an atomic replay: what the backward's replay returns is no recorded value"
    return "a construct inside the kernel: no values put back serve its reads"


def _read_group(launch: _Launch) -> tuple:
    """A measuring Tape's group (`measure`): a reader launch site, whose launches get back what they read."""
    return ("read", launch.kernel.key, launch.location)


def _hazard_group(hazard: Hazard) -> tuple | None:
    """The group whose values put back measure ``hazard``: its reader's (None: putting values back cannot measure
    it)."""
    if hazard.kind in (STALE_READ, MUTATED):
        return ("read", hazard.reader.kernel, hazard.reader.location)
    return None


_OVER_CAP = (
    f"what its reader read was past the measuring memory cap ({measure.MEMORY_CAP >> 20} MiB, "
    "warp_zerostore.tape.measure.MEMORY_CAP), so it was not kept"
)
_LEAKS = (
    "putting back the values its reader read changes no gradient, but the change is also a write no adjoint sees, "
    "and the gradient of the new values (read by a recorded launch after it, or seeded by backward()) reaches what "
    "the readers before it read, which no value put back measures"
)


def _overlap(one, other) -> bool:
    """Do two arrays share memory on one device?"""
    if str(one.device) != str(other.device):
        return False
    (a, b), (c, d) = byte_span(one), byte_span(other)
    return a < d and c < b


_THROUGH_A_VIEW = (
    "its reader read the memory through another array object than the one written (a view), whose content before "
    "the write is not kept"
)


def _entry_site(entry, index: int, label: str) -> Site:
    """The `Site` of the Tape's recorded launch ``entry`` (at ``index``), where Warp recorded its caller."""
    return Site(index, _compat.launch_kernel(entry).key, label, _compat.launch_caller(entry) or "<unknown>")


def _atomic_hazard(kernel, site: Site, use: atomic_replay.UsedAtomic) -> Hazard:
    cause = "kernel" if not use.helper else "helper" if atomic_replay.reruns(kernel) else "helper log"
    return Hazard(ATOMIC, writer=site, cause=cause, detail=use)


class Tape(_compat.WarpTape):
    """Warp's Tape, with overwrite checks and snapshots.

    Every hazard found, real or not, is in ``tape.hazards`` (`Hazard` s); ``tape.snapshot_bytes`` says how much
    the snapshots saved, ``tape.reset()`` frees them. Launches recorded under graph capture cannot be checked or
    snapshotted: the Tape says so (and ``snapshot=True`` raises). `visualize` draws the hazards.

    Args:
        check: ``"off"`` (None: ``warp_zerostore.config.check``, whose default is ``"off"``), ``"warn"`` (an
            `OverwriteWarning` per distinct real hazard) or ``"error"`` (`OverwriteError` at the launch that
            creates it, or at ``backward()`` for a mutation).
        snapshot: Save, before each recorded launch, what it overwrites that a recorded launch reads, so that
            in-place updates are differentiable.
        measure: Measure, at ``backward()``, how much each stale read and mutation after record changes this run's
            gradients (extra backward passes with what the readers read put back, `measure`); the gradients stay
            the plain Tape's, each hazard is reported with its effect, one without effect as a note. None:
            ``warp_zerostore.config.measure`` where it applies (checks on, no snapshots). Implies ``check="warn"``
            unless given.

    Raises:
        ValueError: ``check`` is not one of ``"off"``, ``"warn"``, ``"error"``; ``measure=True`` with
            ``snapshot=True`` or ``check="off"``.
        TypeError: ``measure`` is not True, False or None.

    Example:
        ```python
        import warp_zerostore as wp

        @wp.kernel(zero_store=True)
        def square_in_place(x: wp.array(dtype=float)):
            i = wp.tid()
            x[i] = x[i] * x[i]

        x = wp.array([3.0], dtype=float, requires_grad=True)
        tape = wp.Tape(snapshot=True)
        with tape:
            wp.launch(square_in_place, dim=1, inputs=[x])
            wp.launch(square_in_place, dim=1, inputs=[x])
        tape.backward(grads={x: wp.array([1.0], dtype=float)})
        assert x.grad.numpy()[0] == 108.0  # d(x**4)/dx at 3
        assert x.numpy()[0] == 81.0 and tape.snapshot_bytes == 8
        ```
    """

    def __init__(self, check: CheckLevel | None = None, snapshot: bool = False, measure: bool | None = None):
        super().__init__()
        if measure is None:  # the process default: where it can apply (checks, no snapshots)
            measure = config.measure and not snapshot and (check or config.check) != "off"
        validate_measure(measure, "Tape(measure=...)")
        if measure and snapshot:
            raise ValueError(
                "Tape(measure=True) measures what the hazards change in a plain Tape's gradients; with "
                "snapshot=True the restores already put the recorded values back: use one or the other"
            )
        if measure and check == "off":
            raise ValueError(
                "Tape(measure=True) measures the hazards the checks find: give check='warn' or 'error', or leave "
                "check out (then 'warn')"
            )
        if check is None and measure and config.check == "off":
            check = "warn"
        self.check = validate_check(config.check if check is None else check, "Tape(check=...)")
        self.snapshot = bool(snapshot)
        self.measure = measure
        self.hazards: list[Hazard] = []
        self._hazard_keys: set = set()
        self._hooked = False
        self._hooked_writes = False
        self._journal: _JournalHold | None = None
        self._backward_at = ""
        self._clear_tracking()

    def _clear_tracking(self):
        self._tracked: dict = {}
        self._books: dict = {}  # device alias -> AddressBook
        self._located: dict = {}  # id -> (array, its Place)
        self._sites: list = []  # writers as (launch, Site.ident), indexed from Region.writer
        self._plans: dict = {}  # (id(kernel), launch site) -> _Plan of its last launch
        self._snapshotted: dict = {}  # id -> array with at least one snapshot
        self.snapshot_bytes: int = 0
        # snapshot Tape without checks: fingerprints of the arrays recorded launches read, compared at backward()
        self._fingerprints = Fingerprints()
        self._restored_by: dict = {}  # id -> index of the last launch that saved a restore of the array
        #: measure=True: what its readers read, put back in extra backward passes (`measure`)
        self._measuring = measure.Measure() if self.measure else None
        #: measure=True, after backward(): each pass's gradients on the host, by pass (``"plain"``, ``"joint"``, a
        #: reader group ``("read", kernel, file:line)``), then by gradient (``"x.grad"``), and the arrays those names
        #: stand for
        self.measured_gradients: dict = {}
        self.measured_arrays: dict = {}

    def _intercepts(self) -> bool:
        return self.check != "off" or self.snapshot

    # -- entering and leaving: the launch hook exists only while a checking or snapshotting Tape is entered

    def __enter__(self):
        result = super().__enter__()
        if self._intercepts():
            _compat.install_launch_hook(_launch_hook)
            self._hooked = True
            if self._journal is None or not self._journal.open:  # until backward(): the calls that change arrays
                self._journal = _JournalHold()
                weakref.finalize(self, self._journal.close).atexit = False
        if self.snapshot:  # zero_, fill_, assign, untaped copies: recorded as writes while this Tape records
            _compat.install_host_write_hook(_host_write_hook)
            self._hooked_writes = True
        return result

    def __exit__(self, exc_type, exc_value, traceback):
        try:
            if self.snapshot and self.check == "off" and exc_type is None:
                self._serve_last_readers()
            return super().__exit__(exc_type, exc_value, traceback)
        finally:
            if self._hooked:
                self._hooked = False
                _compat.remove_launch_hook()
            if self._hooked_writes:
                self._hooked_writes = False
                _compat.remove_host_write_hook()

    # -- recording: the phases of one launch

    def _recorded_launch(self, original, args, kwargs):
        a = _compat.launch_arguments(args, kwargs)
        if a.get("adjoint") or not a.get("record_tape", True) or a.get("record_cmd"):
            _journal_launch(a)
            return original(*args, **kwargs)
        launch = self._plan(a)
        if _compat.is_capturing(launch.device):
            return self._captured(launch, original, args, kwargs)
        found = self._before(launch, a)
        found += self._struct_arguments(launch, a)
        if self.snapshot and self.check == "off" and self._fingerprints.watched:
            self._fingerprints.before(launch)
        result = original(*args, **kwargs)
        if _compat.tape_launch_count(self) <= launch.index:  # not recorded (e.g. the Tape was left inside)
            return result
        entry = self.launches[launch.index]
        _compat.note_launch_caller(entry, launch.location)  # Warp's own names the hook's frame
        if _compat.is_kernel_launch(entry) and _compat.launch_kernel(entry) is not launch.kernel:
            launch.kernel = _compat.launch_kernel(entry)  # the overload actually launched
            launch.replayed = _compat.kernel_has_backward(launch.kernel)
            launch.sites.clear()
        found += self._after(launch)
        found += self._atomic_replays(launch)
        if self.snapshot or self._measuring is not None:
            self._save_snapshots(launch)
            if self.check == "off":
                self._fingerprint(launch)

        if found:
            self._report(found)
        return result

    def _plan(self, a: dict) -> _Launch:
        """The launch's array arguments that the kernel uses: each array once, with all its labels and the union
        of their accesses (``inputs=[x], outputs=[x]`` is one array, read and written)."""
        kernel = a["kernel"]
        facts = _facts(kernel)
        inputs, outputs = a.get("inputs") or (), a.get("outputs")
        values = list(inputs) + list(outputs) if outputs else inputs
        count = len(values)
        positions = facts.positions
        if facts.take is not None and positions[-1] < count:
            arrays = facts.take(values)
        else:
            arrays = tuple(values[position] if position < count else None for position in positions)
        if facts.fields:  # the arrays a struct holds now (a field can be set anew between launches)
            arrays += tuple(
                _compat.struct_field(values[position], path)
                if position < count and _compat.is_struct_instance(values[position])
                else None
                for position, path in facts.fields
            )
        location = _call_site(3)  # above _plan, _recorded_launch: _launch_hook, then the frames that called it
        # One plan per launch site, kept while the site passes the same arrays (a loop's step); a rollout over new
        # states replaces it at every launch, so nothing piles up.
        key = (id(kernel), location)
        plan = self._plans.get(key)
        if plan is None or plan.facts is not facts or not all(map(operator.is_, plan.arrays, arrays)):
            plan = self._plans[key] = _Plan(facts, arrays)
        device = a.get("device")
        if device is None:
            device = plan.uses[0][1].device if plan.uses else warp.get_device()
        return _Launch(kernel, _compat.tape_launch_count(self), location, device, plan)

    def _struct_arguments(self, launch: _Launch, a: dict) -> list:
        """A `IN_STRUCT` report per ``@wp.struct`` holding arrays passed where the kernel's parameter is generic: its
        fields are not known from the kernel, so the Tape cannot follow them (a typed struct's are followed)."""
        structs = launch.plan.facts.structs
        if not structs:
            return []
        values = list(a.get("inputs") or []) + list(a.get("outputs") or [])
        return [
            Hazard(IN_STRUCT, writer=launch.site(label))
            for position, label in structs
            if position < len(values)
            and _compat.is_struct_instance(values[position])
            and _compat.struct_arrays(values[position])
        ]

    def _atomic_replays(self, launch: _Launch) -> list:
        """An `ATOMIC` hazard per atomic whose returned value the kernel uses (`atomic_replay`), named at the
        launch; a kernel without a backward is never replayed."""
        if not launch.replayed:
            return []
        return [
            _atomic_hazard(launch.kernel, launch.site(""), use) for use in atomic_replay.used_atomics(launch.kernel)
        ]

    def _captured(self, launch: _Launch, original, args, kwargs):
        """Under graph capture the launch does not run now: record it, and say it was not checked."""
        result = original(*args, **kwargs)
        _log.info("kernel %r launched under graph capture: not checked", _compat.kernel_key(launch.kernel))
        self._report([Hazard(CAPTURED, writer=launch.site(""))], force_error=self.snapshot)
        return result

    def _before(self, launch: _Launch, a: dict) -> list:
        """Element reads (the read twin, on copies), host copies, mutation checks, snapshot copies."""
        checking = self.check != "off"
        found = []
        # Checks need the elements read; snapshots need them only where a thread may read its own store (then
        # what the launch read is not what the array held before it).
        # Checks also need the elements written, whatever the values stored: the twin marks them.
        # A kernel without a backward is never replayed, so its reads cannot be stale: no twin for it (what it writes
        # still comes from the content comparison; a store of the value already there changes nothing it replays).
        # A snapshot needs them where a thread may read its own store (what the launch read is then not what the
        # array held before it), or a helper of an unflagged kernel stores (whether any element it writes is read
        # before the write decides whether Warp's replayed helper stores are harmless).
        twin_needed = launch.replayed and (
            checking
            or (
                self.snapshot
                and any(
                    use.access.reads_after_store
                    or (
                        use.access.helper_stores  # re-run into memory: unflagged, or through a struct (`reruns`)
                        and (effective_zero_store(launch.kernel) is not True or any("." in x for x in use.labels))
                    )
                    for use in launch.uses
                )
            )
        )
        if twin_needed and launch.uses:
            marks = read_twin.element_reads(launch.kernel, a)
            access = _facts(launch.kernel).access
            for use in launch.uses:
                use.marks = _combined_marks(use, marks, access)
        if checking:
            self._contents_before(launch, found)
        if self.snapshot or self._measuring is not None:
            for use in launch.uses:
                wanted = use.writes and (_reads_before_writing(use) or self._read_unsaved(use.array))
                if wanted and self._measuring is not None and not self._measure_room(use.array):
                    self._measuring.not_kept(use.array, _OVER_CAP)
                    wanted = False
                if wanted:
                    use.saved = _device_copy(use.array)
        return found

    def _measure_room(self, arr) -> bool:
        """Whether the measuring Tape's saves may grow by a copy of ``arr`` within `measure.MEMORY_CAP`."""
        held = self.snapshot_bytes + self._measuring.bytes
        return held + arr.size * _compat.dtype_size_bytes(arr.dtype) <= measure.MEMORY_CAP

    def _contents_before(self, launch: _Launch, found: list) -> None:
        """Check mode: ``use.before``, each array's content before the launch, where anything needs it, and the
        mutations of an array a recorded launch read since the Tape last saw it (all compared in one launch).

        Needed for an array the launch writes (what changed), one that shares memory with such an array (a view
        of it), one a recorded launch reads (a later change is a mutation) or this launch may read (it is replayed).
        An array only read by a kernel without backward, and by no replayed launch before, needs nothing: nothing
        that changes it can be stale or mutated for anyone yet.
        """
        compared, items = [], []
        for use in launch.uses:
            arr = use.array
            tracked = self._tracked.get(id(arr))
            if tracked is not None and tracked.read and tracked.values is not None:
                use.before = tracked.values  # compared, and brought to the content now
                if use.before.same(arr):  # on the CPU, unchanged (the usual case): no mask, no launch
                    use.known = True
                    continue
                compared.append(use)
                # a measuring Tape keeps the content before a change, to put it back in its extra passes
                items.append((arr, use.before, self._measuring is None, True))
            elif use.writes or (launch.replayed and use.reads) or self._shares_written(launch, use):
                use.before = contents.Known(arr, refresh=False)
                if use.before.host is None:  # off the CPU, its content comes with the comparisons (a CPU copy has it)
                    items.append((arr, use.before, True, False))
        if not items:
            return
        masks = iter(m for m in contents.changed_many(items) if m is not None)
        for use in compared:
            changed = next(masks)
            if not _any(changed):  # unchanged (the usual case)
                use.known = True
            else:
                tracked, reads = self._tracked[id(use.array)], launch.replayed and use.access.reads
                found.extend(self._mutations(use.array, changed, launch.site(use.label), tracked, reads))
                if self._measuring is not None:
                    use.before.refresh(use.array)  # now the content the launch reads

    def _shares_written(self, launch: _Launch, use: _ArrayUse) -> bool:
        """Does an array the launch does not write lie in a memory region with one it writes (a view of it)? Its
        content may then change too. Worked out once per plan: arrays that overlap share a region from the moment
        both are located (ones that share a region later without overlapping never change each other)."""
        plan = launch.plan
        if plan.shared is None:
            written = [u for u in launch.uses if u.writes]
            plan.shared = set()
            if written and len(written) < len(launch.uses):
                for u in launch.uses:  # every array located first: a region one of them merges is gone
                    if u.array.size:
                        self._locate(u)
                regions = {id(self._locate(u).region) for u in written}
                plan.shared = {
                    id(u.array)
                    for u in launch.uses
                    if not u.writes and u.array.size and id(self._locate(u).region) in regions
                }
        return id(use.array) in plan.shared

    def _mutations(self, arr, changed: np.ndarray, writer: Site | None, tracked: _Tracked, read_after=False) -> list:
        """Mutation hazards for the readers of the elements ``changed`` marks (changed since the Tape last saw
        ``arr``, which ``tracked`` says when), each naming the change (`journal`); ``read_after``: the launch that
        found it (``writer``) reads the array, whose backward it is replayed in."""
        if is_declared(arr):
            return []  # the backward must read the new values: the user said so (`read_at_backward`)
        if not _any(changed):
            return []
        place = self._region(arr)
        region, slots = place.region, place.slots[changed]
        # real whatever the reader does with the values: a change outside recorded launches is also a write no
        # adjoint sees, over what a recorded launch may have written (its gradient leaks there), which this does
        # not follow on its own (the program fuzzer found misses when linear readers' mutations were not real)
        readers = [Site(reader[0], *reader[1]) for reader, bitmap, _ in region.reads.values() if _any(bitmap[slots])]
        if not readers:
            return []
        change = self._change(arr, tracked.at, writer)
        found = [Hazard(MUTATED, writer=writer, reader=reader, detail=change) for reader in readers]
        if self._measuring is not None:
            self._keep_for_measuring(arr, tracked)
            # the change is also a write no adjoint sees (one would zero the gradient of what it overwrote): where a
            # launch after it reads the array, or the backward seeds its gradient, the gradient of the new values
            # reaches the readers before it, which no value put back measures (the seeds are known at backward())
            for hazard in found:
                self._measuring.leaky[hazard.key()] = True if read_after else arr
        return found

    def _keep_for_measuring(self, arr, tracked: _Tracked) -> None:
        """A measuring Tape keeps the content ``arr`` had before a change after record (its known copy, not brought
        up to date yet), for the launches that read it since its last change (`measure`)."""
        if not self._measure_room(arr):
            self._measuring.not_kept(arr, _OVER_CAP)
            return
        self._measuring.changed(arr, measure.content_copy(tracked.values.ptr, arr))
        self._measuring.bytes += arr.size * _compat.dtype_size_bytes(arr.dtype)

    def _change(self, arr, at: tuple, writer: Site | None):
        """The `journal.Change` of ``arr`` since point ``at`` (`_point`), found at ``writer``'s launch or, for None,
        at ``backward()``."""
        return JOURNAL.change(arr, at[0], _describe_point(at), _describe_found(writer, self._backward_at))

    def _after(self, launch: _Launch) -> list:
        """Reads recorded, then writes compared with earlier writes and reads; known contents refreshed."""
        checking = self.check != "off"
        found = []
        # Warp's backward never runs the adjoint of a kernel built with enable_backward=False: its reads are
        # never replayed, so they cannot be stale.
        if launch.replayed:
            for use in launch.uses:
                if use.reads:
                    if use.reads_known():
                        if use.marks.any("before"):
                            self._record_read(launch, use, "before")
                    else:
                        self._record_read(launch, use, None)
        if not checking:  # a snapshot Tape without checks compared no content (`before` is the checks')
            if launch.replayed:
                self._record_reads_after(launch)
            return found
        changed_regions = []
        # the arrays the launch may have changed: written, or over memory it wrote (views)
        written, compared = [], []
        for use in launch.uses:
            if use.before is None:
                continue
            compared.append(use)
            if use.writes or self._shares_written(launch, use):
                written.append(use)
        batch = []  # off the CPU, their changes all compared in one launch (their copies take the content)
        for use in written:
            if use.before.host is None:
                batch.append(use)
                continue
            mask = use.before.compare(use.array)  # on the CPU, in place (None: unchanged)
            use.changed = contents.unchanged(use.array.shape) if mask is None else mask
        if batch:
            masks = contents.changed_many([(use.array, use.before, True, True) for use in batch])
            for use, mask in zip(batch, masks):
                use.changed = mask
        for use in compared:
            unchanged = use.changed is None
            if unchanged and use.known:  # known and unchanged: nothing to refresh
                continue
            # Known content matters for arrays a recorded launch reads (this one's included: its reads after its own
            # writes are recorded below); the first launch that reads another copies it then.
            tracked = self._tracked.get(id(use.array))
            if tracked is None and launch.replayed and use.reads:
                tracked = self._track(use.array)
            if not unchanged:
                # Written: what the twin saw stored (whatever the value), and what changed (stores it cannot see);
                # the copy of the content before became the content after (above)
                if use.marks is None:
                    changed = use.changed
                    count = 0 if changed is contents.unchanged(changed.shape) else np.count_nonzero(changed)
                else:
                    changed = use.changed | use.marks.written
                    count = np.count_nonzero(changed)
                if count:
                    found.extend(self._write_hazards(launch, use, changed, count))
                    changed_regions.append(use.array)
            if tracked is not None:
                tracked.values = use.before
                tracked.at = _point(launch)
            elif not use.known:  # a copy made for this launch only
                use.before.release()
                use.before = None
        if launch.replayed:
            self._record_reads_after(launch)
            found.extend(self._rereads(launch))
        if changed_regions:
            self._refresh_views(launch, changed_regions)
        return found

    def _record_reads_after(self, launch: _Launch) -> None:
        """A thread's read of its own write: not stale for this launch's writes, but it is for later writers."""
        for use in launch.uses:
            if use.reads and use.reads_known() and use.marks.any("after"):
                self._record_read(launch, use, "after")
            # wp.atomic_min's backward reads the elements as the launch left them (which value won)
            if use.access.adjoint_reads_result and use.reads_known() and use.marks.any("written"):
                self._record_read(launch, use, "written")

    def _rereads(self, launch: _Launch) -> list:
        """Elements a thread read between two writes of the launch, where the backward that runs reads them from
        memory, which holds the last write: wrong on any Tape. A ``zero_store=True`` kernel whose backward reports no
        replay issue serves such a read from its log (the later write follows the read)."""
        rereads = [
            use
            for use in launch.uses
            if use.marks is not None and use.marks.reread is not None and use.marks.any("reread")
        ]
        if not rereads or replays_exactly(launch.kernel, POST):
            return []
        return [
            Hazard(REPLAY, writer=launch.site(use.label), elements=use.marks.count("reread"), cause="reread")
            for use in rereads
        ]

    def _save_snapshots(self, launch: _Launch) -> None:
        """Restore entries around the launch: before its adjoint, what it read; after its adjoint, its input."""
        saving = False
        for use in launch.uses:
            if use.writes:  # for the host writes after it (`_recorded_host_write`)
                place = self._locate(use)
                place.region.write_any[place.index] = True
            saving = saving or use.saved is not None
        rereading = launch.replayed and any(
            use.marks is not None and use.marks.reread is not None and use.marks.any("reread") for use in launch.uses
        )
        if not (saving or rereading):
            return  # nothing saved and no read between writes: nothing to decide (most launches)
        read_values, inputs = [], []
        found = []
        # A kernel that replays exactly (zero_store=True, no ReplayWarning) serves a thread's reads of its own
        # stores from its replay log, given memory as the launch read it: its PRE backward (codegen/replay.py),
        # run in its place when the restored memory is that. Where no PRE backward can be built, the Tape
        # restores what a stock kernel needs and warns where that cannot be right.
        exact = replays_exactly(launch.kernel)
        pre = pre_backward(launch.kernel) if exact and not _reads_across_labels(launch) else None
        exact = pre is not None
        # Stock Warp's backward re-runs an unflagged kernel's helper stores into memory; a flagged kernel's replay
        # sends those of array parameters to its log, not those through a struct a helper is passed.
        backward = _compat.kernel_has_backward(launch.kernel)
        replays_helper_stores = effective_zero_store(launch.kernel) is not True and backward
        for use in launch.uses:
            if use.saved is None:
                continue
            if use.changed is None and (use.reads_known() or use.crossed):
                use.changed = contents.changed(use.array, use.saved)  # the launch's changes, on the device
            unchanged = (use.changed is not None and not _any(use.changed)) or (
                use.before is None and not use.access.surely_writes and observe.unchanged(use.saved, use.array)
            )
            if unchanged:  # no snapshot needed: nothing to restore (known when compared; or observed, where the
                # source only says "may write", `access`)
                continue
            self._snapshotted[id(use.array)] = use.array
            self._restored_by[id(use.array)] = launch.index
            self._served_by_restore(use)
            through_struct = backward and any("." in label for label in use.labels)
            reruns = (replays_helper_stores or through_struct) and use.access.helper_stores
            if reruns and not _helper_stores_harmless(use):
                found.append(Hazard(REPLAY, writer=launch.site(use.label), cause="helper store"))
            saved_bytes = use.saved.size * _compat.dtype_size_bytes(use.saved.dtype)
            if use.crossed and not use.reads_known():
                # Read through one parameter, written through another, with no twin to mark the order (the twin
                # of such a launch shares its shadows between the labels, so it can): the Tape cannot tell a
                # read before the write from one after. Restore what the launch wrote (what a plain Tape gives),
                # and say so.
                read_values.append((use.array, _device_copy(use.array)))
                inputs.append((use.array, use.saved))
                self.snapshot_bytes += 2 * saved_bytes
                elements = int(np.count_nonzero(use.changed))  # every element counts as read
                found.append(Hazard(REPLAY, writer=launch.site(use.label), elements=elements, cause="aliased"))
                continue
            after = use.marks.after if use.reads_known() else None
            if after is None and use.access.reads_after_store and not exact:
                # A thread may read what it stored, and the twin cannot say which elements (a read through a tile,
                # say): the pre-launch values would be wrong for those reads. Restore what the launch wrote (what
                # a plain Tape gives), and say so.
                read_values.append((use.array, _device_copy(use.array)))
                inputs.append((use.array, use.saved))
                self.snapshot_bytes += 2 * saved_bytes
                found.append(Hazard(REPLAY, writer=launch.site(use.label), cause="reads unknown"))
                continue
            if after is None or not _any(after):
                read_values.append((use.array, use.saved))
                self.snapshot_bytes += saved_bytes
                if reruns:  # the adjoint writes the array again: put the input back for the earlier launches
                    inputs.append((use.array, use.saved))
                continue
            both = after & use.marks.before
            written = after & ~both if exact else after
            values = _device_copy(use.array)  # what the launch wrote where a thread read its own write,
            contents.blend(values, use.saved, written)  # its input elsewhere
            read_values.append((use.array, values))
            inputs.append((use.array, use.saved))
            self.snapshot_bytes += 2 * saved_bytes
            if _any(both) and not exact:
                found.append(Hazard(REPLAY, writer=launch.site(use.label), elements=int(np.count_nonzero(both))))
        if not exact and launch.replayed:
            found.extend(self._rereads(launch))
        if self._measuring is not None:
            self._switched(launch, read_values, inputs, pre, found)
            return
        if read_values and pre is not None and pre is not launch.kernel:
            _compat.replace_launch_kernel(self, launch.index, pre)
        if read_values:
            _compat.append_tape_callback(self, _Restore(read_values))
        if inputs:
            _compat.insert_tape_callback(self, launch.index, _Restore(inputs))
        if found:
            self._report(found)

    def _switched(self, launch: _Launch, read_values: list, inputs: list, pre, found: list) -> None:
        """A measuring Tape keeps what the snapshot Tape would restore, for the readers it serves (`measure`): the
        launch's input for the launches that read the arrays since their last change, what it read itself for its
        own reads; its PRE twin where those are put back. What no restore can make right here (``found``: a thread
        read an element before and after writing it, ...) makes its own reads "not measured" instead of a report.
        Other arrays over memory it wrote (views) had readers whose values are not kept."""
        group = _read_group(launch)
        for hazard in found:
            self._measuring.inexact.setdefault(group, hazard.message())
        entry = self.launches[launch.index]
        if read_values and pre is not None and pre is not launch.kernel:
            self._measuring.swaps.append(measure.Swap(entry, entry[0], pre, group))
        before = {id(arr): saved for arr, saved in inputs}
        for arr, values in read_values:
            self._measuring.changed(arr, before.get(id(arr), values), own=entry, own_values=values)
        written = [use.array for use in launch.uses if use.access.writes and use.array.size]
        for other in self._views_of(launch, written) if written else ():
            self._measuring.not_kept(other, _THROUGH_A_VIEW)

    # -- host writes inside a recording snapshot Tape (`host_writes`)

    def _recorded_host_write(self, kind: str, original, args, kwargs):
        """``zero_``, ``fill_``, ``assign`` or an untaped ``wp.copy`` while this snapshot Tape records: where a recorded
        launch read or wrote the destination's memory before, the write becomes an entry of the Tape that puts its
        content back in ``backward()`` (if one was read) and zeroes the gradient of what it overwrote."""
        write = host_writes.described(kind, args, kwargs)
        dest = None if write is None else write.dest
        if dest is None or not dest.size or _compat.is_capturing(dest.device):
            return original(*args, **kwargs)
        place = self._region(dest)
        region, slots = place.region, place.index
        read, written = _any(region.read_unsaved[slots]), _any(region.write_any[slots])
        if not (read or written):  # nothing recorded touched it: as a write before the Tape
            return original(*args, **kwargs)
        saved = _device_copy(dest) if read else None
        count = _compat.tape_launch_count(self)
        result = original(*args, **kwargs)
        if _compat.tape_launch_count(self) > count:  # Warp recorded it (a copy between arrays with gradients)
            return result
        grad = None
        if dest.grad is not None and not _compat.retains_grad(dest):
            grad = host_writes.elements(dest.grad, write.window)
        if saved is None and grad is None:
            return result
        _compat.append_tape_callback(self, host_writes.Undo(dest, saved, grad))
        if saved is not None:
            self._snapshotted[id(dest)] = dest
            self.snapshot_bytes += saved.size * _compat.dtype_size_bytes(saved.dtype)
            region.read_unsaved[slots] = False  # its restore serves the readers before it
        # its content and its views' changed legitimately: not a mutation
        views = self._views_of({id(dest)}, [dest])
        at = (JOURNAL.now(), "", f"{_HOST_WRITE_NAMES[kind]} at {_call_site(3)}")
        if self.check == "off":
            self._fingerprints.changed(dest, served=saved is not None, views=views, at=at)
        for arr in [dest, *views]:
            tracked = self._tracked.get(id(arr))
            if tracked is not None and tracked.values is not None:
                tracked.values.refresh(arr)
                tracked.at = at
        return result

    # -- bookkeeping

    def _track(self, arr) -> _Tracked:
        tracked = self._tracked.get(id(arr))
        if tracked is None:
            tracked = self._tracked[id(arr)] = _Tracked(arr)
        return tracked

    def _region(self, arr) -> Place:
        """Where an array lies (`memory.Place`: its region and slots); kept per array object while its region is not
        merged."""
        cached = self._located.get(id(arr))
        if cached is not None and cached[0] is arr and cached[1].region.alive:
            return cached[1]
        device = arr.device.alias
        book = self._books.get(device)
        if book is None:
            book = self._books[device] = AddressBook()
        region = book.locate(arr)
        region.add(arr)
        place = Place(region, arr)
        self._located[id(arr)] = (arr, place)
        return place

    def _locate(self, use: _ArrayUse) -> Place:
        """The use's `_region`, looked up once per launch (regions only grow within a launch)."""
        if use.located is None or not use.located.region.alive:
            use.located = self._region(use.array)
        return use.located

    def _read_unsaved(self, arr) -> bool:
        """Did a recorded launch read an element of ``arr`` since the last write that saved a restore of it?"""
        if not arr.size:
            return False
        place = self._region(arr)
        return _any(place.region.read_unsaved[place.index])

    def _served_by_restore(self, use: _ArrayUse) -> None:
        """The launch saved a restore of the whole array: readers of it so far are served (a later write need not
        save it again for them), but not the launch's own reads of what it wrote (they want its output)."""
        place = self._locate(use)
        region = place.region
        region.read_unsaved[place.index] = False
        if use.access.reads_after_store or use.crossed:
            if use.reads_known() and not use.crossed:
                if use.marks.any("after"):
                    region.read_unsaved[place.slots[use.marks.after]] = True
            else:
                region.read_unsaved[place.index] = True

    def _record_read(self, launch: _Launch, use: _ArrayUse, which: str | None) -> None:
        """``which``: the twin's marks of the elements read, ``"before"`` or ``"after"`` (callers pass only marks
        with one set: a launch that read nothing, a zero-size one or a guarded branch, leaves nothing to be stale or
        mutated); None: the whole array. A snapshot Tape without checks keeps only which slots were read since
        their last saved restore (it reports no stale read and compares no content)."""
        place = self._locate(use)
        region = place.region
        if which is None or use.marks.all(which):
            read = place.index
        else:
            read = place.slots[getattr(use.marks, which)]
        region.read_unsaved[read] = True
        if self.check == "off":
            return
        self._track(use.array).read = True
        key = launch.ident(use.label)
        if self._measuring is not None:  # what it read, kept at the array's next change
            self._measuring.read(use.array, _read_group(launch), self.launches[launch.index])
        entry = region.reads.get(key)
        if entry is None:
            # a reader whose backward reads no value it loaded (`value_use`), or whose adjoints that read them reach
            # only arrays of this launch without a gradient: a stale read of it is not real
            real = use.access.value_read and _gradient_reads(launch, use.access.value_readers)
            entry = region.reads[key] = [(launch.index, key), np.zeros(region.size, dtype=bool), real]
        entry[1][read] = True
        region.read_any[read] = True

    def _write_hazards(self, launch: _Launch, use: _ArrayUse, changed, count: int) -> list:
        """Overwrites and stale reads of the ``count`` elements ``changed`` marks. A hazard the Tape already
        reported (same kind and sites, launch numbers aside: a loop repeats them at every step) is not built again."""
        found = []
        known = self._hazard_keys
        writer = launch.ident(use.label)
        place = self._locate(use)
        region, whole = place.region, place.whole
        if count == changed.size:  # every element (the usual case): a slice of the tables where the array is one run
            written = place.index
        else:
            written, whole = place.slots[changed], None
        broadcast = 0 in use.array.strides  # one element at several indices
        if broadcast:
            written = np.unique(written)
        # an accumulation over earlier values (atomic_add) is exact, not an overwrite, where its adjoint runs; a
        # kernel without a backward writes constants (its accumulation included): what it wrote over keeps the
        # gradient of the new values
        backward = _compat.kernel_has_backward(launch.kernel)
        if use.access.stores or (use.access.accumulates and not backward):
            stored, stored_whole = written, whole
            if use.marks is not None and use.marks.stored is not None and not use.marks.all("stored"):
                # only the elements a store wrote on this launch (a branch that only accumulated is no overwrite);
                # a change the twin did not mark (a store it cannot index) counts as a store
                stored, stored_whole = place.slots[changed & (use.marks.stored | ~use.marks.written)], None
                if broadcast:
                    stored = np.unique(stored)
            last = region.last_write
            if stored_whole is not None and last is not None and last[0] == whole.start and last[1] == whole.stop:
                sites, counts = (last[2],), (count,)  # rewritten whole: one earlier writer, known without a look
            else:
                earlier = region.writer[stored]
                earlier = earlier[earlier >= 0]
                if not earlier.size:
                    sites = counts = ()
                elif not np.count_nonzero(earlier != earlier[0]):  # one earlier writer (the usual case): no count
                    sites, counts = (int(earlier[0]),), (earlier.size,)
                else:  # earlier writers are indices into self._sites: a count per site, no sort
                    counts = np.bincount(earlier, minlength=0)
                    sites = np.flatnonzero(counts)
                    sites, counts = sites.tolist(), counts[sites].tolist()
            real = None
            gradient = _compat.carries_gradient(use.array)
            for site, elements in zip(sites, counts):
                if real is None:
                    # safe only where the store adjoint zeroes this array's gradient: never one made with
                    # retain_grad=True (Warp >= 1.13 skips zeroing it, stock and flagged alike). Real even where
                    # the earlier writer has no backward: what leaks stays in the gradient, and reaches whatever
                    # that writer wrote over (an input a recorded copy read, say). Never real for an array without
                    # a gradient (an integer or bool dtype, requires_grad=False when the later launch is recorded):
                    # there is no adjoint to leak
                    real = gradient and (not store_adjoints_zero(launch.kernel) or _compat.retains_grad(use.array))
                if (OVERWRITE, writer, None, self._sites[site][1], real) in known:
                    continue
                found.append(
                    Hazard(
                        OVERWRITE,
                        writer=launch.site(use.label),
                        earlier=self._site(site),
                        real=real,
                        elements=int(elements),
                        cause=(
                            "no gradient"
                            if not gradient
                            else "no backward"
                            if not backward
                            else RETAIN_GRAD
                            if _compat.retains_grad(use.array)
                            else ""
                        ),
                    )
                )
        if region.reads and _any(region.read_any[written]):  # else no read site can have read them
            for reader, (site, bitmap, value_read) in region.reads.items():
                if (STALE_READ, writer, reader, None, value_read) in known:
                    continue
                if site[0] == launch.index and use.access.adjoint_reads_result:
                    continue  # wp.atomic_min's backward reads what its launch left (which value won), by design
                elements = int(np.count_nonzero(bitmap[written]))
                if elements:
                    reader = Site(site[0], *site[1])  # (launch, ident): made when a hazard names it
                    found.append(
                        Hazard(
                            STALE_READ, writer=launch.site(use.label), reader=reader, elements=elements, real=value_read
                        )
                    )
        self._sites.append((launch.index, writer))
        region.writer[written] = len(self._sites) - 1
        region.last_write = None if whole is None or broadcast else (whole.start, whole.stop, len(self._sites) - 1)
        return found

    def _site(self, index: int) -> Site:
        """The writer `Site` ``Region.writer`` holds ``index`` of (kept as ``(launch, ident)``: built only when a
        new hazard names it, which most writes never do)."""
        launch, (kernel, argument, location) = self._sites[index]
        return Site(launch, kernel, argument, location)

    def _views_of(self, passed, written: list) -> list:
        """The other array objects located over memory of ``written`` (arrays a launch or a host write wrote), not
        among ``passed`` (a `_Launch`, whose arrays are left out, or a set of ids): found through each region's
        address index, so the cost follows the launch's arrays and what overlaps them, not the arrays seen before."""
        found: dict = {}
        for arr in written:
            region = self._region(arr).region
            if len(region.arrays) == 1:
                continue  # only the array itself
            if isinstance(passed, _Launch):
                passed = {id(use.array) for use in passed.uses}
            for other in region.views(arr):
                if id(other) not in passed:
                    found[id(other)] = other
        return list(found.values())

    def _refresh_views(self, launch: _Launch, changed: list) -> None:
        """Other arrays over memory a recorded launch changed (views) changed legitimately: not a mutation."""
        for other in self._views_of(launch, changed):
            tracked = self._tracked.get(id(other))
            if tracked is not None and tracked.values is not None:
                tracked.values.refresh(other)
                tracked.at = _point(launch)

    # -- reporting

    def _report(self, found, force_error: bool = False):
        errors = []
        for hazard in found:
            if hazard.key() in self._hazard_keys:
                continue
            self._hazard_keys.add(hazard.key())
            self.hazards.append(hazard)
            for listener in list(_listeners):
                listener(hazard)
            if not hazard.real:
                continue
            if self._measuring is not None and hazard.kind not in UNCHECKED:
                continue  # a measuring Tape reports at backward(), each hazard with its measurement
            level = self.check
            if level == "off" and (hazard.kind in _ALWAYS_REPORTED or hazard.cause == RETAIN_GRAD):
                level = "warn"
            if level == "error" or force_error:
                errors.append(hazard)
            elif level == "warn":
                warnings.warn(OverwriteWarning(hazard.message()), stacklevel=_user_stacklevel())
        if errors:
            raise OverwriteError("\n".join(h.message() for h in errors))

    # -- backward and reset

    def _check_mutations(self):
        found = []
        for tracked in self._tracked.values():
            if tracked.read and tracked.values is not None:
                changed = tracked.values.changed(tracked.array)
                found.extend(self._mutations(tracked.array, changed, None, tracked))
        self._report(found)

    def backward(self, loss: warp.array | None = None, grads: dict[warp.array, warp.array] | None = None) -> None:
        """Warp's backward pass, after the mutation checks and with the snapshots restored around each launch.

        When it returns, arrays hold their values from the end of the forward pass again.

        Args:
            loss: A one-element array whose gradient is seeded with 1.
            grads: ``{output array: its gradient}`` to seed instead of ``loss``.

        Raises:
            OverwriteError: With ``check="error"``, a recorded launch's input changed outside recorded launches.
        """
        self._backward_at = _call_site(2)
        if self.check != "off":
            self._check_mutations()
        else:
            self._report(self._from_entries())  # what the recorded launches alone show (a Tape that does not check)
            if self.snapshot:
                self._refuse_mutations()
        final = [(arr, _device_copy(arr)) for arr in self._snapshotted.values()]
        _recording.backward += 1  # its own copies are no user's writes (`_journaling`); a Tape entered inside records
        try:
            if self._measuring is not None:
                self._measured_backward(loss, grads)
            else:
                super().backward(loss=loss, grads=grads)
        finally:
            for arr, saved in final:  # the forward pass's final values, again
                _copy_into(arr, saved)
            _recording.backward -= 1
            self._release_journal()

    def _measured_backward(self, loss, grads) -> None:
        """A measuring Tape's backward: the extra passes and the user's plain one (`measure.run`), then each real
        hazard reported with its measurement (a value hazard's ``real`` follows it)."""
        pending = [h for h in self.hazards if h.real and h.measured is None and h.kind not in UNCHECKED]
        values = [h for h in pending if _hazard_group(h) is not None]

        def backward(entries: list) -> None:
            own, self.launches = self.launches, entries
            try:
                super(Tape, self).backward(loss=loss, grads=grads)
            finally:
                self.launches = own

        self.measured_arrays = self._compared_gradients()
        found = measure.run(
            self._measuring,
            values,
            _hazard_group,
            backward,
            _compat.tape_entries(self),
            (_Restore, host_writes.Undo),
            self._changed_by_passes(loss, grads),
            self.measured_arrays,
            self.measured_gradients,
        )
        seeded = [a for a in [loss, *(grads or {})] if isinstance(a, warp.array)]
        for k, hazard in enumerate(values):
            leaky = self._measuring.leaky.get(hazard.key())
            if leaky is True or (leaky is not None and any(_overlap(leaky, s) for s in seeded)):
                if found[k].status == measure.NO_EFFECT:
                    found[k] = measure.Measured(measure.NOT_MEASURED, found[k].changes, _LEAKS)
        by_key = {h.key(): dataclasses.replace(h, real=found[k].real, measured=found[k]) for k, h in enumerate(values)}
        for hazard in pending:
            if hazard.key() not in by_key:
                not_measured = measure.Measured(measure.NOT_MEASURED, reason=_not_measurable(hazard))
                by_key[hazard.key()] = dataclasses.replace(hazard, measured=not_measured)
        self.hazards = [by_key.get(h.key(), h) for h in self.hazards]
        errors = []
        for hazard in by_key.values():
            self._hazard_keys.add(hazard.key())
            for listener in list(_listeners):
                listener(hazard)
            if hazard.real and self.check == "error":
                errors.append(hazard)
            elif hazard.real:
                warnings.warn(OverwriteWarning(hazard.message()), stacklevel=_user_stacklevel())
        if errors:
            raise OverwriteError("\n".join(h.message() for h in errors))

    def _entry_arrays(self, entry) -> list:
        """``[(label, array, ArgumentAccess)]`` of a recorded kernel launch (its arrays and its structs' arrays)."""
        facts = _facts(_compat.launch_kernel(entry))
        values = _compat.launch_values(entry)
        found = []
        for index, (position, label, access) in enumerate(facts.arrays):
            value = values[position] if position < len(values) else None
            if index >= len(facts.positions):
                path = facts.fields[index - len(facts.positions)][1]
                value = _compat.struct_field(value, path) if _compat.is_struct_instance(value) else None
            if isinstance(value, warp.array):
                found.append((label, value, access))
        return found

    def _changed_by_passes(self, loss, grads) -> tuple:
        """``(arrays, arrays whose gradients)`` a backward pass may change: the arrays recorded launches may write
        (Warp's backward runs an unflagged kernel's helper stores again), the seeds, and every gradient."""
        arrays, gradients = list((grads or {}).values()), list(self.gradients) + list(grads or {})
        gradients += [loss] if loss is not None else []
        for entry in _compat.tape_entries(self):
            if _compat.is_kernel_launch(entry):
                for _, value, access in self._entry_arrays(entry):
                    gradients.append(value)
                    if access.writes:
                        arrays.append(value)
        return arrays, [a for a in gradients if isinstance(a, warp.array)]

    def _compared_gradients(self) -> dict:
        """``{name: array}`` of the gradients a measuring Tape compares: every array a recorded launch passes that
        has one, named by its first label (``x.grad``; a later array under a label taken: ``x.grad (launch #n)``)."""
        named, seen = {}, set()
        for index, entry in enumerate(_compat.tape_entries(self)):
            if not _compat.is_kernel_launch(entry):
                continue
            for label, value, _ in self._entry_arrays(entry):
                if value.grad is None or id(value) in seen:
                    continue
                seen.add(id(value))
                name = f"{label}.grad" if f"{label}.grad" not in named else f"{label}.grad (launch #{index})"
                named[name] = value
        return named

    def _release_journal(self) -> None:
        if self._journal is not None:
            self._journal.close()

    def _from_entries(self) -> list:
        """What a Tape that does not check can name at ``backward()`` from its recorded launches alone: the
        ``retain_grad`` arrays a later launch stores over (`retained`) and, on a Tape that saw no launch (plain),
        the atomics whose returned value a kernel uses (`atomic_replay`)."""
        entries = _compat.tape_entries(self)
        found = []
        for over in retained.stored_over(entries):
            earlier, later = entries[over.earlier], entries[over.later]
            found.append(
                Hazard(
                    OVERWRITE,
                    writer=_entry_site(later, over.later, over.later_label),
                    earlier=_entry_site(earlier, over.earlier, over.earlier_label),
                    cause=RETAIN_GRAD,
                )
            )
        if not self._intercepts():
            for index, entry in enumerate(entries):
                kernel = _compat.launch_kernel(entry) if _compat.is_kernel_launch(entry) else None
                if kernel is not None and _compat.kernel_has_backward(kernel):
                    site = _entry_site(entry, index, "")
                    found += [_atomic_hazard(kernel, site, use) for use in atomic_replay.used_atomics(kernel)]
        return found

    # -- mutation after record, on a snapshot Tape without checks: fingerprints of the arrays recorded launches read

    def _fingerprint(self, launch: _Launch) -> None:
        """After the launch: fingerprints of its arrays and of the views of memory it wrote (`fingerprints`)."""
        written = []
        for use in launch.uses:
            if use.array.size:
                self._locate(use)  # in the address index, where a later launch's write finds it as a view
                if use.writes:
                    written.append(use.array)
        views = self._views_of(launch, written) if written else ()
        self._fingerprints.after(launch, self._restored_by, views, at=_point(launch))

    def _serve_last_readers(self) -> None:
        """When recording stops: an array a recorded launch restores, read by launches after the last launch that
        restored it, gets one restore more, of its content now, run first in the backward. The writers' restores
        put back what the readers before them read, not what those later readers read, and a change before
        ``backward()`` (a later rollout step over a scratch array) would reach their adjoints. An array changed
        since its last launch is a mutation, refused at ``backward()`` (the fingerprints say so there)."""
        restores = []
        for arr in self._fingerprints.at_exit(self._snapshotted):
            restores.append((arr, _device_copy(arr)))
            self.snapshot_bytes += arr.size * _compat.dtype_size_bytes(arr.dtype)
        if restores:
            _compat.append_tape_callback(self, _Restore(restores))

    def _refuse_mutations(self) -> None:
        """Raise, naming the reader, when an array a recorded launch read changed outside recorded launches: a
        snapshot Tape never hands back a gradient of inputs that changed after it recorded them."""
        # Where the last recorded launch that passed the array before it changed saved a restore of it, the
        # restores put back what it and every earlier reader read, each before that reader's adjoint. Otherwise
        # (an input only read; a launch that read it after the last restoring writer) nothing puts back what
        # those readers read.
        found = self._fingerprints.refused()
        if not found:
            return
        hazards = [
            Hazard(MUTATED, writer=writer, reader=Site(launch, *ident), detail=self._change(arr, at, writer))
            for arr, readers, writer, at in (
                (a, r, None if w is None else Site(w[0], *w[1]), t) for a, r, w, t in found
            )
            for ident, launch in readers.items()
        ]
        self._report(hazards, force_error=True)

    def reset(self):
        """Clear the recorded launches, zero the gradients and free the snapshots (``hazards`` are kept)."""
        super().reset()
        self._clear_tracking()
        self._release_journal()

    def visualize(
        self,
        filename: str | None = None,
        simplify_graph: bool = True,
        hide_readonly_arrays: bool = False,
        array_labels: dict | None = None,
        choose_longest_node_name: bool = True,
        ignore_graph_scopes: bool = False,
        track_inputs: list | None = None,
        track_outputs: list | None = None,
        track_input_names: list | None = None,
        track_output_names: list | None = None,
        graph_direction: str = "LR",
    ) -> str:
        """Warp's GraphViz picture of the Tape, with the hazards it found marked in red.

        Each hazard in `hazards` becomes a note labelled with its kind, joined by red edges to the launches
        and arrays it names; the arrays turn red (orange: an overwrite the later kernel's zeroing makes
        safe). A Tape without hazards draws as Warp draws it. Render with `dot -Tsvg tape.dot -o tape.svg`.

        Args:
            filename: Where to write the DOT source; None writes nothing.
            simplify_graph: Summarise repeated launch sequences in subgraphs (Warp's option, as the rest).
            hide_readonly_arrays: Leave out arrays no launch writes (those a hazard names are drawn anyway).
            array_labels: ``{array: label}`` to name arrays by.
            choose_longest_node_name: Name each array by the longest name found for it in the graph.
            ignore_graph_scopes: Leave out the scopes recorded on the Tape.
            track_inputs: Arrays to draw as inputs of the graph, even with ``hide_readonly_arrays``.
            track_outputs: Arrays to draw as outputs of the graph, always visible.
            track_input_names: Labels of ``track_inputs``.
            track_output_names: Labels of ``track_outputs``.
            graph_direction: GraphViz's ``rankdir``: ``"LR"`` or ``"TB"``.

        Returns:
            The DOT source.

        Example:
            ```python
            import warnings

            import warp_zerostore as wp

            @wp.kernel
            def square_in_place(x: wp.array(dtype=float)):
                x[wp.tid()] = x[wp.tid()] * x[wp.tid()]

            x = wp.array([3.0], dtype=float, requires_grad=True)
            tape = wp.Tape(check="warn")
            with warnings.catch_warnings(), tape:
                warnings.simplefilter("ignore", wp.OverwriteWarning)
                wp.launch(square_in_place, dim=1, inputs=[x])
            dot = tape.visualize()
            assert "stale read" in dot and f"arr{x.ptr}" in dot
            ```
        """
        # The same options on warp-lang 1.9.1 to 1.19, passed by name.
        dot = super().visualize(
            None,
            simplify_graph=simplify_graph,
            hide_readonly_arrays=hide_readonly_arrays,
            array_labels=array_labels,
            choose_longest_node_name=choose_longest_node_name,
            ignore_graph_scopes=ignore_graph_scopes,
            track_inputs=track_inputs,
            track_outputs=track_outputs,
            track_input_names=track_input_names,
            track_output_names=track_output_names,
            graph_direction=graph_direction,
        )
        return mark_hazards(self, dot, filename)
