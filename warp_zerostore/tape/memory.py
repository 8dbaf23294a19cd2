"""Which recorded launch last wrote each element, and which read sites read it: per-region tables, per device.

Elements are identified by memory address, so views of one buffer (``x``, ``x[1:]``, ``x[::2]``) are connected.
Memory is kept as disjoint regions (byte ranges that arrays seen by the Tape cover); each region holds NumPy
tables indexed by ``(address - start) // unit``: the last writer of each slot and, per read site, a bitmap of
the slots it read, and the array objects located in it, indexed by the bytes they span (`Spans`: the views a
write changes are found without a look at the others). A launch touches only the regions of its own arrays,
found by bisection, so the cost of the bookkeeping per launch depends on that launch's arrays, not on how many
launches were recorded before.
"""

from __future__ import annotations

import bisect
import math

import numpy as np

from .. import _compat
from .._memory import byte_span


def addresses(arr) -> np.ndarray:
    """The address of each element of an array (its shape), from its pointer and byte strides (any sign)."""
    out = np.full(arr.shape, int(arr.ptr or 0), dtype=np.int64)
    for axis, (size, stride) in enumerate(zip(arr.shape, arr.strides)):
        index_shape = [1] * len(arr.shape)
        index_shape[axis] = size
        out = out + (np.arange(size, dtype=np.int64) * int(stride)).reshape(index_shape)
    return out


def slots(arr, start: int, unit: int) -> np.ndarray:
    """The slot of each element (its shape) in a region starting at ``start`` in slots of ``unit`` bytes."""
    offset, rest = divmod(int(arr.ptr or 0) - start, unit)
    if arr.is_contiguous and not rest and _compat.dtype_size_bytes(arr.dtype) == unit:  # no address arithmetic
        return np.arange(offset, offset + arr.size, dtype=np.int64).reshape(arr.shape)
    return (addresses(arr) - start) // unit


def slot_range(arr, start: int, unit: int) -> slice | None:
    """`slots` as a slice, where they are one run (a contiguous array of one slot per element): indexing a table
    by it is a view, not a gather. None otherwise."""
    offset, rest = divmod(int(arr.ptr or 0) - start, unit)
    if arr.is_contiguous and not rest and _compat.dtype_size_bytes(arr.dtype) == unit:
        return slice(offset, offset + arr.size)
    return None


def _unit(arr, first: int) -> int:
    """The largest slot size that puts every element of ``arr`` at a slot boundary counted from ``first``."""
    unit = _compat.dtype_size_bytes(arr.dtype)
    if arr.is_contiguous and int(arr.ptr) == first:
        return unit  # every element at a multiple of its size from the pointer
    unit = math.gcd(unit, int(arr.ptr) - first)
    for n, s in zip(arr.shape, arr.strides):
        if n > 1:
            unit = math.gcd(unit, abs(int(s)))
    return max(unit, 1)


class Spans:
    """Array objects by the bytes they span: per power-of-two class of span length, their starts in order. Arrays
    over ``[first, last)`` are then the ones of each class starting within one span length of it (bisection),
    however many arrays lie elsewhere in the region (a rollout's row views of one buffer)."""

    def __init__(self):
        self.classes: dict = {}  # length class -> ([start], [(stop, array)]), sorted by start

    def add(self, arr) -> None:
        first, last = byte_span(arr)
        if last <= first:
            return
        starts, items = self.classes.setdefault((last - first).bit_length(), ([], []))
        at = bisect.bisect_right(starts, first)
        starts.insert(at, first)
        items.insert(at, (last, arr))

    def over(self, first: int, last: int):
        """The arrays sharing a byte with ``[first, last)``."""
        for length, (starts, items) in self.classes.items():
            lo = bisect.bisect_right(starts, first - (1 << length))  # a span in this class is under 2**length long
            for k in range(lo, bisect.bisect_left(starts, last)):
                stop, arr = items[k]
                if stop > first:
                    yield arr


class Region:
    """One byte range ``[start, stop)`` in slots of ``unit`` bytes: last writer per slot, read bitmaps per site.
    The checking Tape's tables (`writer`, `read_any`) are made when first asked (a snapshot Tape never asks), and
    the arrays' `Spans` when a second array is located here (most regions hold one array)."""

    __slots__ = (
        "start",
        "stop",
        "unit",
        "size",
        "_writer",
        "_read_any",
        "reads",
        "write_any",
        "read_unsaved",
        "arrays",
        "_spans",
        "alive",
        "last_write",
    )

    def __init__(self, start: int, stop: int, unit: int):
        self.start, self.stop, self.unit = start, stop, unit
        self.size = slots = -(-(stop - start) // unit)
        self._writer = None
        self._read_any = None
        #: read-site key ``(kernel, argument, location)`` -> [(first launch reading here, key), bool bitmap, whether
        #: its backward reads the values loaded (`value_use`)]
        self.reads: dict = {}
        self.write_any = np.zeros(slots, dtype=bool)  # a recorded launch wrote the slot (snapshot Tapes)
        #: snapshot Tapes: a recorded launch read the slot since the last write that saved a restore of it (a
        #: later write must save it again; readers before that save are served by its restore)
        self.read_unsaved = np.zeros(slots, dtype=bool)
        self.arrays: dict = {}  # id -> array object located in this region
        self._spans: Spans | None = None  # the same arrays, by the bytes they span (the views a write changes)
        self.alive = True  # False once merged into a larger region
        #: ``(start, stop, writer)`` when the last write into this region wrote exactly slots ``start:stop``, all
        #: by one writer (then ``writer[start:stop]`` holds it throughout: a loop rewriting an array whole needs no
        #: look at the table); None otherwise
        self.last_write: tuple | None = None

    @property
    def writer(self) -> np.ndarray:
        """Per slot, the index of its last writer in the Tape's writer sites; -1: none (checking Tapes)."""
        if self._writer is None:
            self._writer = np.full(self.size, -1, dtype=np.int64)
        return self._writer

    @property
    def read_any(self) -> np.ndarray:
        """Per slot, whether any read site read it (checking Tapes)."""
        if self._read_any is None:
            self._read_any = np.zeros(self.size, dtype=bool)
        return self._read_any

    def _absorb(self, other: Region) -> None:
        """Copy another (smaller or coarser) region's tables into this one."""
        step = other.unit // self.unit
        offset = (other.start - self.start) // self.unit
        where = offset + np.arange(other.size) * step
        if other._writer is not None:
            self.writer[where] = other._writer
        if other._read_any is not None:
            self.read_any[where] |= other._read_any
        self.write_any[where] |= other.write_any
        self.read_unsaved[where] |= other.read_unsaved
        for key, (site, bitmap, value_read) in other.reads.items():
            entry = self.reads.setdefault(key, [site, np.zeros(self.size, dtype=bool), value_read])
            entry[1][where] |= bitmap
        for arr in other.arrays.values():
            self.add(arr)

    def add(self, arr) -> None:
        """Note an array object located in this region."""
        arrays = self.arrays
        if id(arr) in arrays:
            return
        arrays[id(arr)] = arr
        if self._spans is not None:
            self._spans.add(arr)
        elif len(arrays) > 1:
            self._spans = Spans()
            for each in arrays.values():
                self._spans.add(each)

    def views(self, arr):
        """The other array objects located here that share a byte with ``arr``."""
        if self._spans is None:
            return ()  # one array: ``arr`` itself
        first, last = byte_span(arr)
        return (other for other in self._spans.over(first, last) if other is not arr)


class Place:
    """Where one array object lies in a `Region`: the slot of each element (made when first asked), and the slots
    as a slice where they are one run (`slot_range`: indexing a table by it is a view, not a gather)."""

    __slots__ = ("region", "whole", "_slots", "_array")

    def __init__(self, region: Region, arr):
        self.region = region
        self.whole = slot_range(arr, region.start, region.unit)
        self._slots = None
        self._array = arr

    @property
    def slots(self) -> np.ndarray:
        """The slot of each element (the array's shape)."""
        if self._slots is None:
            self._slots = slots(self._array, self.region.start, self.region.unit)
        return self._slots

    @property
    def index(self):
        """The slots of every element, to index a table with: `whole` where it is one run, else `slots`."""
        return self.whole if self.whole is not None else self.slots


class AddressBook:
    """The regions of one device, sorted by start address."""

    def __init__(self):
        self.starts: list = []
        self.regions: list = []

    def region(self, arr) -> tuple:
        """``(region, slot index of each element (the array's shape))``; creates or merges regions as needed."""
        region = self.locate(arr)
        return region, slots(arr, region.start, region.unit)

    def locate(self, arr) -> Region:
        """The region holding ``arr``'s bytes; creates or merges regions as needed."""
        first, last = byte_span(arr)
        starts = self.starts
        lo = bisect.bisect_right(starts, first) - 1
        if lo >= 0 and self.regions[lo].stop <= first:
            lo += 1
        lo = max(lo, 0)
        hi = bisect.bisect_left(starts, last, lo)
        if hi == lo:  # nothing there yet (a new array): a region of its own
            region = Region(first, last, _unit(arr, first))
            starts.insert(lo, first)
            self.regions.insert(lo, region)
            return region
        overlapping = self.regions[lo:hi]
        if len(overlapping) == 1:
            region = overlapping[0]
            inside = region.start <= first and last <= region.stop
            if inside and (first - region.start) % region.unit == 0 and _unit(arr, first) % region.unit == 0:
                return region
        start = min([first] + [r.start for r in overlapping])
        stop = max([last] + [r.stop for r in overlapping])
        unit = _unit(arr, start)
        for r in overlapping:
            unit = math.gcd(math.gcd(unit, r.unit), r.start - start)
        region = Region(start, stop, unit)
        for r in overlapping:
            region._absorb(r)
            r.alive = False
        starts[lo:hi] = [start]
        self.regions[lo:hi] = [region]
        return region
