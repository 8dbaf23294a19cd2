"""Tape safety: snapshots restore what a launch read, reads followed into @wp.func helpers, a thread's
read of its own write is not stale, every array annotation spelling, check bookkeeping linear in launches,
graph capture refused by name. Each checker test has a twin that must not be flagged."""

import contextlib
import os
import re
import sys
import warnings

import numpy as np
import pytest
import warp
from helpers import kernels_tape_reads as k

import warp_zerostore as wp
from warp_zerostore import _compat, access
from warp_zerostore._memory import byte_span
from warp_zerostore.tape import memory as tape_memory
from warp_zerostore.tape import read_twin
from warp_zerostore.tape import tape as tape_module

try:  # the subscript spellings exist from Warp 1.17
    from helpers import kernels_tape_annotations as ka
except Exception:  # noqa: BLE001
    ka = None


def farr(values, device):
    return wp.array(np.asarray(values, dtype=np.float32), dtype=float, device=device, requires_grad=True)


def own_write_gradient(device, kernel, **tape_options):
    """x.grad of loss = y[1] after ``kernel`` (y holds [100, 100] before the launch)."""
    x, y = farr([3.0, 2.0], device), farr([100.0, 100.0], device)
    loss = wp.zeros(1, dtype=float, device=device, requires_grad=True)
    tape = wp.Tape(**tape_options)
    with tape:
        wp.launch(kernel, dim=1, inputs=[x, y], device=device)
        wp.launch(k.loss_of, dim=1, inputs=[y, 1, loss], device=device)
    tape.backward(loss)
    return x.grad.numpy().tolist(), tape


# -- 1. snapshots restore, per element, the value the launch read


def test_snapshot_restores_the_written_value_a_thread_read_back(device):
    stock, _ = own_write_gradient(device, k.read_back_own_write)
    snap, tape = own_write_gradient(device, k.read_back_own_write, snapshot=True)
    assert stock == [12.0, 9.0]  # d(x0^2 x1)/dx = [2 x0 x1, x0^2] at (3, 2)
    assert snap == [12.0, 9.0]
    assert tape.hazards == []


def test_snapshot_of_a_read_before_and_after_write_is_named(device):
    with pytest.warns(
        wp.OverwriteWarning, match="read before and after write: in kernel 'read_before_and_after_write'.*argument 'y'"
    ):
        own_write_gradient(device, k.read_before_and_after_write, snapshot=True)
    with pytest.raises(wp.OverwriteError, match="read before and after write.*argument 'y'"):
        own_write_gradient(device, k.read_before_and_after_write, snapshot=True, check="error")


def test_an_in_place_square_is_not_a_read_before_and_after_write(device):
    x = farr([3.0], device)
    tape = wp.Tape(snapshot=True, check="warn")
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        with tape:
            wp.launch(k.square_in_place, dim=1, inputs=[x], device=device)
    assert [h.kind for h in tape.hazards] == ["stale read"]
    assert not any("read before and after" in str(w.message) for w in caught)


# -- 2. a thread reading back its own write; reads through @wp.func helpers


def test_a_read_of_ones_own_write_is_not_a_stale_read(device):
    _, tape = own_write_gradient(device, k.read_back_own_write, check="error")
    assert tape.hazards == []
    parent = wp.array([-1, 0, 1, 2], dtype=int, device=device)
    local, pose = farr([1.0, 2.0, 3.0, 4.0], device), farr([0.0] * 4, device)
    tape = wp.Tape(check="error")
    with tape:
        wp.launch(k.chain_forward, dim=1, inputs=[parent, local, pose], device=device)
    assert tape.hazards == [] and pose.numpy().tolist() == [1.0, 3.0, 6.0, 10.0]


def test_a_read_of_ones_own_write_is_stale_for_a_later_writer(device):
    x, y = farr([3.0, 2.0], device), farr([100.0, 100.0], device)
    tape = wp.Tape(check="warn")
    with warnings.catch_warnings(record=True) as caught:  # Warp <= 1.12 also warns of the overwrite of y[0]
        warnings.simplefilter("always", wp.OverwriteWarning)
        with tape:
            wp.launch(k.read_back_own_write, dim=1, inputs=[x, y], device=device)
            wp.launch(k.fill, dim=1, inputs=[y, 0, 7.0], device=device)
    stale = [str(w.message) for w in caught if "stale read" in str(w.message)]
    assert len(stale) == 1 and re.search("kernel 'fill'.*changes 1 element.*read_back_own_write", stale[0])


def test_a_read_before_own_write_is_still_a_stale_read(device):
    x = farr([2.0], device)
    with pytest.warns(wp.OverwriteWarning, match="the same launch reads as argument 'x'"):
        with wp.Tape(check="warn"):
            wp.launch(k.square_in_place, dim=1, inputs=[x], device=device)


def test_reads_through_helpers_are_followed_element_by_element(device):
    found = access.argument_access(k.read_first_through_helpers)
    assert found["a"].reads and not found["a"].writes
    assert found["b"].stores and not found["b"].reads  # stored inside store_at, never read
    assert read_twin.marked_reads(k.read_first_through_helpers) == ["a"]
    a, b = farr([1.0, 2.0, 3.0, 4.0], device), farr([0.0] * 4, device)
    tape = wp.Tape(check="error")
    with tape:
        wp.launch(k.read_first_through_helpers, dim=4, inputs=[a, b], device=device)  # reads a[0] only
        wp.launch(k.fill, dim=3, inputs=[a, 1, 5.0], device=device)  # a[1:4]: not read
    assert tape.hazards == [] and b.numpy().tolist() == [2.0] * 4
    with pytest.raises(
        wp.OverwriteError, match="stale read: kernel 'fill'.*changes 1 element.*read_first_through_helpers"
    ):
        with tape:
            wp.launch(k.fill, dim=1, inputs=[a, 0, 5.0], device=device)


def test_a_row_bound_once_is_read_element_by_element(device):
    assert read_twin.marked_reads(k.read_through_a_row) == ["a"]
    a, b = wp.zeros((2, 2), dtype=float, device=device, requires_grad=True), farr([0.0, 0.0], device)
    tape = wp.Tape(check="error")
    with tape:
        wp.launch(k.read_through_a_row, dim=2, inputs=[a, b], device=device)  # reads a[0, 0] only
        wp.launch(k.fill_2d, dim=2, inputs=[a, 1, 5.0], device=device)  # row 1: not read
    assert tape.hazards == []
    with pytest.raises(wp.OverwriteError, match="stale read: kernel 'fill_2d'.*read_through_a_row"):
        with tape:
            wp.launch(k.fill_2d, dim=2, inputs=[a, 0, 5.0], device=device)  # row 0: read


def test_an_unmarkable_read_still_counts_the_whole_array(device):
    assert read_twin.marked_reads(k.read_a_row) == []
    # (`a` with a gradient: a stale read whose values reach only arrays without one would not be real)
    a, b = wp.zeros((2, 2), dtype=float, device=device, requires_grad=True), farr([0.0, 0.0], device)
    with pytest.warns(wp.OverwriteWarning, match="stale read: kernel 'fill_2d'.*read_a_row"):
        with wp.Tape(check="warn"):
            wp.launch(k.read_a_row, dim=2, inputs=[a, b], device=device)  # reads row 0 only
            wp.launch(k.fill_2d, dim=2, inputs=[a, 1, 5.0], device=device)  # row 1: reported anyway


# -- 3. every array annotation spelling gets the element-precise read twin


SPELLINGS = ["first_call", "first_1d"] + (["first_subscript"] if ka is not None else [])


@pytest.mark.parametrize("name", SPELLINGS)
def test_every_annotation_spelling_reads_element_by_element(name, device):
    kernel = getattr(k, name, None) or getattr(ka, name)
    assert read_twin.marked_reads(kernel) == ["x"]
    x, out = farr([1.0, 2.0], device), farr([0.0], device)
    tape = wp.Tape(check="error")
    with tape:
        wp.launch(kernel, dim=1, inputs=[x, out], device=device)  # reads x[0]
        wp.launch(k.fill, dim=1, inputs=[x, 1, 5.0], device=device)  # writes x[1]
    assert tape.hazards == []
    with pytest.raises(wp.OverwriteError, match=f"stale read: kernel 'fill'.*{name}"):
        with tape:
            wp.launch(k.fill, dim=1, inputs=[x, 0, 5.0], device=device)  # writes x[0]


@pytest.mark.skipif(ka is None, reason="wp.array2d[float] annotations need warp-lang >= 1.17")
def test_two_dimensional_subscript_annotation_reads_element_by_element(device):
    for kernel in (k.first_2d, ka.first_2d_subscript):
        assert read_twin.marked_reads(kernel) == ["x"]
        x, out = wp.zeros((2, 2), dtype=float, device=device), farr([0.0], device)
        tape = wp.Tape(check="error")
        with tape:
            wp.launch(kernel, dim=1, inputs=[x, out], device=device)
            wp.launch(k.fill_2d, dim=2, inputs=[x, 1, 5.0], device=device)  # row 1: not read
        assert tape.hazards == []


# -- 4. check and snapshot bookkeeping per launch depends on the launch's arrays, not on the history


@pytest.mark.parametrize("options", [{"check": "warn"}, {"snapshot": True}], ids=["check", "snapshot"])
@pytest.mark.parametrize("views", [False, True], ids=["new arrays", "row views of one buffer"])
def test_bookkeeping_per_launch_does_not_grow_with_history(device, options, views):
    # The work of a launch, counted as calls of this package's functions (whatever they are), is the same at the
    # end of a 120-step rollout as at its start; with row views, every step's arrays lie in the region of one
    # buffer a launch read whole (a write finds the views it changes by address, not by a look at each)
    package = os.path.dirname(os.path.dirname(os.path.abspath(wp.__file__)))
    package = os.path.join(package, "warp_zerostore") + os.sep
    calls = [0]

    def count(frame, event, arg):
        if event == "call" and frame.f_code.co_filename.startswith(package):
            calls[0] += 1

    buffer = wp.zeros((121, 8), dtype=float, device=device, requires_grad=True)
    out = farr([0.0] * 8, device)
    per_launch = []
    tape = wp.Tape(**options)
    with tape, warnings.catch_warnings():
        warnings.simplefilter("ignore", wp.OverwriteWarning)
        if views:
            wp.launch(k.first_2d, dim=1, inputs=[buffer, out], device=device)  # reads the buffer whole
        for step in range(120):
            y = buffer[step + 1] if views else farr([0.0] * 8, device)  # a new array per step: the history grows
            before = calls[0]
            sys.setprofile(count)
            try:
                wp.launch(k.square_in_place, dim=8, inputs=[y], device=device)
                wp.launch(k.fill, dim=8, inputs=[y, 0, float(step)], device=device)
            finally:
                sys.setprofile(None)
            per_launch.append(calls[0] - before)
    assert max(per_launch[-20:]) <= max(per_launch[:20])  # constant work per launch
    if not views:
        book = tape._books[str(buffer.device)]
        assert len(book.regions) >= 120  # one region per buffer, none merged with another


def test_views_of_one_buffer_share_one_region_and_stay_connected(device):
    x = farr([0.0] * 8, device)
    book = tape_memory.AddressBook()
    region_a, slots_a = book.region(x[0:4])
    region_b, slots_b = book.region(x[2:8:2])
    assert region_b.start == region_a.start and len(book.regions) == 1
    assert slots_a.tolist() == [0, 1, 2, 3] and slots_b.tolist() == [2, 4, 6]


def test_span_and_addresses_of_a_negative_stride_view():
    class View:  # what a reversed view looks like: pointer at the last element, negative stride
        ptr, shape, strides, size, dtype = 1000 + 3 * 4, (4,), (-4,), 4, wp.float32

    assert byte_span(View) == (1000, 1016)
    assert tape_memory.addresses(View).tolist() == [1012, 1008, 1004, 1000]


# -- 5. graph capture: refused by name, never silently unchecked


needs_cpu_capture = pytest.mark.skipif(
    tuple(int(p) for p in warp.__version__.split(".")[:2]) < (1, 19), reason="CPU graph capture needs warp-lang >= 1.19"
)


@needs_cpu_capture
def test_a_launch_under_cpu_capture_is_reported_not_checked():
    x = farr([2.0], "cpu")
    tape = wp.Tape(check="error")
    with pytest.raises(
        wp.OverwriteError, match="not checked \\(graph capture\\): kernel 'square_in_place'.*ScopedCapture"
    ):
        with tape:
            with wp.ScopedCapture(device="cpu"):
                wp.launch(k.square_in_place, dim=1, inputs=[x], device="cpu")
    with pytest.raises(wp.OverwriteError, match="not checked \\(graph capture\\)"):
        with wp.Tape(snapshot=True):
            with wp.ScopedCapture(device="cpu"):
                wp.launch(k.square_in_place, dim=1, inputs=[x], device="cpu")


def test_a_launch_without_capture_is_checked():
    x = farr([2.0], "cpu")
    tape = wp.Tape(check="warn")
    with pytest.warns(wp.OverwriteWarning, match="stale read"):
        with tape:
            wp.launch(k.square_in_place, dim=1, inputs=[x], device="cpu")
    assert [h.kind for h in tape.hazards] == ["stale read"]


# -- the hazard listener replaces the check command's private sink


def test_hazard_listener_hears_each_hazard_once_per_tape(device):
    heard = []
    x = farr([2.0], device)
    with tape_module.hazard_listener(heard.append), warnings.catch_warnings():
        warnings.simplefilter("ignore", wp.OverwriteWarning)
        for _ in range(2):
            with wp.Tape(check="warn"):
                for _ in range(2):
                    wp.launch(k.square_in_place, dim=1, inputs=[x], device=device)
    half = len(heard) // 2
    assert half and [h.key() for h in heard[:half]] == [h.key() for h in heard[half:]]  # each once per Tape
    assert len({h.key() for h in heard}) == half
    with wp.Tape(check="warn"), warnings.catch_warnings():
        warnings.simplefilter("ignore", wp.OverwriteWarning)
        wp.launch(k.square_in_place, dim=1, inputs=[x], device=device)
    assert len(heard) == 2 * half  # not listening any more


# -- which kernels may read their own store: the read twin runs for snapshots only there


@pytest.mark.parametrize(
    "kernel, argument, expected",
    [
        ("read_back_own_write", "y", True),  # y[1] = y[0] * x[1] after y[0] = ...
        ("store_in_a_loop_then_read", "y", True),  # a later iteration reads an earlier store
        ("store_then_read_through_a_helper", "y", True),  # the helper reads after the store
        ("chain_forward", "pose", True),
        ("square_in_place", "x", False),  # x[i] = x[i] * x[i]: the value is read before the store
        ("read_back_own_write", "x", False),  # never stored
    ],
)
def test_reads_after_store(kernel, argument, expected):
    from warp_zerostore.access import argument_access

    assert argument_access(getattr(k, kernel))[argument].reads_after_store is expected


def test_snapshots_run_the_read_twin_only_where_a_thread_may_read_its_own_store(device, monkeypatch):
    from warp_zerostore.tape import read_twin

    calls = []
    original = read_twin.element_reads
    monkeypatch.setattr(read_twin, "element_reads", lambda kernel, *a: calls.append(kernel.key) or original(kernel, *a))
    x = farr([3.0], device)
    with wp.Tape(snapshot=True) as tape:
        wp.launch(k.square_in_place_zeroing, dim=1, inputs=[x], device=device)
        wp.launch(k.square_in_place_zeroing, dim=1, inputs=[x], device=device)
    tape.backward(grads={x: wp.array([1.0], dtype=float, device=device)})
    assert x.grad.numpy().tolist() == [108.0] and calls == []  # pre-launch values are what it read
    assert own_write_gradient(device, k.read_back_own_write, snapshot=True)[0] == [12.0, 9.0]
    assert calls == ["read_back_own_write"]


# -- 5. a chain through @wp.func helpers whose stores stock Warp's backward re-runs into memory


def _ik(kernel, angles0: np.ndarray, tape=None, iterations: int = 3):
    """``iterations`` passes of a chain over one pose buffer (rewritten in place each pass), angles updated from
    the poses, the loss summed over the passes; returns (loss, first angles)."""
    angles = wp.array(angles0, dtype=wp.float64, requires_grad=True)
    first = angles
    pose = wp.zeros(len(angles0), dtype=wp.float64, requires_grad=True)
    loss = wp.zeros(1, dtype=wp.float64, requires_grad=True)
    with tape if tape is not None else contextlib.nullcontext():
        for _ in range(iterations):
            wp.launch(kernel, dim=1, inputs=[angles, pose])
            angles_next = wp.empty_like(angles)
            wp.launch(k.ik_step, dim=len(angles0), inputs=[angles, pose, loss, angles_next])
            angles = angles_next
    return loss, first


def _ik_central_differences(kernel, angles0: np.ndarray, eps: float = 1e-6) -> np.ndarray:
    out = np.zeros_like(angles0)
    for j in range(len(angles0)):
        up, down = angles0.copy(), angles0.copy()
        up[j] += eps
        down[j] -= eps
        out[j] = (_ik(kernel, up)[0].numpy()[0] - _ik(kernel, down)[0].numpy()[0]) / (2 * eps)
    return out


ANGLES = np.array([0.3, -0.2, 0.5, 0.1])


def test_a_helper_chain_read_only_after_its_writes_is_exact_and_not_warned():
    # each link is read (for its child) only after it was computed: Warp's re-run of the helper's store writes
    # what the forward wrote, which is what every read wants; the twin orders the reads, so no warning
    tape = wp.Tape(snapshot=True)
    with warnings.catch_warnings():
        warnings.simplefilter("error", wp.OverwriteWarning)
        loss, angles = _ik(k.chain_through_helpers, ANGLES, tape)
        tape.backward(loss)
    assert not [h for h in tape.hazards if h.kind == "read before and after write"]
    if not _compat.STOCK_STORE_ZEROES:
        return  # up to Warp 1.12 the unflagged chain's rewrite of the pose buffer leaks its gradient (an overwrite)
    reference = _ik_central_differences(k.chain_through_helpers, ANGLES)
    np.testing.assert_allclose(angles.grad.numpy(), reference, rtol=1e-6)
    plain = wp.Tape()  # the pose buffer is rewritten every pass: the plain Tape reads the last pass's poses
    loss, angles = _ik(k.chain_through_helpers, ANGLES, plain)
    plain.backward(loss)
    assert not np.allclose(angles.grad.numpy(), reference, rtol=1e-6)


def test_a_helper_chain_that_reads_a_link_before_rewriting_it_is_still_warned():  # negative twin
    tape = wp.Tape(snapshot=True)
    with pytest.warns(wp.OverwriteWarning, match="chain_rereading_through_helpers.*@wp.func helper stores"):
        loss, _ = _ik(k.chain_rereading_through_helpers, ANGLES, tape)
    assert [h.cause for h in tape.hazards if h.kind == "read before and after write"] == ["helper store"]
