"""Carry out a checkpoint_schedules schedule on Warp arrays: run steps, write and restore snapshots, reverse.

Step ``n`` maps state ``n`` to state ``n + 1``. In place, both live in the one state buffer; double-buffered,
state ``n`` lives in ``buffers[n % 2]``, so a snapshot restored for step ``n`` goes where the forward pass had it.

Reversing step ``n``: the step is run once more on a local Tape (``Forward(n, n + 1, write_adj_deps=True)``,
a ``warp_zerostore.Tape(snapshot=True)`` where the step needs one, so each launch sees the values it read), and that
Tape's backward turns the adjoint of state ``n + 1`` (in the ``.grad`` of the arrays holding it) into the
adjoint of state ``n`` (in the ``.grad`` of the arrays holding that), while parameter gradients accumulate.
The adjoint of the state is never copied: in place it stays in ``state.grad``; double-buffered, the adjoint of
state ``n`` lands in ``buffers[n % 2].grad``, which is where step ``n - 1`` reads its output adjoint from.

Double-buffered, a snapshot the schedule moves back (``Move``: restored, then deleted) for the step it was
taken before is not copied into the work buffer: the step reads it in place (a view of the state object with
the snapshot's arrays, their ``.grad`` the work buffer's), and it is deleted once that step is reversed. A step
may write into its input state, so snapshots that stay (``Copy``) are copied, as is state 0, which is left in
``state`` after the reverse sweep.

With ``rollout(writes_input=False)`` (double-buffered; the step promises never to write its input state, and
`promise` checks it), kept snapshots are read in place too, and a snapshot the schedule takes of the state
a forward run ends at (the next action: ``Forward(n, ..., write_ics=True)`` in RAM) is not copied either: the
step before writes its output straight into the snapshot's arrays, which the next step then reads in place.
Only state 0 and snapshots taken right after a restore are copied.

Which steps need a snapshotting Tape (``snapshot_step=None``, the default double-buffered): one where a launch
writes memory that it or an earlier launch of the step reads (`launches.read_then_written`). The first
step the forward sweep runs is recorded on a plain Tape (launches only) and read to decide (where a reversed
step comes first, as in ``store_all``, that step is recorded on a snapshotting Tape and read). Every step
recorded on a plain Tape is read too: one that turns out to need a snapshotting Tape is recorded again on one
(from then on every step is), or, when it also wrote its own input state (so it cannot be run again), refused
by name.

While a step runs, Warp's forward copy of gradients inside ``wp.copy`` leaves the state's and the parameters'
``.grad`` alone (`warp_zerostore.copy_adjoint.gradients_kept`): they hold the adjoint being carried back.
"""

from __future__ import annotations

import dataclasses
import functools
import warnings

import warp

from .. import _compat
from ..copy_adjoint import gradients_kept, owners_of_gradients
from ..tape import OverwriteError, OverwriteWarning, Tape, hazard_listener
from ..tape.tape import STALE_READ
from . import promise
from .launches import read_before, read_then_written, writers
from .state import CheckpointError
from .storage import DiskStorage, RamStorage
from .summary import Event
from .zeroed import left_zero


@dataclasses.dataclass
class Borrowed:
    """A snapshot read in place by step ``n`` (see the module docstring): deleted when released, unless kept
    (a ``Copy`` or a snapshot a step wrote, with ``writes_input=False``)."""

    n: int
    arrays: list
    view: object
    storage: object
    stepped: bool = False
    keep: bool = False

    def detach(self) -> None:
        """Give the work buffer's gradients back: the snapshot arrays stop carrying them."""
        for snap in self.arrays:
            snap.grad = None


class Executor:
    """Runs one rollout's schedule; ``forward_sweep`` at the rollout, ``reverse_sweep`` in the Tape's backward."""

    def __init__(self, step, buffers, layout, params, schedule, steps, until, summary, progress, options):
        import checkpoint_schedules as cs

        self.cs = cs
        self.step = step
        self.buffers = buffers  # [state] in place, [state, out] double-buffered
        self.layout = layout
        self.labels = [field.label for field in layout.fields]  # of the input state, for error messages
        self.params = params
        self.schedule = schedule
        self.steps = steps  # None: online, until() decides
        self.until = until
        self.summary = summary
        self.progress = progress
        self.snapshot_step = options["snapshot_step"]  # True, False, or None: as the step's launches need
        self.needs_snapshot: bool | None = None  # with None: learnt from the first reversed step
        self.check = options["check"]
        self.directory = options["directory"]
        self.trusted = not options.get("writes_input", True)  # the step never writes its input state
        self.input_checked = False  # step 0's input compared before and after (writes_input=False)
        self.actions = _Actions(schedule)
        self.storages: dict = {}
        self.adj_deps: dict = {}  # step -> (local Tape, saved buffer values or None)
        self.position = 0  # the step whose state the work buffers hold
        self.reversed_once = False
        self.first_reverse = True
        self.borrowed: Borrowed | None = None
        self.kept: dict | None = None  # owners_of_gradients(self.kept_gradients()), while the arrays stay
        self.left_zero: set = set()  # ids of state arrays whose .grad the last reversal left zero
        self.param_ids = {id(p) for p in params}
        self._dispatch = functools.singledispatch(self._unexpected)
        self._dispatch.register(cs.Forward, self._forward)
        self._dispatch.register(cs.Reverse, self._reverse)
        self._dispatch.register(cs.Copy, self._copy)
        self._dispatch.register(cs.Move, self._move)

    # -- buffers

    @property
    def in_place(self) -> bool:
        return len(self.buffers) == 1

    def holder(self, n: int):
        """The state object holding state ``n``."""
        return self.buffers[n % len(self.buffers)]

    def state_arrays(self) -> list:
        seen, out = set(), []
        for buffer in self.buffers:
            for arr in self.layout.arrays(buffer):
                if id(arr) not in seen:
                    seen.add(id(arr))
                    out.append(arr)
        return out

    def storage(self, kind):
        found = self.storages.get(kind)
        if found is None:
            found = self.storages[kind] = (
                RamStorage() if kind == self.cs.StorageType.RAM else DiskStorage(self.directory)
            )
        return found

    # -- running one step

    def input_arrays(self, n: int) -> list:
        """The arrays step ``n`` reads its state from: a snapshot read in place, or the work buffer's."""
        borrowed = self.borrowed
        return borrowed.arrays if borrowed is not None and borrowed.n == n else self.layout.arrays(self.holder(n))

    def run_step(self, n: int, tape=None, out=None) -> None:
        """Run step ``n`` (on ``tape`` if given); double-buffered, ``out`` (arrays) receives state ``n + 1``
        in place of the work buffer's."""
        if self.in_place:
            args = (self.buffers[0], n)
        else:
            borrowed = self.borrowed
            state_in = borrowed.view if borrowed is not None and borrowed.n == n else self.holder(n)
            state_out = self.holder(n + 1) if out is None else self.layout.view(self.holder(n + 1), out)
            args = (state_in, state_out, n)
        witness = None
        if self.trusted and not self.input_checked:
            witness = promise.values(self.input_arrays(n))
        # The first untaped run is recorded on a plain Tape (launches only): to name a kernel that breaks the
        # writes_input promise, and to learn whether reversed steps need a snapshotting Tape.
        probe = tape is None and (witness is not None or (self.snapshot_step is None and self.needs_snapshot is None))
        if probe:
            tape = _compat.WarpTape()
        if self.kept is None:
            self.kept = owners_of_gradients(self.kept_gradients())
        with gradients_kept.of(self.kept) as copies:
            if tape is None:
                self.step(*args)
            else:
                with tape:
                    self.step(*args)
        if tape is not None:
            self._check_copies(n, tape, copies)
        if probe and self.snapshot_step is None and self.needs_snapshot is None:
            self.needs_snapshot = bool(read_then_written(tape))
        if witness is not None:
            promise.check_unchanged(witness, self.input_arrays(n), self.labels, n, tape)
            self.input_checked = True
        if out is not None:
            promise.check_written_in_place(self.layout.arrays(args[1]), out, self.labels, n)
        self.summary.steps_run += 1
        for i, buffer in enumerate(self.buffers):
            if self.layout.check(buffer, "state" if i == 0 else "out", f"step {n}"):
                self.kept = None  # a step rebound a state array: its gradient is another

    def _check_copies(self, n: int, tape, copies) -> None:
        """Refuse a ``wp.copy`` into a state array that a launch of the step read before it: that launch's
        backward would re-read the copied values, and no Tape snapshots a copy."""
        if not copies:
            return
        labels = {
            id(a): label.replace("state", "out", i)
            for i, buffer in enumerate(self.buffers)
            for a, label in zip(self.layout.arrays(buffer), self.labels)
        }
        for array, entries in copies:
            reader = read_before(tape, array, entries)
            if reader is None:
                continue
            label = labels.get(id(array), "a parameter")
            raise CheckpointError(
                f"rollout(): step {n} overwrites {label} with wp.copy after kernel '{reader.kernel}' (argument "
                f"'{reader.parameter}') read it, so that kernel's backward would re-read the copied values (a Tape "
                "snapshots kernel launches, not copies). Write the new values with a kernel, or make the rollout "
                "double-buffered (out=...) and copy into state_out"
            )

    def kept_gradients(self) -> list:
        """Arrays whose ``.grad`` a step's forward must not change: the state's (the adjoint carried back; a
        snapshot read in place by a taped step carries the work buffer's very ``.grad``) and the parameters'
        (accumulating)."""
        arrays = self.state_arrays() + self.params
        if self.borrowed is not None:
            arrays += self.borrowed.arrays  # last: the owner of the work buffer's .grad while they carry it
        return arrays

    def _snapshotting(self) -> bool:
        """Whether the next reversed step is recorded on a snapshotting Tape."""
        if self.snapshot_step is not None:
            return self.snapshot_step
        return self.needs_snapshot is not False  # undecided (no untaped run came first): snapshot, and learn

    def _taped_step(self, n: int, keep_values: bool):
        borrowed = self.borrowed
        if borrowed is not None and borrowed.n == n:
            # the adjoint of state n lands where step n - 1's backward reads it: the work buffer's .grad
            for snap, work in zip(borrowed.arrays, self.layout.arrays(self.holder(n))):
                snap.grad = work.grad
            borrowed.stepped = True
            self.kept = None
        snapshot = self._snapshotting()
        tape, hazards = self._record(n, snapshot)
        if self.snapshot_step is None and not (snapshot and self.needs_snapshot):
            found = read_then_written(tape)
            if not snapshot and found:
                self._refuse_rerun(n, tape, found)
                snapshot = True
                tape, hazards = self._record(n, snapshot)  # the step's input state is as it was
            if self.needs_snapshot is None or found:
                self.needs_snapshot = bool(found)
        self._report(n, hazards, snapshot)
        if snapshot:
            self.summary.steps_snapshotted += 1
        if self.trusted:
            promise.check_launches(tape, self.input_arrays(n), self.labels, n)
        saved = None
        if keep_values:  # store_all: the Tape is backpropagated after later steps changed the buffers
            saved = [warp.clone(a, requires_grad=False) for a in self.state_arrays()]
            self.summary.state_copies += 1
            self.summary.ram_bytes += sum(s.capacity for s in saved)
        self.adj_deps[n] = (tape, saved)
        self.summary.snapshots_held = max(self.summary.snapshots_held, len(self.adj_deps) if keep_values else 0)

    def _record(self, n: int, snapshot: bool):
        """Run step ``n`` on a new local Tape; with ``check``, the hazards that Tape found (reported later, by
        `_report`, once it is known which Tape the step is reversed on)."""
        if self.check == "off":
            tape = Tape(check="off", snapshot=snapshot)
            self.run_step(n, tape)
            return tape, []
        tape, found = Tape(check="warn", snapshot=snapshot), []
        with hazard_listener(found.append), warnings.catch_warnings():
            warnings.simplefilter("ignore", OverwriteWarning)
            self.run_step(n, tape)
        return tape, found

    def _refuse_rerun(self, n: int, tape, found) -> None:
        """Step ``n``, recorded on a plain Tape, needs a snapshotting one: raise unless it can run again, i.e.
        unless it wrote its own input state."""
        wrote = writers(tape, self.input_arrays(n))
        if not wrote:
            return
        use, i = wrote[0]
        why = found[0].describe() if found else "a launch overwrites what a launch of the step read"
        raise CheckpointError(
            f"rollout(): step {n} needs a snapshotting Tape to be reversed ({why}), which steps before it did not, "
            f"and it also overwrites its own input state (kernel '{use.kernel}', argument '{use.parameter}', "
            f"{self.labels[i]}), so it cannot be run again on one. Pass rollout(snapshot_step=True) to reverse every "
            "step on a snapshotting Tape"
        )

    def _report(self, n: int, hazards, snapshot: bool) -> None:
        """Report, at the level of ``check``, the hazards of step ``n``'s Tape that it does not make right (on a
        snapshotting Tape a stale read is restored, so it is not one)."""
        wrong = [h for h in hazards if h.real and not (snapshot and h.kind == STALE_READ)]
        where = f" [rollout(): step {n}, on the local Tape it is reversed on]"
        if self.check == "error" and wrong:
            raise OverwriteError("\n".join(h.message() + where for h in wrong))
        for hazard in wrong:
            warnings.warn(OverwriteWarning(hazard.message() + where), stacklevel=2)

    # -- actions

    def _unexpected(self, action):
        raise RuntimeError(f"warp_zerostore.checkpoint: unexpected checkpointing action {action!r}")

    def _done(self, n: int) -> bool:
        if self.steps is not None:
            return n >= self.steps
        return bool(self.until(self.holder(n), n))

    def _forward(self, action) -> None:
        n0, n1 = action.n0, action.n1
        borrowed = self.borrowed
        # written already: a step wrote state n0 straight into the snapshot, which the next step reads in place
        written = (
            action.write_ics
            and borrowed is not None
            and borrowed.n == n0
            and self.storage(action.storage).holds(n0, borrowed.arrays)
        )
        if borrowed is not None and (
            borrowed.n != n0 or (action.write_ics and not written) or (action.write_adj_deps and n1 - n0 > 1)
        ):
            self._settle()
        if n0 != self.position:
            raise RuntimeError(f"warp_zerostore.checkpoint: schedule runs from step {n0}, buffers hold {self.position}")
        if action.write_ics and not written:
            self.storage(action.storage).write(n0, self.layout.arrays(self.holder(n0)))
            self.summary.state_copies += 1
        if action.write_ics:
            self._count_snapshots()
        online = self.schedule.max_n is None  # the length is learnt as the forward runs
        n, done = n0, False
        while n < n1 and not done:
            if action.write_adj_deps:
                self._taped_step(n, keep_values=(n1 - n0) > 1)
            else:
                out = self._snapshot_output(n + 1) if self.trusted and n + 1 == n1 and not online else None
                self.run_step(n, out=out)
                if self.borrowed is not None and self.borrowed.n == n:
                    self._release()  # read once, not reversed: the snapshot read in place is done with
                if out is not None:
                    ram = self.storage(self.cs.StorageType.RAM)
                    self.borrowed = Borrowed(n + 1, out, self.layout.view(self.holder(n + 1), out), ram, keep=True)
            n += 1
            if self.progress_forward:
                self.progress.update()
            done = online and self._done(n)
        self.position = n
        if done:
            self.schedule.finalize(n)

    def _snapshot_output(self, n: int):
        """Arrays for step ``n - 1`` to write state ``n`` into, when the schedule's next action snapshots it in
        RAM (``writes_input=False``): that snapshot's own arrays. None otherwise."""
        upcoming = self.actions.peek()
        if (
            isinstance(upcoming, self.cs.Forward)
            and upcoming.n0 == n
            and upcoming.write_ics
            and upcoming.storage == self.cs.StorageType.RAM
        ):
            return self.storage(upcoming.storage).claim(n, like=self.layout.arrays(self.holder(n)))
        return None

    def _reverse(self, action) -> None:
        if self.borrowed is not None and not self.borrowed.stepped:
            self._settle()
        for n in range(action.n1 - 1, action.n0 - 1, -1):
            tape, saved = self.adj_deps.pop(n)
            if saved is not None:
                for dest, src in zip(self.state_arrays(), saved):
                    _copy(dest, src)
                self.summary.state_copies += 1
            self._backpropagate(n, tape)
            if self.borrowed is not None and self.borrowed.n == n:
                self._release()
            self.summary.steps_reversed += 1
            self.progress.update()
        self.position = action.n0

    def _copy(self, action) -> None:
        self._restore(action, delete=False)

    def _move(self, action) -> None:
        self._restore(action, delete=True)

    def _restore(self, action, delete: bool) -> None:
        if self.borrowed is not None:
            self._settle()
        source = self.storage(action.from_storage)
        if action.to_storage == self.cs.StorageType.WORK:
            work = self.holder(action.n)
            if (delete or self.trusted) and not self.in_place and action.n > 0:
                arrays = source.borrow(action.n, like=self.layout.arrays(work))
                self.borrowed = Borrowed(action.n, arrays, self.layout.view(work, arrays), source, keep=not delete)
                self.position = action.n
                return  # deleted when released
            source.read(action.n, self.layout.arrays(work))
            self.summary.state_copies += 1
            self.position = action.n
        elif action.to_storage != self.cs.StorageType.NONE:
            raise RuntimeError(f"warp_zerostore.checkpoint: unsupported storage-to-storage action {action!r}")
        if delete:
            source.delete(action.n)

    def _release(self) -> None:
        """Done with the snapshot read in place: detach the work buffer's gradients from it; delete it unless kept."""
        borrowed, self.borrowed = self.borrowed, None
        borrowed.detach()
        self.kept = None
        if not borrowed.keep:
            borrowed.storage.delete(borrowed.n)

    def _settle(self) -> None:
        """An action other than the step that reads the snapshot in place comes first: copy it into the work buffer."""
        borrowed = self.borrowed
        if borrowed.stepped:
            raise RuntimeError(
                f"warp_zerostore.checkpoint: step {borrowed.n} was run on a moved snapshot, not reversed"
            )
        for dest, src in zip(self.layout.arrays(self.holder(borrowed.n)), borrowed.arrays):
            _copy(dest, src)
        self.summary.state_copies += 1
        self._release()

    def _count_snapshots(self) -> None:
        ram = self.storages.get(self.cs.StorageType.RAM)
        disk = self.storages.get(self.cs.StorageType.DISK)
        held = sum(len(s.snapshots) for s in (ram, disk) if s is not None)
        self.summary.snapshots_held = max(self.summary.snapshots_held, held)
        if ram is not None:
            self.summary.ram_bytes = max(self.summary.ram_bytes, ram.peak_bytes)
        if disk is not None:
            self.summary.disk_bytes = max(self.summary.disk_bytes, disk.peak_bytes)

    # -- one step's backward

    def _backpropagate(self, n: int, tape) -> None:
        state_ids = {id(a) for a in self.state_arrays()}
        if self.borrowed is not None:
            state_ids.update(id(a) for a in self.borrowed.arrays)
        # Temporaries and scratch arrays the step touches carry no gradient from one step to the next.
        internal = [
            a
            for a in _compat.tape_arrays(tape)
            if a.requires_grad and a.grad is not None and id(a) not in state_ids and id(a) not in self.param_ids
        ]
        for a in internal:
            a.grad.zero_()
        if not self.in_place and not self.first_reverse:
            # The input buffer's .grad held the adjoint of state n + 2, consumed by step n + 1's backward
            # (which may have left it zero: see zeroed.py).
            for a in self.layout.arrays(self.holder(n)):
                if id(a) not in self.left_zero:
                    a.grad.zero_()
        self.first_reverse = False
        tape.backward()
        if not self.in_place:
            self.left_zero = left_zero(tape, self.layout.arrays(self.holder(n + 1)))
        for a in internal:
            a.grad.zero_()
        # Not tape.reset(): it would zero the gradients just computed. The Tape is dropped with its snapshots.

    # -- sweeps

    progress_forward = False

    def forward_sweep(self) -> None:
        """From the start up to EndForward: the rollout itself, writing the first snapshots."""
        self.progress_forward = True
        self.progress.start("rollout forward")
        try:
            with _compat.no_active_tape():
                for action in self.actions:
                    if isinstance(action, self.cs.EndForward):
                        break
                    self._dispatch(action)
                    self._log(action, "forward")
            self.steps = self.schedule.max_n
            self.summary.steps = self.steps
        except BaseException:
            self.close()
            raise
        finally:
            self.progress_forward = False
            self.progress.close()
            self._count_snapshots()

    def reverse_sweep(self) -> None:
        """From EndForward to EndReverse: recompute and backpropagate, last step first."""
        if self.reversed_once:
            raise CheckpointError(
                "this checkpointed rollout was already reversed; its snapshots are gone. Run the rollout again "
                "(under a new Tape) for another backward pass"
            )
        self.reversed_once = True
        self.progress.total = self.steps
        self.progress.start("rollout reverse")
        try:
            with _compat.no_active_tape():
                for action in self.actions:
                    if isinstance(action, self.cs.EndReverse):
                        break
                    self._dispatch(action)
                    self._log(action, "reverse")
                    if not isinstance(action, self.cs.Reverse):  # only the other actions write or drop snapshots
                        self._count_snapshots()
            if not self.in_place and self.steps:
                # The buffer that never holds state 0 was only an output: no gradient is left in it.
                for a in self.layout.arrays(self.buffers[1]):
                    a.grad.zero_()
        finally:
            self.progress.close()
            self.close()

    def _log(self, action, sweep: str) -> None:
        """The action as it ran, on ``summary.timeline`` (what ``plot_schedule`` draws)."""
        held = [self.storages.get(kind) for kind in (self.cs.StorageType.RAM, self.cs.StorageType.DISK)]
        ram, disk = (0 if s is None else len(s.snapshots) for s in held)
        cs = self.cs
        if isinstance(action, cs.Forward):
            storage = _storage_name(action.storage) if action.write_ics else None
            event = Event(sweep, "forward", action.n0, self.position, bool(action.write_ics), storage, ram, disk)
        elif isinstance(action, cs.Reverse):
            event = Event(sweep, "reverse", action.n0, action.n1, False, None, ram, disk)
        else:
            kind = "move" if isinstance(action, cs.Move) else "copy"
            event = Event(sweep, kind, action.n, action.n, False, _storage_name(action.from_storage), ram, disk)
        self.summary.timeline.append(event)

    def close(self) -> None:
        """Free every snapshot and remove the disk folder (also after an exception)."""
        if self.borrowed is not None:
            self.borrowed.detach()
            self.borrowed = None
        for storage in self.storages.values():
            storage.close()
        self.adj_deps.clear()


def _copy(dest, src) -> None:
    warp.copy(dest, src)


def _storage_name(storage) -> str | None:
    name = storage.name.lower()
    return name if name in ("ram", "disk") else None


class _Actions:
    """The schedule's actions with one-action lookahead (`peek`), shared by both sweeps. Only offline
    schedules are peeked at: an online schedule's next action depends on ``finalize()``."""

    def __init__(self, schedule):
        self.schedule = schedule
        self.ahead: list = []

    def __iter__(self):
        return self

    def __next__(self):
        if self.ahead:
            return self.ahead.pop()
        return next(self.schedule)

    def peek(self):
        """The next action, left to be returned by ``next``; None when the schedule has no more."""
        if not self.ahead:
            try:
                self.ahead.append(next(self.schedule))
            except StopIteration:
                return None
        return self.ahead[0]
