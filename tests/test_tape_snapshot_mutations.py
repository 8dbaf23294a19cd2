"""The snapshot Tape and values changed outside its recorded launches: right, or refused by name.

* A launch reads an array; the array is changed outside any recorded launch (an untaped launch; a ``fill_``
  inside the recording is a recorded write: tests/test_tape_host_writes.py); a later launch updates it in place. The later launch's restores put back what it read (the new values), so the first launch's
  backward would read them: refused at ``backward()`` (it was silently wrong), and the negative twin without the
  change is right.
* A scratch array updated in place, then read (a solver's force array), then changed after the Tape is left (the
  next rollout step): the reader's backward gets what it read, from a restore taken when the Tape is left.
Each against the closed form in float64.
"""

import numpy as np
import pytest
from helpers import kernels_tape_snapshot_mutations as k

import warp_zerostore as wp

X0, B0 = np.array([1.0, 2.0]), np.array([3.0, 4.0])


def _f64(values):
    return wp.array(np.asarray(values, dtype=np.float64), dtype=wp.float64, requires_grad=True)


def _read_change_update(change: bool):
    """b += a*a; (a set to 5 by an untaped launch); a += b. Loss: sum(b), so d/da = 2a at the recorded a."""
    a, b = _f64(X0), _f64(B0)
    tape = wp.Tape(snapshot=True)
    with tape:
        wp.launch(k.add_square, dim=2, inputs=[a, b])
        if change:
            wp.launch(k.set_to, dim=2, inputs=[a, wp.float64(5.0)], record_tape=False)
        wp.launch(k.add, dim=2, inputs=[b, a])
    return tape, a, b


def test_a_change_between_a_reader_and_a_restoring_writer_is_refused_by_name():
    tape, _, b = _read_change_update(change=True)
    with pytest.raises(wp.OverwriteError, match="mutated after record.*kernel 'add_square'.*argument 'x'"):
        tape.backward(grads={b: wp.ones(2, dtype=wp.float64)})


def test_without_the_change_the_same_program_is_right():
    tape, a, b = _read_change_update(change=False)
    tape.backward(grads={b: wp.ones(2, dtype=wp.float64)})
    np.testing.assert_allclose(a.grad.numpy(), 2 * X0 + 0.0, rtol=1e-12)  # a's own seed is 0: only b's path
    np.testing.assert_allclose(b.grad.numpy(), [1.0, 1.0], rtol=1e-12)


def _scratch_step(tape, x, f, out, inside=lambda: None):
    with tape:
        wp.launch(k.square_into, dim=2, inputs=[x, f])  # f = x^2 (written before any read: no snapshot)
        wp.launch(k.scale_in_place, dim=2, inputs=[f, wp.float64(3.0)])  # f *= 3 in place: snapshotted
        wp.launch(k.cube_into, dim=2, inputs=[f, out])  # out = f^3: reads f after its last writer
        inside()


@pytest.mark.parametrize("later", ["launch", "fill"])
def test_an_array_read_after_its_last_writer_and_changed_after_the_tape_is_restored(later):
    """out = (3 x^2)^3 = 27 x^6: d out/dx = 162 x^5. The scratch f is then overwritten outside this Tape (the next
    step of a rollout, or a fill_): the cube's backward must read f as it read it. Stock Warp on a plain Tape reads
    the new f; the snapshot Tape gave (silently) the gradient at the new f too before it restored it."""
    x, f, out = _f64(X0), _f64([0.0, 0.0]), _f64([0.0, 0.0])
    tape = wp.Tape(snapshot=True)
    _scratch_step(tape, x, f, out)
    if later == "launch":
        wp.launch(k.square_into, dim=2, inputs=[_f64([7.0, 7.0]), f])  # no Tape: the next step's
    else:
        f.fill_(7.0)
    tape.backward(grads={out: wp.ones(2, dtype=wp.float64)})
    np.testing.assert_allclose(out.numpy(), 27 * X0**6, rtol=1e-12)
    np.testing.assert_allclose(x.grad.numpy(), 162 * X0**5, rtol=1e-12)
    assert f.numpy().tolist() == [49.0, 49.0] if later == "launch" else [7.0, 7.0]  # backward put it back


def test_a_plain_tape_reads_the_changed_scratch_array():
    """The negative twin: stock Warp's Tape replays the cube against the new f."""
    x, f, out = _f64(X0), _f64([0.0, 0.0]), _f64([0.0, 0.0])
    tape = wp.Tape()
    _scratch_step(tape, x, f, out)
    f.fill_(7.0)
    tape.backward(grads={out: wp.ones(2, dtype=wp.float64)})
    assert not np.allclose(x.grad.numpy(), 162 * X0**5, rtol=1e-6)


def test_a_change_inside_the_recording_after_the_last_reader_is_refused():
    """f changed inside the ``with`` block after the cube read it, by an untaped launch: nothing holds what the
    cube read. (Changed after the Tape was left and entered again, it is served: the restore was taken when it was
    left; changed by ``fill_``, the write is recorded: tests/test_tape_host_writes.py.)"""
    x, f, out = _f64(X0), _f64([0.0, 0.0]), _f64([0.0, 0.0])
    tape = wp.Tape(snapshot=True)
    untaped = lambda: wp.launch(k.set_to, dim=2, inputs=[f, wp.float64(7.0)], record_tape=False)  # noqa: E731
    _scratch_step(tape, x, f, out, inside=untaped)
    with pytest.raises(wp.OverwriteError, match="mutated after record.*kernel 'cube_into'"):
        tape.backward(grads={out: wp.ones(2, dtype=wp.float64)})
