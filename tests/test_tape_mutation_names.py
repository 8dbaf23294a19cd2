"""A "mutated after record" report names the change, not only its reader: the call that made it, with its
``file:line`` (a launch outside the Tape, on the array or on a zero-copy alias of it; ``wp.copy``, ``assign``,
``fill_``, ``zero_``, on the array or on a view; a launch inside the Tape with ``record_tape=False``), on the checking
and the snapshot Tape alike. Negative twin: a change through a NumPy view calls nothing the Tape watches, and the
report says so, and between which two points it happened. The hooks that watch those calls belong to a Tape from
the moment it is entered until its ``backward()``: never to import, never to a plain Tape."""

import gc
import warnings

import numpy as np
import pytest
import warp
from helpers import kernels_mutation_names as k

import warp_zerostore as wp
from warp_zerostore import _compat

N = 4

# Each change is one line: its code's first line is the call's line.
VISIBLE = {
    "untaped launch": lambda x: wp.launch(k.bump, dim=N, inputs=[x]),
    "launch on an alias": lambda x: wp.launch(k.bump, dim=N, inputs=[wp.array(ptr=x.ptr, shape=(N,), dtype=float)]),
    "wp.copy": lambda x: wp.copy(x, wp.full(N, 5.0, dtype=float)),
    "assign": lambda x: x.assign(np.full(N, 5.0)),
    "fill_": lambda x: x.fill_(5.0),
    "zero_": lambda x: x.zero_(),
    "fill_ on a view": lambda x: x[1:3].fill_(5.0),
}
NAMED = {
    "untaped launch": "an untaped launch of kernel 'bump'",
    "launch on an alias": "an untaped launch of kernel 'bump'",
    "wp.copy": "wp.copy",
    "assign": "assign()",
    "fill_": "fill_()",
    "zero_": "zero_()",
    "fill_ on a view": "fill_()",
}
TAPES = {"check": lambda: wp.Tape(check="warn"), "snapshot": lambda: wp.Tape(snapshot=True)}


def _mutated_after_record(make_tape, change):
    x = wp.array(np.arange(1.0, N + 1.0), dtype=float, requires_grad=True)
    y = wp.zeros(N, dtype=float, requires_grad=True)
    tape = make_tape()
    with tape:
        wp.launch(k.square, dim=N, inputs=[x, y])
    change(x)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            tape.backward(grads={y: wp.ones(N, dtype=float)})  # the line of the backward() call: BACKWARD_LINE
        except wp.OverwriteError as error:
            return str(error), tape
    return "\n".join(str(w.message) for w in caught if issubclass(w.category, wp.OverwriteWarning)), tape


BACKWARD_LINE = _mutated_after_record.__code__.co_firstlineno + 10
READER_LINE = _mutated_after_record.__code__.co_firstlineno + 5


def _where(change) -> str:
    return f"{__file__}:{change.__code__.co_firstlineno}"


@pytest.mark.parametrize("tape", sorted(TAPES))
@pytest.mark.parametrize("how", sorted(VISIBLE))
def test_a_change_through_a_visible_call_is_named_with_its_line(tape, how):
    said, _ = _mutated_after_record(TAPES[tape], VISIBLE[how])
    assert said.startswith("mutated after record: the array read by kernel 'square'")
    assert f"by {NAMED[how]} at {_where(VISIBLE[how])}" in said, said
    assert "by no call" not in said


@pytest.mark.parametrize("tape", sorted(TAPES))
def test_negative_twin_a_change_through_numpy_is_said_to_be_unseen_with_its_interval(tape):
    def through_numpy(x):
        x.numpy()[0] = 7.0  # the CPU's memory, shared: no call of Warp's

    said, _ = _mutated_after_record(TAPES[tape], through_numpy)
    assert said.startswith("mutated after record: the array read by kernel 'square'")
    assert "by no call the Tape watches" in said and "a write through NumPy or Torch over shared memory" in said
    assert f"between the recorded launch of kernel 'square' at {__file__}:{READER_LINE}" in said
    assert f"and backward() at {__file__}:{BACKWARD_LINE}" in said, said


def test_a_launch_inside_the_tape_that_is_not_recorded_is_named_where_the_next_launch_finds_it():
    x = wp.array(np.arange(1.0, N + 1.0), dtype=float, requires_grad=True)
    y = wp.zeros(N, dtype=float, requires_grad=True)
    z = wp.zeros(N, dtype=float, requires_grad=True)
    tape = wp.Tape(check="warn")
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        with tape:
            wp.launch(k.square, dim=N, inputs=[x, y])
            wp.launch(k.bump, dim=N, inputs=[x], record_tape=False)  # the change: line UNRECORDED
            wp.launch(k.square, dim=N, inputs=[x, z])  # finds it
    code = test_a_launch_inside_the_tape_that_is_not_recorded_is_named_where_the_next_launch_finds_it.__code__
    unrecorded = code.co_firstlineno + 9
    (said,) = [str(w.message) for w in caught if "mutated after record" in str(w.message)]
    assert f"by an untaped launch of kernel 'bump' at {__file__}:{unrecorded}" in said
    assert f"(found at launch #1 at {__file__}:{unrecorded + 1})" in said


def test_a_write_before_the_reader_is_not_named():
    # the journal names writes after the Tape last knew the content, not every write of that memory
    x = wp.array(np.arange(1.0, N + 1.0), dtype=float, requires_grad=True)
    y = wp.zeros(N, dtype=float, requires_grad=True)
    tape = wp.Tape(check="warn")
    with tape:
        x.fill_(2.0)  # before the reader: part of what it read
        wp.launch(k.square, dim=N, inputs=[x, y])
    x.numpy()[1] = 9.0
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        tape.backward(grads={y: wp.ones(N, dtype=float)})
    (said,) = [str(w.message) for w in caught]
    assert "fill_()" not in said and "by no call the Tape watches" in said


def _hooks():
    return warp.launch is not _compat._LAUNCH_ORIGINAL, warp.copy is not STOCK_COPY


STOCK_COPY = warp.copy


@pytest.mark.parametrize("tape", sorted(TAPES))
def test_the_watching_hooks_belong_to_a_tape_from_recording_to_backward(tape):
    assert _hooks() == (False, False)  # importing the package hooks nothing
    x = wp.array(np.arange(1.0, N + 1.0), dtype=float, requires_grad=True)
    y = wp.zeros(N, dtype=float, requires_grad=True)
    recorder = TAPES[tape]()
    with recorder:
        wp.launch(k.square, dim=N, inputs=[x, y])
    assert _hooks() == (True, True)  # left, not differentiated yet: the changes until backward() are watched
    recorder.backward(grads={y: wp.ones(N, dtype=float)})
    assert _hooks() == (False, False)
    with recorder:  # recorded again: watched again, until reset()
        wp.launch(k.square, dim=N, inputs=[x, y])
    recorder.reset()
    assert _hooks() == (False, False)
    with TAPES[tape]():  # a Tape never differentiated lets go when it is collected
        wp.launch(k.square, dim=N, inputs=[x, y])
    gc.collect()
    assert _hooks() == (False, False)


def test_a_plain_tape_holds_no_hooks():
    x = wp.array(np.arange(1.0, N + 1.0), dtype=float, requires_grad=True)
    y = wp.zeros(N, dtype=float, requires_grad=True)
    tape = wp.Tape()
    with tape:
        assert _hooks() == (False, False)
        wp.launch(k.square, dim=N, inputs=[x, y])
    assert _hooks() == (False, False)


def test_the_journal_says_when_it_cannot_vouch_for_the_whole_interval(monkeypatch):
    from warp_zerostore.tape import journal

    log = journal.Journal()
    x, other = wp.zeros(N, dtype=float), wp.zeros(N, dtype=float)
    log.wrote(x, "fill_()", "before.py:1")  # not held: nothing logged
    log.hold()
    since = log.now()
    log.wrote(x, "fill_()", "a.py:1")
    log.wrote(other, "fill_()", "b.py:2")  # other memory: not named for x
    change = log.change(x, since, "A", "B")
    assert change.complete and [w.describe() for w in change.writes] == ["fill_() at a.py:1"]
    assert log.change(x, log.now(), "A", "B").writes == ()  # nothing since the last write
    monkeypatch.setattr(journal, "CAPACITY", 1)
    log.wrote(other, "zero_()", "c.py:3")  # x's write is dropped to make room
    change = log.change(x, since, "A", "B")
    assert not change.complete and change.writes == ()
    assert "by no call the Tape's journal kept" in change.describe()
    log.release()


def _inner_snapshot_gradient(inside_backward: bool) -> np.ndarray:
    """x read by ``square``, then bumped in place, on a snapshot Tape (its backward needs x as ``square`` read it);
    recorded and differentiated inside a callback of a plain Tape's backward (as a checkpointed rollout reverses a
    step), or on its own."""
    got = {}

    def inner():
        x = wp.array(np.arange(1.0, N + 1.0), dtype=float, requires_grad=True)
        y = wp.zeros(N, dtype=float, requires_grad=True)
        tape = wp.Tape(snapshot=True)
        with tape:
            wp.launch(k.square, dim=N, inputs=[x, y])
            wp.launch(k.bump, dim=N, inputs=[x])
        tape.backward(grads={y: wp.ones(N, dtype=float)})
        got["x"] = x.grad.numpy().copy()

    if not inside_backward:
        inner()
        return got["x"]
    a = wp.array(np.ones(N), dtype=float, requires_grad=True)
    b = wp.zeros(N, dtype=float, requires_grad=True)
    outer = wp.Tape()
    with outer:
        wp.launch(k.square, dim=N, inputs=[a, b])
        outer.record_func(backward=inner, arrays=[])
    outer.backward(grads={b: wp.ones(N, dtype=float)})
    return got["x"]


def test_a_snapshot_tape_recorded_inside_another_tapes_backward_snapshots_as_anywhere_else():
    # the backward's own copies stay out of the journal; a Tape entered there still records its launches
    np.testing.assert_array_equal(_inner_snapshot_gradient(inside_backward=True), 2.0 * np.arange(1.0, N + 1.0))


def test_negative_twin_the_same_snapshot_tape_on_its_own():
    np.testing.assert_array_equal(_inner_snapshot_gradient(inside_backward=False), 2.0 * np.arange(1.0, N + 1.0))
