"""``zero_``, ``fill_``, ``assign`` and an untaped ``wp.copy`` inside a recording snapshot Tape are recorded as the
writes they are (`warp_zerostore.tape.host_writes`): in ``backward()`` the destination gets back what the
launches before read, and the gradient of what the write overwrote is zero. A substep loop that resets a shared
counter then has the gradient of the same loop with a counter per substep, which central differences confirm.
Negative twins: the same reset outside the recorded region is still refused by name, a checking Tape without
snapshots still reports it, a copy Warp records (both arrays with gradients) is left as before, and the hooks
record only while a snapshot Tape records. The same hooks feed the journal of changes: one snapshot Tape records
the resets inside it and names a ``fill_`` after it, with its line, in its refusal."""

import contextlib
import warnings

import numpy as np
import pytest
import warp
from helpers import kernels_tape_host_writes as k

import warp_zerostore as wp
from warp_zerostore import _compat
from warp_zerostore.tape import host_writes

X0 = np.array([0.2, 0.5, 0.8])
SUBSTEPS = 4

RESETS = {
    "zero_": lambda c: c.zero_(),
    "fill_": lambda c: c.fill_(0.0),
    "assign": lambda c: c.assign(np.zeros(1)),
    "untaped wp.copy": lambda c: wp.copy(c, wp.zeros(1, dtype=wp.float64)),  # the source has no gradient
}


def _substeps(x0: np.ndarray, tape=None, reset=None, shared: bool = True):
    """``SUBSTEPS`` substeps: reset the contact counter, sum penalties into it, respond; one counter reset by
    ``reset`` (shared) or a fresh one per substep. Returns (loss, first state)."""
    x = wp.array(x0, dtype=wp.float64, requires_grad=True)
    first = x
    counter = wp.zeros(1, dtype=wp.float64, requires_grad=True)
    loss = wp.zeros(1, dtype=wp.float64, requires_grad=True)
    with tape if tape is not None else contextlib.nullcontext():
        for _ in range(SUBSTEPS):
            if shared:
                reset(counter)
            else:
                counter = wp.zeros(1, dtype=wp.float64, requires_grad=True)
            wp.launch(k.collide, dim=len(x0), inputs=[x, counter])
            x_next = wp.empty_like(x)
            wp.launch(k.respond, dim=len(x0), inputs=[x, counter, x_next])
            x = x_next
        wp.launch(k.square_sum, dim=len(x0), inputs=[x, loss])
    return loss, first


def _gradient(tape, **options):
    loss, first = _substeps(X0, tape, **options)
    tape.backward(loss)
    return first.grad.numpy()


def _central_differences(reset, eps: float = 1e-6) -> np.ndarray:
    out = np.zeros_like(X0)
    for j in range(len(X0)):
        up, down = X0.copy(), X0.copy()
        up[j] += eps
        down[j] -= eps
        value = lambda x0: _substeps(x0, reset=reset)[0].numpy()[0]  # noqa: E731
        out[j] = (value(up) - value(down)) / (2 * eps)
    return out


@pytest.mark.parametrize("name", sorted(RESETS))
def test_a_counter_reset_every_substep_inside_the_snapshot_tape_is_exact(name):
    per_substep = _gradient(warp.Tape(), shared=False)  # nothing overwritten: stock Warp is right
    with warnings.catch_warnings():
        warnings.simplefilter("error", wp.OverwriteWarning)
        tape = wp.Tape(snapshot=True)
        got = _gradient(tape, reset=RESETS[name])
    np.testing.assert_allclose(got, per_substep, rtol=1e-12)
    np.testing.assert_allclose(per_substep, _central_differences(RESETS[name]), rtol=1e-6)
    assert tape.snapshot_bytes > 0
    # the plain Tape reads the last substep's counter for every substep
    assert not np.allclose(_gradient(warp.Tape(), reset=RESETS[name]), per_substep, rtol=1e-6)


@pytest.mark.parametrize("name", sorted(RESETS))
def test_the_same_reset_outside_the_recorded_region_is_refused_by_name(name):  # negative twin
    tape = wp.Tape(snapshot=True)
    x = wp.array(X0, dtype=wp.float64, requires_grad=True)
    counter = wp.zeros(1, dtype=wp.float64, requires_grad=True)
    out = wp.zeros_like(x)
    loss = wp.zeros(1, dtype=wp.float64, requires_grad=True)
    with tape:
        wp.launch(k.collide, dim=3, inputs=[x, counter])
        wp.launch(k.respond, dim=3, inputs=[x, counter, out])
        wp.launch(k.square_sum, dim=3, inputs=[out, loss])
    RESETS[name](counter)  # after the Tape was left: a change of what `respond` read
    with pytest.raises(wp.OverwriteError, match="mutated after record.*kernel 'respond'.*argument 'counter'"):
        tape.backward(loss)


def test_a_checking_tape_without_snapshots_still_reports_the_reset():  # negative twin: only snapshot Tapes record
    tape = wp.Tape(check="warn")
    with warnings.catch_warnings(record=True) as said:
        warnings.simplefilter("always", wp.OverwriteWarning)
        _gradient(tape, reset=RESETS["zero_"])
    mutated = [str(w.message) for w in said if str(w.message).startswith("mutated after record")]
    assert mutated and all("respond" in m for m in mutated)


def test_a_copy_warp_records_is_left_as_before():  # negative twin: both arrays have gradients
    source = wp.zeros(1, dtype=wp.float64, requires_grad=True)
    tape = wp.Tape(snapshot=True)
    with pytest.raises(wp.OverwriteError, match="mutated after record.*respond"):
        _gradient(tape, reset=lambda c: wp.copy(c, source))


def test_a_copy_window_zeroes_the_gradient_of_the_window_only():
    """y = x^2; loss += y^3; y[1] = 0.5 (a copy of one element from an array without gradient); loss += y^3.
    d loss/d x0 keeps both reads of y[0]; x1 only the first read of y[1]."""

    def program(x0, tape=None):
        x = wp.array(x0, dtype=wp.float64, requires_grad=True)
        y = wp.zeros(2, dtype=wp.float64, requires_grad=True)
        loss = wp.zeros(1, dtype=wp.float64, requires_grad=True)
        half = wp.array([0.5], dtype=wp.float64)
        with tape if tape is not None else contextlib.nullcontext():
            wp.launch(k.square_into, dim=2, inputs=[x, y])
            wp.launch(k.cube_sum, dim=2, inputs=[y, loss])
            wp.copy(y, half, dest_offset=1, count=1)
            wp.launch(k.cube_sum, dim=2, inputs=[y, loss])
        return x, loss

    x0 = np.array([0.7, -1.3])
    tape = wp.Tape(snapshot=True)
    x, loss = program(x0, tape)
    tape.backward(loss)
    expected = np.array([2 * 6 * x0[0] ** 5, 6 * x0[1] ** 5])  # d(x^6)/dx, twice for x0 and once for x1
    np.testing.assert_allclose(x.grad.numpy(), expected, rtol=1e-12)


def test_the_hooks_belong_to_a_tape_from_recording_to_backward_and_record_only_inside_a_snapshot_tape():
    stock = {attr: getattr(owner, attr) for owner, attr in _compat.HOST_WRITES}

    def hooked():
        return {attr for owner, attr in _compat.HOST_WRITES if getattr(owner, attr) is not stock[attr]}

    assert hooked() == set()  # importing the package hooks nothing
    with wp.Tape():
        assert hooked() == set()  # nor does a plain Tape
    counter = wp.zeros(1, dtype=wp.float64, requires_grad=True)
    x = wp.array(X0, dtype=wp.float64, requires_grad=True)
    for options in ({"check": "warn"}, {"snapshot": True}):
        tape = wp.Tape(**options)
        with tape, warnings.catch_warnings():
            warnings.simplefilter("ignore", wp.OverwriteWarning)
            assert hooked() == {"zero_", "fill_", "assign", "copy"}
            wp.launch(k.collide, dim=len(X0), inputs=[x, counter])
            counter.zero_()  # a recorded write on the snapshot Tape only; the checking Tape's journal names it
        assert hooked() == {"zero_", "fill_", "assign", "copy"}  # left: the calls until backward() are named
        assert (len(tape.launches) == 2) is bool(options.get("snapshot"))
        tape.backward(grads={counter: wp.ones(1, dtype=wp.float64)})
        assert hooked() == set()
    x = wp.zeros(2, dtype=float)
    x.fill_(3.0)  # Warp's own, outside any Tape
    assert x.numpy().tolist() == [3.0, 3.0]


def test_a_write_before_any_launch_touched_the_array_is_not_recorded():
    # the reset at the start of the first substep: nothing to put back, no gradient to zero (a dead input)
    tape = wp.Tape(snapshot=True)
    counter = wp.zeros(1, dtype=wp.float64, requires_grad=True)
    with tape:
        counter.fill_(2.0)
    assert tape.launches == [] and tape.snapshot_bytes == 0 and counter.numpy().tolist() == [2.0]


def _resets_recorded(tape):
    """The substep loop on ``tape`` with its counter reset by ``zero_``: (first state, loss)."""
    loss, first = _substeps(X0, tape, reset=RESETS["zero_"])
    recorded = [entry for entry in tape.launches if isinstance(entry, host_writes.Undo)]
    assert len(recorded) == SUBSTEPS - 1 and tape.snapshot_bytes > 0  # the first reset: nothing read it yet
    return first, loss


def test_one_snapshot_tape_records_the_writes_inside_and_names_the_one_after_in_its_refusal():
    # The snapshot Tape's recording and the journal of changes share one set of hooks: inside the Tape a reset is
    # recorded (not a change), after it the same kind of call is the change a "mutated after record" names.
    tape = wp.Tape(snapshot=True)
    first, loss = _resets_recorded(tape)
    first.fill_(0.5)  # after the Tape was left: a change of what the first substep read
    line = test_one_snapshot_tape_records_the_writes_inside_and_names_the_one_after_in_its_refusal.__code__
    with pytest.raises(wp.OverwriteError) as refused:
        tape.backward(loss)
    said = str(refused.value)
    assert said.startswith("mutated after record") and "kernel 'collide'" in said
    assert f"by fill_() at {__file__}:{line.co_firstlineno + 5}" in said, said
    assert "zero_()" not in said  # the recorded resets are writes of the Tape, not changes


def test_negative_twin_the_same_tape_without_a_change_after_is_exact_and_silent():
    per_substep = _gradient(warp.Tape(), shared=False)
    with warnings.catch_warnings():
        warnings.simplefilter("error", wp.OverwriteWarning)
        tape = wp.Tape(snapshot=True)
        first, loss = _resets_recorded(tape)
        tape.backward(loss)
    np.testing.assert_allclose(first.grad.numpy(), per_substep, rtol=1e-12)
