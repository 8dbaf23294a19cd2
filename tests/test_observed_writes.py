"""Observation where the source cannot tell: a launch the analysis says only *may* write an array (a use it cannot
follow) gets no restore from the snapshot Tape when it changed no byte of the array, and does not excuse a later
change of the array from the mutation refusal. So a guess never changes a gradient: the change after record is
refused by name, as for a kernel the analysis follows (and, declared with ``read_at_backward``, the gradient is the
plain Tape's bitwise).

Observed bytes decide nothing else. Negative twins: an in-place clamp that changes no byte is still an overwrite,
and a write-then-restore within one launch is still a read between writes, on every Tape (the read twin marks
writes whatever the value stored).
"""

import warnings

import numpy as np
import pytest

import warp_zerostore as wp
from warp_zerostore import access
from warp_zerostore.tape import intent
from warp_zerostore.tape.observe import device_unchanged, unchanged
from warp_zerostore.tape.tape import OVERWRITE, REPLAY, OverwriteError


@wp.kernel
def square_through_a_local(a: wp.array(dtype=float), y: wp.array(dtype=float)):
    i = wp.tid()
    b = a  # the analysis cannot follow the local: `a` may be written
    y[i] = b[i] * b[i]


@wp.kernel
def square_directly(a: wp.array(dtype=float), y: wp.array(dtype=float)):
    i = wp.tid()
    y[i] = a[i] * a[i]


@wp.kernel
def total(y: wp.array(dtype=float), loss: wp.array(dtype=float)):
    wp.atomic_add(loss, 0, y[wp.tid()])


@wp.kernel
def set_from(v: wp.array(dtype=float), x: wp.array(dtype=float)):
    i = wp.tid()
    x[i] = v[i]


@wp.kernel
def clamp_in_place(x: wp.array(dtype=float)):
    i = wp.tid()
    x[i] = wp.min(x[i], 10.0)


@wp.kernel
def write_read_restore(y: wp.array(dtype=float), x: wp.array(dtype=float), out: wp.array(dtype=float)):
    i = wp.tid()
    t = y[i]
    y[i] = 2.0 * t
    out[i] = y[i] * x[i]  # read between the two writes of y[i]
    y[i] = t  # y is as it was: no byte changed


def test_the_analysis_says_only_may_write_for_the_local():
    used = access.argument_access(square_through_a_local)["a"]
    assert used.writes and not used.surely_writes


@pytest.mark.parametrize("compare", [unchanged, device_unchanged], ids=["host", "compare kernel"])
@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.int8])
def test_unchanged_compares_every_byte(dtype, compare, device):
    for n in (3, 2049):  # a short array (byte strings) and a long one (words)
        a = wp.array(np.arange(n).astype(dtype), device=device)
        saved = wp.clone(a)
        assert compare(saved, a)
        values = a.numpy()
        values[-1] += 1
        a.assign(values)
        assert not compare(saved, a)
    strided = wp.array(np.arange(12, dtype=np.float32), device=device)[::3]
    saved = wp.clone(strided)
    assert compare(saved, strided)
    strided.fill_(7.0)
    assert not compare(saved, strided)


def changed_after_record(kernel, tape, declare: bool = False):
    """y = a^2 recorded at a = [1, 2, 3]; ``a`` assigned [4, 5, 6] outside the Tape; loss = sum y recorded after.
    Returns a.grad (or the OverwriteError)."""
    a = wp.array([1.0, 2.0, 3.0], dtype=float, requires_grad=True)
    y = wp.zeros(3, dtype=float, requires_grad=True)
    loss = wp.zeros(1, dtype=float, requires_grad=True)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", wp.OverwriteWarning)
        with tape:
            wp.launch(kernel, dim=3, inputs=[a, y])
        a.assign([4.0, 5.0, 6.0])
        if declare:
            wp.read_at_backward(a)
        with tape:
            wp.launch(total, dim=3, inputs=[y, loss])
        try:
            tape.backward(loss)
        except OverwriteError as error:
            return error
        finally:
            intent._DECLARED.clear()
    return a.grad.numpy().copy()


@pytest.mark.parametrize("kernel", [square_through_a_local, square_directly])
def test_a_launch_that_may_write_but_changed_no_byte_gets_no_restore_and_the_change_is_refused(kernel):
    # before: the guess "may write" saved `a`, restored it at backward() (d/da at the old values, 2, 4, 6) and
    # excused the change; now the launch that changed nothing is a reader like any other
    found = changed_after_record(kernel, wp.Tape(snapshot=True))
    assert isinstance(found, OverwriteError) and "mutated after record" in str(found) and "'a'" in str(found)


@pytest.mark.parametrize("kernel", [square_through_a_local, square_directly])
def test_declared_the_snapshot_tape_gives_the_plain_gradient_bitwise(kernel):
    plain = changed_after_record(kernel, wp.Tape())
    assert np.array_equal(plain, [8.0, 10.0, 12.0])
    assert np.array_equal(changed_after_record(kernel, wp.Tape(snapshot=True), declare=True), plain)


def test_a_launch_that_may_write_and_does_is_still_restored():
    @wp.kernel
    def double_through_a_local(a: wp.array(dtype=float)):
        i = wp.tid()
        b = a
        b[i] = 2.0 * b[i]

    a = wp.array([1.0, 2.0], dtype=float, requires_grad=True)
    y = wp.zeros(2, dtype=float, requires_grad=True)
    loss = wp.zeros(1, dtype=float, requires_grad=True)
    tape = wp.Tape(snapshot=True)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", wp.OverwriteWarning)
        with tape:
            wp.launch(square_directly, dim=2, inputs=[a, y])
            wp.launch(double_through_a_local, dim=2, inputs=[a])
            wp.launch(total, dim=2, inputs=[y, loss])
        tape.backward(loss)
    assert a.grad.numpy().tolist()[0] != 0.0 and tape.snapshot_bytes > 0


# -- negative twins: observed bytes decide no overwrite and no read between writes


@pytest.mark.parametrize("options", [{"check": "warn"}, {"check": "warn", "snapshot": True}])
def test_an_in_place_clamp_that_changes_no_byte_is_still_an_overwrite(options):
    v = wp.array([1.0, 2.0, 3.0], dtype=float, requires_grad=True)
    x = wp.zeros(3, dtype=float, requires_grad=True)
    tape = wp.Tape(**options)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", wp.OverwriteWarning)
        with tape:
            wp.launch(set_from, dim=3, inputs=[v, x])
            wp.launch(clamp_in_place, dim=3, inputs=[x])  # every value is below 10: no byte changes
    assert x.numpy().tolist() == [1.0, 2.0, 3.0]
    overwrites = [h for h in tape.hazards if h.kind == OVERWRITE]
    assert [(h.earlier.kernel, h.writer.kernel, h.elements) for h in overwrites] == [("set_from", "clamp_in_place", 3)]


@pytest.mark.parametrize("options", [{"check": "warn"}, {"snapshot": True}, {"check": "warn", "snapshot": True}])
def test_a_write_then_restore_in_one_launch_is_still_a_read_between_writes(options):
    y = wp.array([1.0, 2.0], dtype=float, requires_grad=True)
    x = wp.array([3.0, 4.0], dtype=float, requires_grad=True)
    out = wp.zeros(2, dtype=float, requires_grad=True)
    tape = wp.Tape(**options)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", wp.OverwriteWarning)
        with tape:
            wp.launch(write_read_restore, dim=2, inputs=[y, x, out])
    assert y.numpy().tolist() == [1.0, 2.0]
    rereads = [h for h in tape.hazards if h.kind == REPLAY and h.cause == "reread"]
    assert [(h.writer.argument, h.elements, h.real) for h in rereads] == [("y", 2, True)]
