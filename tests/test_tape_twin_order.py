"""The read twin orders a thread's read after its own write where the source says so, in the patterns of Warp 1.19's
own gradient tests that check used to label real stale reads on passing tests (test_composite_component_adjoint,
test_ref): a component store or ``+=`` (which reads no value of the element), an array a struct holds bound to a
local, elements reached through inline slices and views, and an element a ``wp.ref[T]`` native function writes
before the thread reads it back. ``check="error"`` raises nothing there, and the plain Tape's gradient is NumPy's.

Each has a negative twin that reads the element before the write: check still reports a real stale read, and the
plain Tape's gradient is shown wrong against NumPy (the backward re-reads the value written)."""

import numpy as np
import pytest
from helpers import kernels_twin_order as K

import warp_zerostore as wp
from warp_zerostore import _compat
from warp_zerostore.tape import read_twin

has_ref = pytest.mark.skipif(not hasattr(wp, "ref"), reason="wp.ref parameters arrived in warp-lang 1.15")


def no_real_hazard(launch) -> wp.Tape:
    """Record ``launch()`` under ``check="error"``: a real report would raise."""
    tape = wp.Tape(check="error")
    with tape:
        launch()
    assert [h for h in tape.hazards if h.real] == []
    return tape


def real_stale_read(launch) -> None:
    with pytest.raises(wp.OverwriteError, match="stale read"):
        with wp.Tape(check="error"):
            launch()


def plain_tape(launch, grads: dict) -> None:
    tape = wp.Tape()
    with tape:
        launch()
    tape.backward(grads=grads)


# -- a component stored or accumulated into reads no value of its element


def vec2(*rows):
    return wp.array(np.array(rows, dtype=np.float32), dtype=wp.vec2, requires_grad=True)


def test_a_component_accumulated_then_read_back_is_no_stale_read():
    y, x, out = vec2([2.0, 0.0]), wp.array([3.0], dtype=float, requires_grad=True), wp.zeros(1, requires_grad=True)
    no_real_hazard(lambda: wp.launch(K.component_add_then_square, 1, inputs=[y, x, out]))
    y, x, out = vec2([2.0, 0.0]), wp.array([3.0], dtype=float, requires_grad=True), wp.zeros(1, requires_grad=True)
    plain_tape(lambda: wp.launch(K.component_add_then_square, 1, inputs=[y, x, out]), {out: wp.ones(1)})
    if _compat.HAS_SLOT_STORES:  # stock <= 1.17 drops a component +='s gradient
        np.testing.assert_allclose(x.grad.numpy(), [2 * (2.0 + 3.0)])


def test_a_component_read_before_it_is_accumulated_stays_a_real_stale_read():
    y, x, out = vec2([2.0, 0.0]), wp.array([3.0], dtype=float, requires_grad=True), wp.zeros(1, requires_grad=True)
    real_stale_read(lambda: wp.launch(K.square_then_component_add, 1, inputs=[y, x, out]))
    y, x, out = vec2([2.0, 0.0]), wp.array([3.0], dtype=float, requires_grad=True), wp.zeros(1, requires_grad=True)
    plain_tape(lambda: wp.launch(K.square_then_component_add, 1, inputs=[y, x, out]), {out: wp.ones(1)})
    exact = 2 * 2.0  # d(y.x^2)/dy.x at the value read, 2
    assert y.grad.numpy()[0, 0] == pytest.approx(2 * (2.0 + 3.0)) != exact  # the backward squared the new value


# -- an array a struct holds, bound to a local


def holder(x0: float) -> K.Holder:
    h = K.Holder()
    h.values = wp.array(np.array([[x0, 0.0, 0.0]], dtype=np.float32), dtype=wp.vec3, requires_grad=True)
    return h


def test_a_struct_field_bound_to_a_local_is_followed():
    for label in ("holder.values",):
        assert label in read_twin.marked_reads(K.alias_component_add_then_square)
    h, x = holder(0.0), wp.array([4.0], dtype=float, requires_grad=True)
    no_real_hazard(lambda: wp.launch(K.alias_component_store, 1, inputs=[h, x]))
    h, x, out = holder(2.0), wp.array([3.0], dtype=float, requires_grad=True), wp.zeros(1, requires_grad=True)
    no_real_hazard(lambda: wp.launch(K.alias_component_add_then_square, 1, inputs=[h, x, out]))
    h, x, out = holder(2.0), wp.array([3.0], dtype=float, requires_grad=True), wp.zeros(1, requires_grad=True)
    plain_tape(lambda: wp.launch(K.alias_component_add_then_square, 1, inputs=[h, x, out]), {out: wp.ones(1)})
    np.testing.assert_allclose(out.numpy(), [25.0])
    if _compat.HAS_SLOT_STORES:
        np.testing.assert_allclose(x.grad.numpy(), [10.0])


def test_a_struct_field_bound_to_a_local_read_before_its_store_stays_a_real_stale_read():
    h, x, out = holder(2.0), wp.array([3.0], dtype=float, requires_grad=True), wp.zeros(1, requires_grad=True)
    real_stale_read(lambda: wp.launch(K.alias_square_then_component_store, 1, inputs=[h, x, out]))
    h, x, out = holder(2.0), wp.array([3.0], dtype=float, requires_grad=True), wp.zeros(1, requires_grad=True)
    plain_tape(lambda: wp.launch(K.alias_square_then_component_store, 1, inputs=[h, x, out]), {out: wp.ones(1)})
    assert h.values.grad.numpy()[0, 0] == pytest.approx(2 * 3.0) != 2 * 2.0  # squared the stored 3, not the 2 read


# -- a row view bound once


def two_d(value: float):
    return wp.full((3, 1), value, dtype=float, requires_grad=True)


def test_a_row_written_then_read_back_is_no_stale_read():
    x = wp.array([1.0, 2.0, 3.0], dtype=float, requires_grad=True)
    dst, out = two_d(0.0), wp.zeros(3, requires_grad=True)
    no_real_hazard(lambda: wp.launch(K.row_store_then_square, 3, inputs=[dst, x, out]))
    dst, out = two_d(0.0), wp.zeros(3, requires_grad=True)
    plain_tape(lambda: wp.launch(K.row_store_then_square, 3, inputs=[dst, x, out]), {out: wp.ones(3)})
    np.testing.assert_allclose(x.grad.numpy(), 8.0 * np.array([1.0, 2.0, 3.0]))  # d(2x)^2/dx = 8x


def test_a_row_read_before_it_is_written_stays_a_real_stale_read():
    x = wp.array([1.0, 2.0, 3.0], dtype=float, requires_grad=True)
    dst, out = two_d(1.0), wp.zeros(3, requires_grad=True)
    real_stale_read(lambda: wp.launch(K.row_square_then_store, 3, inputs=[dst, x, out]))
    dst, out = two_d(1.0), wp.zeros(3, requires_grad=True)
    plain_tape(lambda: wp.launch(K.row_square_then_store, 3, inputs=[dst, x, out]), {out: wp.ones(3)})
    exact = np.full(3, 2.0)  # d(dst^2)/d dst at the 1 read
    np.testing.assert_allclose(dst.grad.numpy()[:, 0], 2 * 2.0 * np.array([1.0, 2.0, 3.0]))  # at the 2x stored
    assert not np.allclose(dst.grad.numpy()[:, 0], exact)


# -- an element a native function writes through a wp.ref[T] parameter, then read back


@has_ref
@pytest.mark.parametrize("name", ["native_store_then_read_2d", "native_store_then_read_row"])
def test_an_element_written_by_reference_then_read_back_is_no_stale_read(name):
    kernel = getattr(K, name)
    x = wp.array([1.0, 2.0, 3.0], dtype=float, requires_grad=True)
    dst, out = two_d(0.0), wp.zeros(3, requires_grad=True)
    no_real_hazard(lambda: wp.launch(kernel, 3, inputs=[x, dst, out]))
    np.testing.assert_allclose(out.numpy(), [2.0, 4.0, 6.0])
    dst, out = two_d(0.0), wp.zeros(3, requires_grad=True)
    x.grad.zero_()
    plain_tape(lambda: wp.launch(kernel, 3, inputs=[x, dst, out]), {out: wp.ones(3)})
    np.testing.assert_allclose(x.grad.numpy(), [2.0, 2.0, 2.0])


@has_ref
def test_components_of_struct_elements_written_by_reference_then_read_back_are_no_stale_read():
    x = wp.array([1.0, 2.0, 3.0], dtype=float, requires_grad=True)
    outers, out = wp.zeros(3, dtype=K.Outer, requires_grad=True), wp.zeros(6, requires_grad=True)
    no_real_hazard(lambda: wp.launch(K.native_store_then_read_fields, 3, inputs=[x, outers, out]))
    np.testing.assert_allclose(out.numpy(), np.repeat([2.0, 4.0, 6.0], 2))


@has_ref
def test_an_element_read_before_a_native_function_writes_it_stays_a_real_stale_read():
    x = wp.array([1.0, 2.0, 3.0], dtype=float, requires_grad=True)
    dst, out = two_d(1.0), wp.zeros(3, requires_grad=True)
    real_stale_read(lambda: wp.launch(K.square_then_native_store_2d, 3, inputs=[x, dst, out]))
    dst, out = two_d(1.0), wp.zeros(3, requires_grad=True)
    plain_tape(lambda: wp.launch(K.square_then_native_store_2d, 3, inputs=[x, dst, out]), {out: wp.ones(3)})
    exact = np.full(3, 2.0)  # d(dst^2)/d dst at the 1 read
    np.testing.assert_allclose(dst.grad.numpy()[:, 0], 2 * 2.0 * np.array([1.0, 2.0, 3.0]))  # at the 2x written
    assert not np.allclose(dst.grad.numpy()[:, 0], exact)


# -- elements reached through slices (Warp versions that slice arrays inside kernels)


@pytest.fixture(scope="module")
def sliced():
    from helpers import kernels_twin_order_slices as S  # noqa: PLC0415

    try:
        wp.load_module(S, device="cpu")
    except Exception as error:  # noqa: BLE001 - this Warp cannot build them: said by name
        assert _compat.WARP_VERSION < (1, 19, 0), error  # 1.19 slices arrays in kernels (its own tests do)
        pytest.skip(f"warp-lang {_compat.WARP_VERSION_TEXT} does not slice arrays inside kernels ({error})")
    return S


SLICES = [(0, 4, 2, [0, 2]), (3, -5, -2, [3, 1])]


@pytest.mark.parametrize(("start", "stop", "step", "selected"), SLICES)
def test_elements_written_through_inline_slices_then_read_back_are_no_stale_read(sliced, start, stop, step, selected):
    source = wp.array([3.0, 5.0], dtype=float, requires_grad=True)
    c, out = wp.full(4, wp.vec3(7.0), dtype=wp.vec3, requires_grad=True), wp.zeros(2, requires_grad=True)
    no_real_hazard(
        lambda: wp.launch(sliced.sliced_store_add_then_square, 2, inputs=[c, source, start, stop, step, out])
    )
    assert read_twin.marked_reads(sliced.sliced_store_add_then_square) == ["c", "source"]
    c, out = wp.full(4, wp.vec3(7.0), dtype=wp.vec3, requires_grad=True), wp.zeros(2, requires_grad=True)
    args = [c, source, start, stop, step, out]
    plain_tape(lambda: wp.launch(sliced.sliced_store_add_then_square, 2, inputs=args), {out: wp.ones(2)})
    s = np.array([3.0, 5.0])
    np.testing.assert_allclose(out.numpy(), s * (7.0 + s))
    np.testing.assert_allclose(source.grad.numpy(), 7.0 + 2 * s)  # d s(7 + s)/ds


@pytest.mark.parametrize(("start", "stop", "step", "selected"), SLICES)
def test_an_element_read_through_a_slice_before_its_store_stays_a_real_stale_read(sliced, start, stop, step, selected):
    source = wp.array([3.0, 5.0], dtype=float, requires_grad=True)
    c, out = wp.full(4, wp.vec3(7.0), dtype=wp.vec3, requires_grad=True), wp.zeros(2, requires_grad=True)
    real_stale_read(lambda: wp.launch(sliced.sliced_square_then_store, 2, inputs=[c, source, start, stop, step, out]))
    c, out = wp.full(4, wp.vec3(7.0), dtype=wp.vec3, requires_grad=True), wp.zeros(2, requires_grad=True)
    args = [c, source, start, stop, step, out]
    plain_tape(lambda: wp.launch(sliced.sliced_square_then_store, 2, inputs=args), {out: wp.ones(2)})
    exact = 2 * 7.0  # d(c.x^2)/dc.x at the 7 read
    np.testing.assert_allclose(c.grad.numpy()[selected, 0], [2 * 3.0, 2 * 5.0])  # at the values stored
    assert not np.allclose(c.grad.numpy()[selected, 0], exact)


@has_ref
def test_an_element_written_by_reference_through_a_view_of_a_view_then_read_back_is_no_stale_read(sliced):
    x = wp.array([1.0, 2.0, 3.0], dtype=float, requires_grad=True)
    dst, out = two_d(0.0), wp.zeros(3, requires_grad=True)
    no_real_hazard(lambda: wp.launch(sliced.native_store_then_read_window, 3, inputs=[x, dst, out]))
    np.testing.assert_allclose(out.numpy(), [2.0, 4.0, 6.0])


@has_ref
def test_an_element_read_through_a_view_of_a_view_before_a_native_write_stays_a_real_stale_read(sliced):
    x = wp.array([1.0, 2.0, 3.0], dtype=float, requires_grad=True)
    dst, out = two_d(1.0), wp.zeros(3, requires_grad=True)
    real_stale_read(lambda: wp.launch(sliced.window_square_then_native_store, 3, inputs=[x, dst, out]))
    dst, out = two_d(1.0), wp.zeros(3, requires_grad=True)
    plain_tape(lambda: wp.launch(sliced.window_square_then_native_store, 3, inputs=[x, dst, out]), {out: wp.ones(3)})
    assert not np.allclose(dst.grad.numpy()[:, 0], np.full(3, 2.0))  # d(dst^2)/d dst at the 1 read: 2


@has_ref
def test_a_snapshot_tape_gives_an_element_passed_by_reference_its_input_back():
    # the callee's replay writes it again for the read that follows (no warning), and a read before the native
    # write gets the value it read (NumPy's gradient, where the plain Tape's is wrong above)
    x = wp.array([1.0, 2.0, 3.0], dtype=float, requires_grad=True)
    dst, out = two_d(0.0), wp.zeros(3, requires_grad=True)
    tape = wp.Tape(snapshot=True)
    with tape:
        wp.launch(K.native_store_then_read_2d, 3, inputs=[x, dst, out])
    tape.backward(grads={out: wp.ones(3)})
    assert tape.hazards == []
    np.testing.assert_allclose(x.grad.numpy(), [2.0, 2.0, 2.0])
    dst, out = two_d(1.0), wp.zeros(3, requires_grad=True)
    tape = wp.Tape(snapshot=True)
    with tape:
        wp.launch(K.square_then_native_store_2d, 3, inputs=[x, dst, out])
    tape.backward(grads={out: wp.ones(3)})
    np.testing.assert_allclose(dst.grad.numpy()[:, 0], np.full(3, 2.0))  # d(dst^2)/d dst at the 1 read


@has_ref
def test_a_later_launch_writing_an_element_passed_by_reference_is_still_a_stale_read():
    # the source cannot tell whether the native function reads its reference: Warp's backward re-runs it on what
    # memory holds then, so another launch's change of the element stays reported (the launch's own write is not)
    x = wp.array([1.0, 2.0, 3.0], dtype=float, requires_grad=True)
    dst, out = two_d(0.0), wp.zeros(3, requires_grad=True)
    tape = wp.Tape(check="warn")
    with pytest.warns(wp.OverwriteWarning, match="stale read: kernel 'fill_column'.*native_store_then_read_2d"):
        with tape:
            wp.launch(K.native_store_then_read_2d, 3, inputs=[x, dst, out])
            wp.launch(K.fill_column, 3, inputs=[dst, 5.0])
    assert [(h.kind, h.writer.kernel) for h in tape.hazards if h.real] == [("stale read", "fill_column")]
