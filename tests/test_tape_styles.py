"""Tape safety on kernels written in other simulators' styles: check and snapshot
modes never change the forward; writes through row views, helpers and atomics are seen; one array passed under
two labels is one array; reports are element-precise on the read side and skip kernels Warp never replays;
written elements do not depend on the values stored. Each detection has a negative twin."""

import warnings

import numpy as np
import pytest
from helpers import kernels_tape_styles as k

import warp_zerostore as wp
from warp_zerostore.access import ArgumentAccess, argument_access
from warp_zerostore.tape import read_twin
from warp_zerostore.tape import tape as tape_module

f64 = wp.float64


def arr(values, device, requires_grad=True):
    return wp.array(np.asarray(values, dtype=np.float64), dtype=f64, device=device, requires_grad=requires_grad)


def quiet_tape(**options):
    return wp.Tape(**options)


def hazards_of(tape, kind=None):
    return [h for h in tape.hazards if h.real and (kind is None or h.kind == kind)]


# -- 1. check mode never changes the forward (a store through a row view ran twice)


@pytest.mark.parametrize("options", [{}, {"check": "warn"}, {"snapshot": True}, {"check": "warn", "snapshot": True}])
@pytest.mark.parametrize("kernel", [k.add_row, k.add_row_direct], ids=["row view", "direct (twin)"])
def test_an_in_place_row_view_store_runs_once_under_every_tape(kernel, options, device):
    x = wp.zeros((1, 2), dtype=f64, device=device, requires_grad=True)
    v = wp.ones((1, 2), dtype=f64, device=device, requires_grad=True)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", wp.OverwriteWarning)
        with wp.Tape(**options):
            wp.launch(kernel, dim=(1, 2), inputs=[x, v], outputs=[x], device=device)
    assert x.numpy().tolist() == [[1.0, 1.0]]  # [[2, 2]] under check="warn" before the fix


def test_the_twin_never_touches_real_arrays_even_when_the_analysis_is_wrong(device, monkeypatch):
    # An analysis that calls every argument read-only (the row-view miss, in general): the twin still runs on
    # copies, so the forward is unchanged.
    def read_only(kernel):
        return {label: ArgumentAccess(reads=True) for label in ("x_in", "v", "x_out")}

    monkeypatch.setattr(read_twin, "argument_access", read_only)
    monkeypatch.setattr(tape_module, "argument_access", read_only)
    read_twin.forget(k.add_row_direct)  # its twin built from the analysis above (and again after the test)
    x = wp.zeros((1, 2), dtype=f64, device=device, requires_grad=True)
    v = wp.ones((1, 2), dtype=f64, device=device, requires_grad=True)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", wp.OverwriteWarning)
            with wp.Tape(check="warn"):
                wp.launch(k.add_row_direct, dim=(1, 2), inputs=[x, v], outputs=[x], device=device)
    finally:
        read_twin.forget(k.add_row_direct)
    assert x.numpy().tolist() == [[1.0, 1.0]]


# -- 2. the source analysis sees every write


@pytest.mark.parametrize(
    "kernel, label, expected",
    [
        (k.add_row, "x_out", "stores"),
        (k.accumulate_row, "x", "accumulates"),
        (k.atomic_into_row, "x", "writes"),
        (k.store_row_through_helper, "x", "stores"),
    ],
)
def test_writes_through_row_views_helpers_and_atomics_are_seen(kernel, label, expected):
    assert getattr(argument_access(kernel)[label], expected)


def test_reading_through_a_row_view_is_not_a_write():
    access = argument_access(k.read_row)
    assert access["x"].reads and not access["x"].writes  # negative twin
    assert argument_access(k.add_row)["x_in"] == ArgumentAccess(reads=True)


def test_a_row_view_store_after_a_read_is_a_stale_read(device):
    x = wp.zeros((1, 2), dtype=f64, device=device, requires_grad=True)
    v = wp.ones((1, 2), dtype=f64, device=device, requires_grad=True)
    out = wp.zeros((1, 2), dtype=f64, device=device, requires_grad=True)
    tape = wp.Tape(check="warn")
    with pytest.warns(wp.OverwriteWarning, match="stale read: kernel 'add_row'.*'x_out'.*read_row"):
        with tape:
            wp.launch(k.read_row, dim=(1, 2), inputs=[x, out], device=device)
            wp.launch(k.add_row, dim=(1, 2), inputs=[x, v], outputs=[x], device=device)
    assert x.numpy().tolist() == [[1.0, 1.0]]


# -- 3. one array under two labels of one launch


def squares(tape, device, same: bool):
    """y = x*x (reads x = 3), then twice x_out = x_in * x_in with x_in = x and x_out = x (same) or new arrays;
    loss = x^4 + x^2."""
    x = arr([3.0], device)
    y = wp.zeros(1, dtype=f64, device=device, requires_grad=True)
    z = x if same else wp.zeros(1, dtype=f64, device=device, requires_grad=True)
    w = x if same else wp.zeros(1, dtype=f64, device=device, requires_grad=True)
    loss = wp.zeros(1, dtype=f64, device=device, requires_grad=True)
    with tape:
        wp.launch(k.square_into, dim=1, inputs=[x, y], device=device)
        wp.launch(k.square_inout, dim=1, inputs=[x], outputs=[z], device=device)
        wp.launch(k.square_inout, dim=1, inputs=[z], outputs=[w], device=device)
        wp.launch(k.sum_into, dim=1, inputs=[w, y, loss], device=device)
    return x, z, loss


def test_one_array_as_input_and_output_is_a_stale_read_named_with_both_labels(device):
    tape = wp.Tape(check="warn")
    with pytest.warns(wp.OverwriteWarning) as caught:
        squares(tape, device, same=True)
    messages = [str(w.message) for w in caught]
    assert any(
        "stale read: kernel 'square_inout'" in m and "arguments 'x_in' and 'x_out' (one array)" in m for m in messages
    ), messages
    # Stale reads of square_into's read and of the launch's own read of x_in; not "mutated after record".
    assert {h.kind for h in hazards_of(tape)} == {"stale read"}
    assert {h.reader.kernel for h in hazards_of(tape)} == {"square_into", "square_inout"}
    tape.backward()  # no mutation found there either
    assert {h.kind for h in hazards_of(tape)} == {"stale read"}


def test_two_arrays_as_input_and_output_are_not_a_hazard(device):
    tape = wp.Tape(check="error")
    squares(tape, device, same=False)  # negative twin
    assert hazards_of(tape) == []


def test_snapshots_cover_an_array_passed_as_input_and_output(device):
    tape = wp.Tape(snapshot=True)
    x, _, loss = squares(tape, device, same=True)
    # 0 bytes before the fix; and 8 for the loss launch, which reads x after its last writer
    assert x.numpy()[0] == 81.0 and tape.snapshot_bytes == 16 + 8
    tape.backward(loss)
    exact = 2 * 3.0 + 4 * 3.0**3  # d(x^2 + x^4)/dx at 3, in float64
    assert x.grad.numpy()[0] == exact == 114.0  # 36 before the fix
    assert x.numpy()[0] == 81.0


# -- 4. element-precise reports on the read side; none for readers Warp never replays


def guarded_reader_then_write(device, flag: int, dim: int):
    x = arr([1.0, 2.0], device)
    y = wp.zeros(2, dtype=f64, device=device, requires_grad=True)
    tape = wp.Tape(check="warn")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", wp.OverwriteWarning)
        with tape:
            wp.launch(k.guarded_copy, dim=dim, inputs=[flag, x, y], device=device)
            wp.launch(k.fill, dim=2, inputs=[x, f64(5.0)], device=device)
        x.assign(np.array([7.0, 8.0]))  # outside the Tape: a mutation if anything read x
        tape.backward(grads={y: wp.ones(2, dtype=f64, device=device)})
    return sorted({h.kind for h in hazards_of(tape)})


@pytest.mark.parametrize("flag, dim", [(0, 2), (1, 0)], ids=["guarded branch", "zero-size launch"])
def test_a_launch_that_read_no_element_is_not_reported(flag, dim, device):
    assert guarded_reader_then_write(device, flag, dim) == []


def test_a_launch_that_read_is_reported_stale_and_mutated(device):
    assert guarded_reader_then_write(device, 1, 2) == ["mutated after record", "stale read"]  # negative twin


@pytest.mark.parametrize("changed, reported", [(0, True), (3, False)])
def test_mutation_reports_are_per_element_read(changed, reported, device):
    x = arr([1.0, 2.0, 3.0, 4.0], device)
    y = wp.zeros(4, dtype=f64, device=device, requires_grad=True)
    tape = wp.Tape(check="warn")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", wp.OverwriteWarning)
        with tape:
            wp.launch(k.square_into, dim=2, inputs=[x, y], device=device)  # reads x[0], x[1]
        values = x.numpy()
        values[changed] = 9.0
        x.assign(values)
        tape.backward(grads={y: wp.ones(4, dtype=f64, device=device)})
    assert bool(hazards_of(tape, "mutated after record")) is reported


@pytest.mark.parametrize("kernel, reported", [(k.square_into_no_backward, False), (k.square_into, True)])
def test_a_reader_without_backward_is_never_stale(kernel, reported, device):
    x = arr([1.0, 2.0], device)
    y = wp.zeros(2, dtype=f64, device=device, requires_grad=True)
    tape = wp.Tape(check="warn")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", wp.OverwriteWarning)
        with tape:
            wp.launch(kernel, dim=2, inputs=[x, y], device=device)
            wp.launch(k.fill, dim=2, inputs=[x, f64(5.0)], device=device)
    assert bool(hazards_of(tape, "stale read")) is reported


# -- which elements a launch writes does not depend on the values


@pytest.mark.parametrize(
    "writer, args, reported",
    [
        (k.fill, [0.0], True),  # zeros over zeros: the values do not change, the program is still wrong
        (k.fill, [1.0], True),
        (k.add_zero, [0.0], True),  # an atomic add of zero
        (k.fill_from, [2, 0.0], False),  # negative twin: zeros over zeros the reader did not read
    ],
)
def test_a_store_of_the_value_already_there_is_a_write(writer, args, reported, device):
    x = wp.zeros(4, dtype=f64, device=device, requires_grad=True)
    y = wp.zeros(4, dtype=f64, device=device, requires_grad=True)
    tape = wp.Tape(check="warn")
    values = [a if isinstance(a, int) else f64(a) for a in args]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", wp.OverwriteWarning)
        with tape:
            wp.launch(k.square_into, dim=2, inputs=[x, y], device=device)  # reads x[0], x[1]
            wp.launch(writer, dim=2, inputs=[x, *values], device=device)
    stale = hazards_of(tape, "stale read")
    assert bool(stale) is reported, [h.message() for h in tape.hazards]
    if reported:
        assert stale[0].elements == 2


def test_a_store_of_the_value_already_there_is_an_overwrite(device):
    x = wp.zeros(4, dtype=f64, device=device, requires_grad=True)
    tape = wp.Tape(check="warn")
    with tape:
        wp.launch(k.fill, dim=4, inputs=[x, f64(0.0)], device=device)
        wp.launch(k.fill, dim=4, inputs=[x, f64(0.0)], device=device)
    (hazard,) = tape.hazards
    assert (hazard.kind, hazard.elements, hazard.real) == ("overwrite", 4, False)


@pytest.fixture
def runners_made_anew():
    """The twins' runners of ``read_row`` and ``add_row`` made anew in the test, and again after it."""
    for kernel in (k.read_row, k.add_row):
        read_twin.forget(kernel)
    yield
    for kernel in (k.read_row, k.add_row):
        read_twin.forget(kernel)


def test_arrays_too_large_to_pool_get_a_copy_per_launch(device, monkeypatch, runners_made_anew):
    monkeypatch.setattr(read_twin, "POOLED_BYTES", 0)
    x = wp.zeros((1, 2), dtype=f64, device=device, requires_grad=True)
    v = wp.ones((1, 2), dtype=f64, device=device, requires_grad=True)
    out = wp.zeros((1, 2), dtype=f64, device=device, requires_grad=True)
    tape = wp.Tape(check="warn")
    with pytest.warns(wp.OverwriteWarning, match="stale read: kernel 'add_row'.*read_row"):
        with tape:
            for _ in range(2):
                wp.launch(k.read_row, dim=(1, 2), inputs=[x, out], device=device)
                wp.launch(k.add_row, dim=(1, 2), inputs=[x, v], outputs=[x], device=device)
    assert x.numpy().tolist() == [[2.0, 2.0]] and out.numpy().tolist() == [[1.0, 1.0]]
