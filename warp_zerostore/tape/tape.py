"""Overwrite safety on the Tape: hazards that name the bug, and snapshots that make in-place updates differentiable.

Warp's backward pass replays each recorded kernel against arrays as they are at ``backward()`` time, not as
they were when the launch was recorded. :class:`Tape` watches recorded launches for three hazards:

* **overwrite** (write after write): elements one launch wrote are written again by a later launch. A real
  error only when the later kernel does not zero its store adjoints (``zero_store=True``, or Warp >= 1.13's
  stock behaviour); otherwise it is kept in ``tape.hazards`` with ``real=False`` and not warned about.
* **stale read** (write after read): a launch changes an array that an earlier launch, or the same launch,
  reads; the earlier launch's backward will re-read the new values.
* **mutated after record**: an array a recorded launch reads changed outside recorded launches (``assign``,
  ``fill_``, NumPy/Torch writes through shared memory, untaped launches), found by content checksums at the
  next recorded launch that touches it, or at ``backward()``.

Precision: written elements come from a content diff (copy before the launch, compare after), so they are
element-precise, but a store of the value already there is invisible. Read elements come from an instrumented
twin of the kernel (:mod:`.read_twin`) run on copies before the launch, for arguments read by full
element indexing (``x[i]``, ``x[i, j]``); other arguments the kernel's source reads (:mod:`.access`)
count as read in whole (conservative). Elements are identified by memory address per device, so views of one
buffer (``x``, ``x[1:]``) are connected.

``snapshot=True`` saves, before a recorded launch, every array it may write that a recorded launch (earlier
or this one) reads, and restores them in reverse order during ``backward()``; when ``backward()`` returns,
arrays hold their values from the end of the forward pass again.

Checks and snapshots act only on launches made through ``warp.launch`` / ``warp.launch_tiled`` (which the
Tape intercepts while it is entered with checks or snapshots on); with ``check="off"`` and
``snapshot=False`` (the default) the Tape is Warp's own and launches are untouched.
"""

from __future__ import annotations

import dataclasses
import hashlib
import os
import sys
import warnings

import numpy as np
import warp

from .. import _compat, config
from ..config import validate_check
from ..options import effective_mode
from . import read_twin as read_instrumentation
from .access import argument_access

OVERWRITE = "overwrite"
STALE_READ = "stale read"
MUTATED = "mutated after record"
KINDS = (OVERWRITE, STALE_READ, MUTATED)


class OverwriteWarning(UserWarning):
    """A recorded launch sequence whose backward pass reads or accumulates the wrong values."""


class OverwriteError(RuntimeError):
    """Raised by ``Tape(check="error")`` at the launch that creates a hazard (at ``backward()`` for mutations)."""


@dataclasses.dataclass(frozen=True)
class Site:
    """One recorded launch of one kernel: index in ``tape.launches``, the kernel, the argument, where launched."""

    launch: int
    kernel: str
    argument: str
    location: str

    def describe(self) -> str:
        return f"kernel '{self.kernel}' (launch #{self.launch} at {self.location}), argument '{self.argument}'"


@dataclasses.dataclass(frozen=True)
class Hazard:
    """One distinct hazard. ``writer`` changed values that ``reader`` (stale read, mutation) or an earlier
    ``writer`` (overwrite: ``earlier``) depends on. ``real`` is False for an overwrite whose later writer zeroes
    its store adjoints."""

    kind: str
    writer: Site | None
    reader: Site | None = None
    earlier: Site | None = None
    real: bool = True
    elements: int = 0

    def key(self) -> tuple:
        def site(s):
            return None if s is None else (s.kernel, s.argument, s.location)

        return (self.kind, site(self.writer), site(self.reader), site(self.earlier), self.real)

    def message(self) -> str:
        if self.kind == OVERWRITE:
            verdict = (
                "a real error: the later kernel does not zero its store adjoints, so the gradient of the "
                "overwritten values leaks into the earlier launch; decorate it with @wp.kernel(zero_store=True)"
                if self.real
                else "safe: the later kernel zeroes its store adjoints"
            )
            return (
                f"overwrite: {self.elements} element(s) written by {self.earlier.describe()} are written again by "
                f"{self.writer.describe()}; {verdict}."
            )
        if self.kind == STALE_READ:
            same = self.reader.launch == self.writer.launch
            return (
                f"stale read: {self.writer.describe()} changes {self.elements} element(s) of an array that "
                f"{'the same launch reads as' if same else self.reader.describe() + ' reads;'}"
                f"{' argument ' + repr(self.reader.argument) + ';' if same else ''} its backward pass will re-read "
                "the new values. Write to a new array, or record with wp.Tape(snapshot=True)."
            )
        return (
            f"mutated after record: the array read by {self.reader.describe()} changed after the launch was "
            f"recorded, outside any recorded kernel launch (wp.copy, assign, fill_, NumPy or Torch writes, untaped launches; "
            f"found {'at launch #' + str(self.writer.launch) + ' at ' + self.writer.location if self.writer else 'at backward()'}); "
            "its backward pass will read the new values. Do not modify arrays a Tape will re-read, or copy them."
        )


# Every hazard any Tape finds, while ``python -m warp_zerostore check`` collects them.
_sink: list | None = None


def _call_site() -> str:
    skip = _compat.warp_package_dirs() + (os.path.dirname(os.path.dirname(__file__)) + os.sep,)
    frame = sys._getframe(2)
    while frame is not None and frame.f_code.co_filename.startswith(skip):
        frame = frame.f_back
    if frame is None:
        return "<unknown>"
    return f"{frame.f_code.co_filename}:{frame.f_lineno}"


def _host_copy(arr) -> np.ndarray:
    return np.array(arr.numpy(), copy=True)


def _element_bytes(values: np.ndarray, shape: tuple) -> np.ndarray:
    return np.ascontiguousarray(values).view(np.uint8).reshape(tuple(shape) + (-1,))


def _changed(before: np.ndarray, after: np.ndarray, shape: tuple) -> np.ndarray:
    """Bool per Warp element (a vec3 is one element): its bytes differ."""
    if before.size == 0:
        return np.zeros(shape, dtype=bool)
    return np.any(_element_bytes(before, shape) != _element_bytes(after, shape), axis=-1)


def _checksum(values: np.ndarray) -> str:
    return hashlib.blake2b(np.ascontiguousarray(values).tobytes(), digest_size=16).hexdigest()


def _zeroes_store_adjoints(kernel) -> bool:
    mode = effective_mode(kernel)
    return mode is True or (mode is None and _compat.STOCK_STORE_ZEROES)


def _device_copy(arr):
    with _compat.no_active_tape():
        return warp.clone(arr, requires_grad=False)


def _copy_into(dest, src) -> None:
    with _compat.no_active_tape():
        warp.copy(dest, src)


class _Restore:
    """A Tape entry run by ``backward()`` just before the adjoint of the launch it follows: the arrays that
    launch wrote get their pre-launch values back."""

    def __init__(self, pairs):
        self.pairs = pairs  # [(array, snapshot)]

    def __call__(self):
        for arr, snap in self.pairs:
            _copy_into(arr, snap)


class _Tracked:
    """What the Tape knows about one array object (its content, for mutation checks)."""

    def __init__(self, arr):
        self.array = arr  # keeps id() unique while tracked
        self.checksum = None  # content after the last recorded launch that passed it
        self.readers: dict = {}  # (kernel, argument, location) -> Site of the first such read
        self.read = False


# Elements are tracked by memory address (per device), so views of one buffer (x, x[1:], x[::2]) are connected.


def _addresses(arr) -> np.ndarray:
    """The address of each element of an array (its shape), from its pointer and byte strides."""
    out = np.full(arr.shape, int(arr.ptr or 0), dtype=np.int64)
    for axis, (size, stride) in enumerate(zip(arr.shape, arr.strides)):
        index_shape = [1] * len(arr.shape)
        index_shape[axis] = size
        out = out + (np.arange(size, dtype=np.int64) * int(stride)).reshape(index_shape)
    return out


def _span(arr) -> tuple:
    """``[first, last)`` bytes an array's elements occupy."""
    if arr.size == 0 or not arr.ptr:
        return (0, 0)
    first = int(arr.ptr) + sum(min(0, (n - 1) * s) for n, s in zip(arr.shape, arr.strides))
    last = int(arr.ptr) + sum(max(0, (n - 1) * s) for n, s in zip(arr.shape, arr.strides))
    return (first, last + _compat.dtype_size_bytes(arr.dtype))


class _Memory:
    """Per device: which recorded launch last wrote each address, and which addresses each read site read."""

    def __init__(self):
        self.written = np.zeros(0, dtype=np.int64)  # sorted addresses
        self.writer = np.zeros(0, dtype=np.int64)  # index into Tape._sites, aligned with ``written``
        self.reads: dict = {}  # (kernel, argument, location) -> [Site, sorted addresses]
        self.read_spans: set = set()  # [first, last) of every array a recorded launch read

    def overlaps_read(self, span) -> bool:
        return any(first < span[1] and span[0] < last for first, last in self.read_spans)

def _launch_hook(original, args, kwargs):
    tape = _compat.active_tape()
    if isinstance(tape, Tape) and tape._intercepts():
        return tape._recorded_launch(original, args, kwargs)
    return original(*args, **kwargs)


class Tape(_compat.WarpTape):
    """Warp's Tape, with overwrite checks and snapshots.

    ``check``: ``"off"`` (default: ``warp_zerostore.config.check``), ``"warn"`` (an :class:`OverwriteWarning`
    per distinct real hazard) or ``"error"`` (:class:`OverwriteError` at the launch that creates it, or at
    ``backward()`` for a mutation). Every hazard found, real or not, is in ``tape.hazards``.
    ``snapshot=True`` makes in-place updates of arrays that recorded launches read differentiable;
    ``tape.snapshot_bytes`` says how much it saved, ``tape.reset()`` frees it.

    Example::

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
    """

    def __init__(self, check=None, snapshot: bool = False):
        super().__init__()
        self.check = validate_check(config.check if check is None else check, "Tape(check=...)")
        self.snapshot = bool(snapshot)
        self.hazards: list = []
        self._hazard_keys: set = set()
        self._hooked = False
        self._clear_tracking()

    def _clear_tracking(self):
        self._tracked: dict = {}
        self._memory: dict = {}  # device -> _Memory
        self._sites: list = []  # writer Sites, indexed from _Memory.writer
        self._snapshotted: dict = {}  # id -> array with at least one snapshot
        self.snapshot_bytes = 0

    def _intercepts(self) -> bool:
        return self.check != "off" or self.snapshot

    # -- entering and leaving: the launch hook exists only while a checking or snapshotting Tape is entered

    def __enter__(self):
        result = super().__enter__()
        if self._intercepts():
            _compat.install_launch_hook(_launch_hook)
            self._hooked = True
        return result

    def __exit__(self, exc_type, exc_value, traceback):
        try:
            return super().__exit__(exc_type, exc_value, traceback)
        finally:
            if self._hooked:
                self._hooked = False
                _compat.remove_launch_hook()

    # -- recording

    def _track(self, arr) -> _Tracked:
        tracked = self._tracked.get(id(arr))
        if tracked is None:
            tracked = self._tracked[id(arr)] = _Tracked(arr)
        return tracked

    def _recorded_launch(self, original, args, kwargs):
        a = _compat.launch_arguments(args, kwargs)
        if a.get("adjoint") or not a.get("record_tape", True) or a.get("record_cmd"):
            return original(*args, **kwargs)
        kernel = a["kernel"]
        access = argument_access(kernel)
        values = list(a.get("inputs") or []) + list(a.get("outputs") or [])
        arrays = []  # (label, array), each array once (first label)
        seen = set()
        for label, value in zip(_compat.kernel_argument_labels(kernel), values):
            if label in access and isinstance(value, warp.array) and id(value) not in seen:
                seen.add(id(value))
                arrays.append((label, value))
        location = _call_site()
        index = len(self.launches)
        checking = self.check != "off"
        found = []

        before = {}
        read_masks = {}
        if checking:
            if any(access[label].reads for label, _ in arrays):
                read_masks = read_instrumentation.element_reads(kernel, a, _device_copy)
            for label, arr in arrays:
                before[label] = _host_copy(arr)
                tracked = self._tracked.get(id(arr))
                if tracked is not None and tracked.read and tracked.checksum != _checksum(before[label]):
                    for reader in tracked.readers.values():
                        found.append(Hazard(MUTATED, writer=Site(index, kernel.key, label, location), reader=reader))

        snapshots = []
        if self.snapshot:
            for label, arr in arrays:
                use = access[label]
                if use.writes and arr.size and (use.reads or self._memory_of(arr).overlaps_read(_span(arr))):
                    snapshots.append((label, arr, _device_copy(arr)))

        result = original(*args, **kwargs)
        if len(self.launches) <= index:  # not recorded (e.g. the Tape was left inside the launch)
            return result
        kernel = self.launches[index][0]  # the overload actually launched

        for label, arr in arrays:
            if access[label].reads and arr.size:
                tracked = self._track(arr)
                tracked.read = True
                site = Site(index, kernel.key, label, location)
                key = (site.kernel, site.argument, site.location)
                tracked.readers.setdefault(key, site)
                memory = self._memory_of(arr)
                memory.read_spans.add(_span(arr))
                if checking:
                    addresses = _addresses(arr)
                    mask = read_masks.get(label)
                    addresses = np.unique(addresses[mask] if mask is not None else addresses)
                    entry = memory.reads.get(key)
                    if entry is None:
                        memory.reads[key] = [site, addresses]
                    else:
                        entry[1] = np.union1d(entry[1], addresses)

        if checking:
            changed_spans = []
            for label, arr in arrays:
                after = _host_copy(arr)
                tracked = self._track(arr)
                changed = _changed(before[label], after, arr.shape)
                if changed.any():
                    writer = Site(index, kernel.key, label, location)
                    found.extend(self._write_hazards(arr, changed, writer, kernel, access[label]))
                    changed_spans.append((str(arr.device), _span(arr)))
                tracked.checksum = _checksum(after)
            # Other arrays over the same memory (views) changed through a recorded launch too: not a mutation.
            passed = {id(arr) for _, arr in arrays}
            for other in self._tracked.values():
                if id(other.array) not in passed and other.checksum is not None:
                    span, device = _span(other.array), str(other.array.device)
                    if any(d == device and a < span[1] and span[0] < b for d, (a, b) in changed_spans):
                        other.checksum = _checksum(_host_copy(other.array))
            # A snapshot of an array the launch did not change is not needed.
            snapshots = [s for s in snapshots if _changed(before[s[0]], _host_copy(s[1]), s[1].shape).any()]

        if snapshots:
            for _, arr, snap in snapshots:
                self._snapshotted[id(arr)] = arr
                self.snapshot_bytes += snap.size * _compat.dtype_size_bytes(snap.dtype)
            self.launches.append(_Restore([(arr, snap) for _, arr, snap in snapshots]))

        self._report(found, stacklevel=5)  # _report <- here <- hook <- warp.launch <- the user's line
        return result

    def _memory_of(self, arr) -> _Memory:
        key = str(arr.device)
        memory = self._memory.get(key)
        if memory is None:
            memory = self._memory[key] = _Memory()
        return memory

    def _write_hazards(self, arr, changed, writer: Site, kernel, use) -> list:
        found = []
        memory = self._memory_of(arr)
        written = np.unique(_addresses(arr)[changed])
        earlier = np.isin(memory.written, written, assume_unique=True)
        if use.stores:  # accumulation over earlier values (atomic_add) is exact, not an overwrite
            sites, counts = np.unique(memory.writer[earlier], return_counts=True)
            for site, count in zip(sites.tolist(), counts.tolist()):
                found.append(
                    Hazard(
                        OVERWRITE,
                        writer=writer,
                        earlier=self._sites[site],
                        real=not _zeroes_store_adjoints(kernel),
                        elements=int(count),
                    )
                )
        for reader, addresses in memory.reads.values():
            count = np.intersect1d(addresses, written, assume_unique=True).size
            if count:
                found.append(Hazard(STALE_READ, writer=writer, reader=reader, elements=int(count)))
        self._sites.append(writer)
        addresses = np.concatenate([memory.written[~earlier], written])
        writers = np.concatenate([memory.writer[~earlier], np.full(written.size, len(self._sites) - 1, np.int64)])
        order = np.argsort(addresses, kind="stable")
        memory.written, memory.writer = addresses[order], writers[order]
        return found

    def _report(self, found, stacklevel: int):
        errors = []
        for hazard in found:
            if hazard.key() in self._hazard_keys:
                continue
            self._hazard_keys.add(hazard.key())
            self.hazards.append(hazard)
            if _sink is not None:
                _sink.append(hazard)
            if not hazard.real:
                continue
            if self.check == "error":
                errors.append(hazard)
            elif self.check == "warn":
                warnings.warn(OverwriteWarning(hazard.message()), stacklevel=stacklevel)
        if errors:
            raise OverwriteError("\n".join(h.message() for h in errors))

    # -- backward and reset

    def _check_mutations(self):
        found = []
        for tracked in self._tracked.values():
            if tracked.read and tracked.checksum is not None:
                if _checksum(_host_copy(tracked.array)) != tracked.checksum:
                    for reader in tracked.readers.values():
                        found.append(Hazard(MUTATED, writer=None, reader=reader))
        self._report(found, stacklevel=4)  # _report <- here <- backward <- the user's line

    def backward(self, loss=None, grads=None):
        if self.check != "off":
            self._check_mutations()
        final = [(arr, _device_copy(arr)) for arr in self._snapshotted.values()]
        try:
            super().backward(loss=loss, grads=grads)
        finally:
            for arr, copy in final:  # the forward pass's final values, again
                _copy_into(arr, copy)

    def reset(self):
        """Clear the recorded launches, zero the gradients and free the snapshots (``hazards`` are kept)."""
        super().reset()
        self._clear_tracking()
