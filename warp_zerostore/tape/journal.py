"""The journal of visible writes: calls that change arrays outside the launches a Tape records, each with the
``file:line`` that made it, so that a "mutated after record" report names the change, not only its reader.

Visible calls are a launch no package Tape records (after the Tape was left, ``record_tape=False``, under Warp's own
Tape), ``wp.copy``, ``assign``, ``fill_`` and ``zero_``, on any array object: a write through another array over
the same memory (a view, ``wp.array(ptr=y.ptr, ...)``) is found by the bytes it spans (`_memory.byte_span`). A
write through NumPy or Torch over shared memory, or through a pointer, calls nothing the journal sees: the report
then says so, and between which two points the change happened (`Change`).

The journal is held by a checking or snapshotting Tape from the moment it is entered until its ``backward()``
(or ``reset()``, or its collection): only then are the hooks in (`_compat.install_launch_hook`,
`_compat.install_host_write_hook`, the mechanism the snapshot Tape records host writes with), never from import.
Its cost is a few microseconds per hooked call while a Tape holds it (measured in
``benchmarks/bench_change_journal.py``; docs/tape-safety.md). It keeps the last `CAPACITY` distinct writes (by
memory, call and line); a report whose interval reaches past what it kept says that too.

What it records is observed (a call that ran), and a launch's writes are the arrays its source may write
(`access`); it is used only to name a change in a report, never to decide what a gradient reads.
"""

from __future__ import annotations

import dataclasses

from .._memory import byte_span

#: distinct writes kept (by memory, call and line); the oldest go first
CAPACITY = 65536


@dataclasses.dataclass(frozen=True)
class Write:
    """One visible call that wrote memory: what it was (``"wp.copy"``, ``"fill_"``, ``"a launch of kernel 'k'"``) and
    where the user made it."""

    what: str
    location: str

    def describe(self) -> str:
        return f"{self.what} at {self.location}"


@dataclasses.dataclass(frozen=True)
class Change:
    """What the journal says of one change after record: the visible calls that wrote the array's memory in the
    interval (oldest first; none: the change came through no call it watches), and the interval's ends (``after``:
    the last moment the Tape knew the content; ``before``: where the change was found)."""

    writes: tuple
    after: str
    before: str
    complete: bool = True  # the journal watched the whole interval and kept every write in it

    def describe(self) -> str:
        """The sentence a report gives the change (after "changed after the launch was recorded")."""
        if self.writes:
            by = "; ".join(w.describe() for w in self.writes)
            return f"outside any recorded kernel launch, by {by}"
        if not self.complete:
            return (
                f"between {self.after} and {self.before}, by no call the Tape's journal kept (it watches wp.launch, "
                "wp.copy, assign, fill_ and zero_ from recording to backward(), and keeps the last "
                f"{CAPACITY} distinct writes)"
            )
        return (
            f"between {self.after} and {self.before}, by no call the Tape watches (wp.launch, wp.copy, assign, fill_, "
            "zero_, through any array over its memory): a write through NumPy or Torch over shared memory, or "
            "through a pointer"
        )


class Journal:
    """The visible writes of the process while a Tape holds the journal, in order."""

    def __init__(self):
        self.holders = 0
        self.clock = 0  # the sequence number of the last write (or point) recorded
        #: (device, start, end, what, location) -> sequence number of its last write; in order of first write
        self._writes: dict = {}
        self._forgotten = 0  # writes up to this sequence number may have been dropped (capacity)
        self._watched_since = 0  # the journal has been held without a gap since this sequence number

    def hold(self) -> None:
        if not self.holders:
            self.clock += 1
            self._watched_since = self.clock
        self.holders += 1

    def release(self) -> None:
        self.holders = max(0, self.holders - 1)
        if not self.holders:
            self._writes.clear()
            self._forgotten = 0

    def now(self) -> int:
        """A point in the sequence: a write logged after it has a larger number."""
        return self.clock

    def wrote(self, arr, what: str, location: str) -> None:
        """Log that a visible call wrote ``arr``'s memory (only while held; zero-size arrays write nothing)."""
        if not self.holders or not arr.size:
            return
        self.clock += 1
        start, end = byte_span(arr)
        writes = self._writes
        writes[(str(arr.device), start, end, what, location)] = self.clock
        while len(writes) > CAPACITY:  # the first logged go (a plain dict: its order is that of first writes)
            dropped = writes.pop(next(iter(writes)))
            self._forgotten = max(self._forgotten, dropped)

    def change(self, arr, since: int, after: str, before: str) -> Change:
        """The `Change` of ``arr`` after point ``since``: the visible writes into its memory logged since (each
        call and line once, oldest first)."""
        device, (start, end) = str(arr.device), byte_span(arr)
        found: dict = {}
        for (other_device, other_start, other_end, what, location), seq in self._writes.items():
            if seq > since and other_device == device and other_start < end and start < other_end:
                write = Write(what, location)
                found[write] = min(seq, found.get(write, seq))
        writes = tuple(sorted(found, key=found.get))
        complete = self.holders > 0 and since >= self._watched_since and since >= self._forgotten
        return Change(writes, after, before, complete)


#: the process's journal (one: the hooks are the process's)
JOURNAL = Journal()


__all__ = ["CAPACITY", "JOURNAL", "Change", "Journal", "Write"]
