"""The Tape's bookkeeping of contents on the arrays' own device (`warp_zerostore.tape.contents`): fingerprints, copies
and change masks against a NumPy reference, for any dtype and layout; and recording on a snapshot or a checking
Tape reads no recorded array on the host (a guard that makes every host read of such an array raise, with its
negative twin: the guard fires, and the Tape still finds a mutation while it is on)."""

import contextlib
import warnings

import numpy as np
import pytest
from helpers import kernels_tape_device as k
from hypothesis import given
from hypothesis import strategies as st

import warp_zerostore as wp
from warp_zerostore import _compat
from warp_zerostore._memory import byte_span, overlap
from warp_zerostore.tape import contents

# -- contents against NumPy; every test runs both ways on the CPU: in place (NumPy on the CPU's memory) and through
# the device kernels (the path a GPU takes)


@pytest.fixture(params=["in place", "kernels"], autouse=True)
def path(request, monkeypatch):
    monkeypatch.setattr(contents, "IN_PLACE_ON_CPU", request.param == "in place")
    return request.param


DTYPES = {
    "float32": (wp.float32, np.float32, ()),
    "float64": (wp.float64, np.float64, ()),
    "float16": (wp.float16, np.float16, ()),
    "int8": (wp.int8, np.int8, ()),
    "vec3": (wp.vec3, np.float32, (3,)),
    "mat22d": (wp.mat22d, np.float64, (2, 2)),
}


@st.composite
def arrays_and_views(draw):
    """A base array of a drawn dtype and shape, a view of it (the whole, a strided slice or a column), the element
    positions of the view to change, and the values."""
    name = draw(st.sampled_from(sorted(DTYPES)))
    ndim = draw(st.integers(1, 2))
    shape = tuple(draw(st.lists(st.integers(1, 6), min_size=ndim, max_size=ndim)))
    kind = draw(st.sampled_from(["whole", "strided", "column"] if ndim == 2 else ["whole", "strided"]))
    seed = draw(st.integers(0, 2**31 - 1))
    return name, shape, kind, seed


def _make(name, shape, kind, seed, device):
    dtype, np_dtype, inner = DTYPES[name]
    rng = np.random.default_rng(seed)
    values = (rng.standard_normal(shape + inner) * 50).astype(np_dtype)
    base = wp.array(values, dtype=dtype, device=device)
    if kind == "whole":
        view = base
    elif kind == "strided":
        view = base[::2]
    else:
        view = base[:, shape[1] // 2]
    return base, values, view, rng


def _view_of(values: np.ndarray, shape, kind):
    if kind == "whole":
        return values
    if kind == "strided":
        return values[::2]
    return values[:, shape[1] // 2]


@given(arrays_and_views())
def test_change_masks_and_fingerprints_follow_the_bytes_of_each_element(device, drawn):
    name, shape, kind, seed = drawn
    base, values, view, rng = _make(name, shape, kind, seed, device)
    ledger = contents.Ledger()
    known = contents.Known(view)
    first, again = ledger.take(view), ledger.take(view)
    (batched,) = ledger.take_many([view])  # the batch kernel (at backward()) agrees with the single one
    assert not contents.changed(view, known).any()
    changed = values.copy()
    inner = len(DTYPES[name][2])
    elements = _view_of(changed, shape, kind)  # a NumPy view of the same elements as `view`
    picks = rng.random(view.shape) < 0.4
    elements[...] = np.where(picks.reshape(view.shape + (1,) * inner), elements + 1, elements)  # through the view
    base.assign(changed)
    expect = np.any(
        (_view_of(values, shape, kind) != _view_of(changed, shape, kind)).reshape(view.shape + (-1,)), axis=-1
    )
    after = ledger.take(view)
    got = known.changed(view, update=True)
    np.testing.assert_array_equal(got, expect)
    assert not known.changed(view).any()  # the copy took the content
    values_ = ledger.read()
    assert contents.value(values_, first) == contents.value(values_, again) == contents.value(values_, batched)
    assert (contents.value(values_, after) != contents.value(values_, first)) == bool(expect.any())


def test_a_change_outside_a_view_is_not_one_of_its_changes(device):
    base = wp.array(np.arange(12, dtype=np.float32).reshape(3, 4), dtype=float, device=device)
    column = base[:, 1]
    known, ledger = contents.Known(column), contents.Ledger()
    before = ledger.take(column)
    values = base.numpy()
    values[:, 0] = -1.0  # another column
    base.assign(values)
    assert not known.changed(column).any()
    values[2, 1] = -1.0  # this one
    base.assign(values)
    after = ledger.take(column)
    assert known.changed(column).tolist() == [False, False, True]
    read = ledger.read()
    assert contents.value(read, before) != contents.value(read, after)


def test_blend_takes_the_other_copy_where_the_mask_is_false(device):
    dest = wp.array(np.arange(6, dtype=np.float64), dtype=wp.float64, device=device)
    src = wp.array(-np.arange(6, dtype=np.float64), dtype=wp.float64, device=device)
    contents.blend(dest, src, np.array([True, False, True, False, True, False]))
    assert dest.numpy().tolist() == [0.0, -1.0, 2.0, -3.0, 4.0, -5.0]


# -- no host transfer of a recorded array


@contextlib.contextmanager
def no_host_reads(guarded: list):
    """Within the block, reading an array that shares memory with one in ``guarded`` on the host raises (NumPy's
    view or copy: ``array.numpy()``, and the package's one host reader, ``_compat.host_view``); ``guarded`` may
    grow inside the block."""

    def check(arr):
        span = byte_span(arr)
        if any(overlap(span, byte_span(g)) for g in guarded):
            raise AssertionError(f"host read of a recorded array (shape {arr.shape})")

    numpy, host_view = wp.array.numpy, _compat.host_view

    def guarded_numpy(self, *args, **kwargs):
        check(self)
        return numpy(self, *args, **kwargs)

    def guarded_host_view(arr):
        check(arr)
        return host_view(arr)

    wp.array.numpy, _compat.host_view = guarded_numpy, guarded_host_view
    try:
        yield
    finally:
        wp.array.numpy, _compat.host_view = numpy, host_view


def test_the_guard_fires_on_a_recorded_array_and_its_views_only(device):  # the guard's own negative twin
    x = wp.zeros(4, dtype=float, device=device)
    other = wp.zeros(4, dtype=float, device=device)
    with no_host_reads([x]):
        with pytest.raises(AssertionError, match="host read of a recorded array"):
            x.numpy()
        with pytest.raises(AssertionError, match="host read of a recorded array"):
            _compat.host_view(x[1:3])
        other.numpy()


def _program(tape, device, guarded: list, mutate: bool = False):
    """Three steps of a rollout over new states, an in-place update, a read of one's own write, one array under two
    parameters, and stores into row views of a buffer read whole by the loss; every array made is guarded."""

    def new(values):
        arr = wp.array(np.asarray(values, dtype=np.float64), dtype=wp.float64, device=device, requires_grad=True)
        guarded.append(arr)
        return arr

    x = new([0.3, -0.4, 0.8])
    pair = new([0.0, 0.0])
    rows = wp.zeros((3, 3), dtype=wp.float64, device=device, requires_grad=True)
    loss = new([0.0])
    guarded.append(rows)
    first = x
    with tape:
        for s in range(3):
            y = new([0.0, 0.0, 0.0])
            wp.launch(k.step, dim=3, inputs=[x, y], device=device)
            wp.launch(k.square_in_place, dim=3, inputs=[y], device=device)
            wp.launch(k.read_back, dim=1, inputs=[y, pair], device=device)
            wp.launch(k.blend_into, dim=3, inputs=[y, y], device=device)
            wp.launch(k.store_row, dim=3, inputs=[y, rows[s]], device=device)
            if mutate and s == 1:  # an untaped launch: a mutation of what the launches before read
                wp.launch(k.fill, dim=3, inputs=[x, 2.0], device=device, record_tape=False)
            x = y
        wp.launch(k.sum_squares, dim=(3, 3), inputs=[rows, loss], device=device)
    return first, loss


TAPES = {
    "snapshot": lambda: wp.Tape(snapshot=True),
    "check": lambda: wp.Tape(check="warn"),
    "check + snapshot": lambda: wp.Tape(check="warn", snapshot=True),
}


@pytest.mark.parametrize("tape_kind", sorted(TAPES))
def test_recording_and_backward_read_no_recorded_array_on_the_host(device, tape_kind):
    guarded: list = []
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", wp.OverwriteWarning)
        reference = TAPES[tape_kind]()
        first, loss = _program(reference, device, [])
        reference.backward(loss)
        expected = first.grad.numpy().copy()
        tape = TAPES[tape_kind]()
        with no_host_reads(guarded):
            first, loss = _program(tape, device, guarded)
            tape.backward(loss)
    np.testing.assert_array_equal(first.grad.numpy(), expected)
    assert np.all(np.isfinite(expected)) and np.any(expected != 0.0)


@pytest.mark.parametrize("tape_kind", ["check", "snapshot"])
def test_a_mutation_is_still_found_with_no_host_reads(device, tape_kind):  # negative twin: comparisons still happen
    guarded: list = []
    tape = TAPES[tape_kind]()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", wp.OverwriteWarning)
        with no_host_reads(guarded):
            first, loss = _program(tape, device, guarded, mutate=True)
            if tape_kind == "snapshot":
                with pytest.raises(wp.OverwriteError, match="mutated after record"):
                    tape.backward(loss)
            else:
                tape.backward(loss)
    # the untaped fill changes step 0's output, which every later kernel of step 0 and step 1's `step` read
    readers = {h.reader.kernel for h in tape.hazards if h.kind == "mutated after record"}
    assert readers == {"square_in_place", "read_back", "blend_into", "store_row", "step"}
