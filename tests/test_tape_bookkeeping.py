"""What the checking Tape's per-launch shortcuts must not change: an earlier writer named by several
overwrites, a launch site passing other arrays from one launch to the next, a struct field set anew, and the
arrays only a kernel without backward reads (not copied: nothing replays them, so a change to them is no
mutation, while one a replayed launch read is still named at the next launch that passes it). Each with its
negative twin."""

import warnings

import pytest

import warp_zerostore as wp
from warp_zerostore.tape import tape as tape_module


@wp.kernel
def fill_all(x: wp.array(dtype=float)):
    x[wp.tid()] = 1.0


@wp.kernel
def fill_low(x: wp.array(dtype=float)):
    i = wp.tid()
    if i < 2:
        x[i] = 2.0


@wp.kernel
def fill_high(x: wp.array(dtype=float)):
    i = wp.tid()
    if i >= 2:
        x[i] = 3.0


@wp.kernel
def square_into(x: wp.array(dtype=float), out: wp.array(dtype=float)):
    i = wp.tid()
    out[i] = x[i] * x[i]


@wp.kernel(enable_backward=False)
def copy_forward_only(x: wp.array(dtype=float), out: wp.array(dtype=float)):
    i = wp.tid()
    out[i] = x[i]


@wp.struct
class Holder:
    q: wp.array(dtype=float)


@wp.kernel
def square_held(h: Holder, out: wp.array(dtype=float)):
    i = wp.tid()
    out[i] = h.q[i] * h.q[i]


def farr(n: int, value: float = 0.0):
    return wp.full(n, value, dtype=float, requires_grad=True)


def quiet_tape(**options):
    return wp.Tape(check="warn", **options)


def record(tape, body):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", wp.OverwriteWarning)
        with tape:
            body()
    return tape


def kinds(tape, kind):
    return [h for h in tape.hazards if h.kind == kind]


def test_one_earlier_writer_named_by_two_overwrites():
    # fill_all's launch is the earlier writer of both halves; the second overwrite names it again
    x = farr(4)
    tape = record(
        quiet_tape(),
        lambda: [wp.launch(k, dim=4, inputs=[x]) for k in (fill_all, fill_low, fill_high)],
    )
    found = sorted((h.writer.kernel, h.earlier.kernel, h.earlier.launch, h.elements) for h in kinds(tape, "overwrite"))
    assert found == [("fill_high", "fill_all", 0, 2), ("fill_low", "fill_all", 0, 2)]


def test_writes_to_elements_no_launch_wrote_before_are_no_overwrite():
    x = farr(4)
    tape = record(quiet_tape(), lambda: [wp.launch(k, dim=4, inputs=[x]) for k in (fill_low, fill_high)])
    assert kinds(tape, "overwrite") == []


@pytest.mark.parametrize("overwritten, reported", [("b", True), ("c", False)])
def test_a_launch_site_passing_another_array_is_followed_on_it(overwritten, reported):
    # one launch site reads a, then b; overwriting b is a stale read of the second launch, overwriting c (read by no
    # one) is nothing: the site's plan must follow the array each launch passes
    arrays = {name: farr(4, 2.0) for name in "abc"}
    out = farr(4)

    def body():
        for name in "ab":
            wp.launch(square_into, dim=4, inputs=[arrays[name], out])
        wp.launch(fill_all, dim=4, inputs=[arrays[overwritten]])

    tape = record(quiet_tape(), body)
    stale = [(h.reader.launch, h.writer.kernel) for h in kinds(tape, "stale read")]
    assert stale == ([(1, "fill_all")] if reported else [])


@pytest.mark.parametrize("overwrite_new", [True, False])
def test_a_struct_field_set_anew_is_followed(overwrite_new):
    h = Holder()
    first, second = farr(4, 2.0), farr(4, 2.0)
    out = farr(4)

    def body():
        h.q = first
        wp.launch(square_held, dim=4, inputs=[h, out])
        h.q = second
        wp.launch(square_held, dim=4, inputs=[h, out])
        wp.launch(fill_all, dim=4, inputs=[second if overwrite_new else farr(4)])

    tape = record(quiet_tape(), body)
    stale = [(h.reader.launch, h.reader.argument) for h in kinds(tape, "stale read")]
    assert stale == ([(1, "h.q")] if overwrite_new else [])


@pytest.mark.parametrize("replayed_reader", [True, False])
def test_a_change_to_an_array_only_forward_only_kernels_read_is_no_mutation(replayed_reader):
    # replayed_reader: square_into (replayed) reads x first, so a later change is a mutation, found at the next
    # launch passing x, here a kernel without backward; without it nothing ever replays x's values
    x, out, y = farr(4, 2.0), farr(4), farr(4)
    tape = quiet_tape()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", wp.OverwriteWarning)
        with tape:
            if replayed_reader:
                wp.launch(square_into, dim=4, inputs=[x, out])
            wp.launch(copy_forward_only, dim=4, inputs=[x, y])
        x.fill_(5.0)  # outside any recorded launch
        with tape:
            wp.launch(copy_forward_only, dim=4, inputs=[x, y])
    mutated = [(h.writer.kernel if h.writer else None, h.reader.kernel) for h in kinds(tape, tape_module.MUTATED)]
    assert mutated == ([("copy_forward_only", "square_into")] if replayed_reader else [])
