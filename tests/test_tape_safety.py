"""warp_zerostore.Tape: overwrite / stale-read / mutation hazards (each with a twin that is not flagged),
snapshots on an Euler simulation and on drawn in-place programs, and the ``check`` command."""

import os
import re
import subprocess
import sys
import warnings

import numpy as np
import pytest
from helpers import kernels_tape_safety as k
from hypothesis import given
from hypothesis import strategies as st

import warp_zerostore as wp
from warp_zerostore import _compat

f64 = wp.float64
ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def kinds(tape, real=True):
    return sorted({h.kind for h in tape.hazards if h.real is real})


def arr(values, device):
    return wp.array(np.asarray(values, dtype=np.float64), dtype=f64, device=device, requires_grad=True)


# -- overwrite (write after write)


def test_overwrite_of_same_elements_is_real_without_zero_store(device):
    a = wp.zeros(8, dtype=f64, device=device, requires_grad=True)
    tape = wp.Tape(check="warn")
    with pytest.warns(wp.OverwriteWarning, match="overwrite: 2 element.*fill_keep.*argument 'a'.*real error"):
        with tape:
            wp.launch(k.fill_keep, dim=4, inputs=[a, 0, f64(1.0)], device=device)
            wp.launch(k.fill_keep, dim=4, inputs=[a, 2, f64(2.0)], device=device)
    (hazard,) = tape.hazards
    assert (hazard.kind, hazard.real, hazard.elements) == ("overwrite", True, 2)
    assert (hazard.earlier.launch, hazard.writer.launch) == (0, 1)
    assert "test_tape_safety.py:" in hazard.writer.location and hazard.earlier.location != hazard.writer.location


def test_disjoint_halves_are_not_an_overwrite(device):
    a = wp.zeros(8, dtype=f64, device=device, requires_grad=True)
    tape = wp.Tape(check="error")
    with tape:
        wp.launch(k.fill_keep, dim=4, inputs=[a, 0, f64(1.0)], device=device)
        wp.launch(k.fill_keep, dim=4, inputs=[a, 4, f64(2.0)], device=device)
    assert tape.hazards == []


def test_zero_store_overwrite_is_recorded_as_safe_and_not_warned(device):
    a = wp.zeros(8, dtype=f64, device=device, requires_grad=True)
    tape = wp.Tape(check="error")
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        with tape:
            wp.launch(k.fill_keep, dim=4, inputs=[a, 0, f64(1.0)], device=device)
            wp.launch(k.fill_zero, dim=4, inputs=[a, 0, f64(2.0)], device=device)
    (hazard,) = tape.hazards
    assert hazard.kind == "overwrite" and not hazard.real and "safe" in hazard.message()


def test_error_mode_raises_at_the_overwriting_launch(device):
    a = wp.zeros(4, dtype=f64, device=device, requires_grad=True)
    with pytest.raises(wp.OverwriteError, match=r"fill_keep' \(launch #1 at .*test_tape_safety.py:\d+"):
        with wp.Tape(check="error"):
            wp.launch(k.fill_keep, dim=4, inputs=[a, 0, f64(1.0)], device=device)
            wp.launch(k.fill_keep, dim=4, inputs=[a, 0, f64(2.0)], device=device)


def test_accumulation_into_a_written_array_is_not_an_overwrite(device):
    x = arr([1.0, 2.0], device)
    loss = wp.zeros(1, dtype=f64, device=device, requires_grad=True)
    tape = wp.Tape(check="error")
    with tape:
        wp.launch(k.accumulate, dim=2, inputs=[x, loss], device=device)
        wp.launch(k.accumulate, dim=2, inputs=[x, loss], device=device)
    assert tape.hazards == []


# -- stale read (write after read)


def test_write_after_read_is_a_stale_read(device):
    x, y = arr([1.0, 2.0], device), arr([0.0, 0.0], device)
    tape = wp.Tape(check="warn")
    with pytest.warns(
        wp.OverwriteWarning, match="stale read: kernel 'fill_keep'.*argument 'a'.*square_into.*'x' reads"
    ):
        with tape:
            wp.launch(k.square_into, dim=2, inputs=[x, y], device=device)
            wp.launch(k.fill_keep, dim=2, inputs=[x, 0, f64(5.0)], device=device)
    assert kinds(tape) == ["stale read"]


def test_a_stale_read_of_a_linear_use_is_kept_not_real(device):  # the same program, y = 2 x: d y / d x = 2 anyway
    x, y = arr([1.0, 2.0], device), arr([0.0, 0.0], device)
    tape = wp.Tape(check="error")
    with tape:
        wp.launch(k.double_into, dim=2, inputs=[x, y], device=device)
        wp.launch(k.fill_keep, dim=2, inputs=[x, 0, f64(5.0)], device=device)
    assert [(h.kind, h.real) for h in tape.hazards] == [("stale read", False)]


def test_reading_x_and_writing_y_is_not_a_hazard(device):
    x, y, z, w = (arr([1.0, 2.0], device) for _ in range(4))
    tape = wp.Tape(check="error")
    with tape:
        wp.launch(k.double_into, dim=2, inputs=[x, y], device=device)
        wp.launch(k.fill_keep, dim=2, inputs=[z, 0, f64(5.0)], device=device)  # a different array
        wp.launch(k.double_into, dim=2, inputs=[y, w], device=device)  # reads what the first launch wrote
    assert tape.hazards == []


def test_views_of_one_buffer_are_connected_element_by_element(device):
    x, y = arr([1.0, 2.0, 3.0, 4.0], device), arr([0.0, 0.0], device)
    tape = wp.Tape(check="warn")
    with pytest.warns(wp.OverwriteWarning, match="stale read: kernel 'fill_keep'.*changes 1 element.*square_into"):
        with tape:
            wp.launch(k.square_into, dim=2, inputs=[x[0:2], y], device=device)  # reads x[0], x[1]
            wp.launch(k.fill_keep, dim=2, inputs=[x[1:3], 0, f64(5.0)], device=device)  # writes x[1], x[2]
    (hazard,) = tape.hazards
    assert hazard.elements == 1
    tape.backward(grads={y: wp.ones(2, dtype=f64, device=device)})
    assert len(tape.hazards) == 1  # x changed through a recorded launch on a view of it: not a mutation


def test_a_view_written_after_another_view_was_read_is_not_a_hazard_when_disjoint(device):
    x, y = arr([1.0, 2.0, 3.0, 4.0], device), arr([0.0, 0.0], device)
    tape = wp.Tape(check="error")
    with tape:
        wp.launch(k.double_into, dim=2, inputs=[x[0:2], y], device=device)
        wp.launch(k.fill_keep, dim=2, inputs=[x[2:4], 0, f64(5.0)], device=device)
    assert tape.hazards == []


def test_reads_are_per_element_within_one_launch_and_across_launches(device):
    a = arr([1.0, 2.0, 0.0, 0.0], device)
    loss = wp.zeros(1, dtype=f64, device=device, requires_grad=True)
    tape = wp.Tape(check="error")
    with tape:
        wp.launch(k.sum_first_half, dim=4, inputs=[a, loss], device=device)  # reads a[0], a[1] only
        wp.launch(k.copy_first_half_to_second, dim=2, inputs=[a], device=device)  # reads a[0:2], writes a[2:4]
    assert tape.hazards == []
    with pytest.raises(wp.OverwriteError, match="stale read: kernel 'fill_keep'.*changes 1 element.*sum_first_half"):
        with tape:
            wp.launch(k.fill_keep, dim=2, inputs=[a, 1, f64(5.0)], device=device)  # a[1] (read), a[2] (not)


def test_read_twins_mark_indexed_reads_and_fall_back_to_the_whole_argument():
    from warp_zerostore.tape import read_twin

    assert read_twin.marked_reads(k.copy_first_half_to_second) == ["a"]
    assert read_twin.marked_reads(k.fill_keep) == []  # reads nothing
    assert read_twin.twin(k.fill_keep)[1] == {"a": "w"}  # its stores are marked
    assert read_twin.marked_reads(k.read_through_a_function) == ["a"]  # followed into the @wp.func


def test_a_read_through_a_function_is_element_precise(device):
    a, b = arr([1.0, 2.0, 3.0, 4.0], device), arr([0.0] * 4, device)
    tape = wp.Tape(check="warn")
    with tape:
        wp.launch(k.read_through_a_function, dim=4, inputs=[a, b], device=device)  # reads a[0] only
        wp.launch(k.fill_keep, dim=2, inputs=[a, 2, f64(5.0)], device=device)  # a[2:4]: not read
    assert tape.hazards == []
    with pytest.warns(wp.OverwriteWarning, match="changes 1 element.*read_through_a_function"):
        with tape:
            wp.launch(k.fill_keep, dim=1, inputs=[a, 0, f64(5.0)], device=device)


def test_in_place_update_is_a_stale_read_of_its_own_launch(device):
    a = arr([2.0], device)
    tape = wp.Tape(check="warn")
    with pytest.warns(wp.OverwriteWarning, match="the same launch reads as argument 'a'"):
        with tape:
            wp.launch(k.square_in_place, dim=1, inputs=[a], device=device)


def test_one_warning_per_distinct_hazard_not_per_launch(device):
    a, b = arr([2.0, 3.0], device), arr([0.5, 0.25], device)
    tape = wp.Tape(check="warn")
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        with tape:
            for _ in range(5):
                wp.launch(k.square_in_place, dim=2, inputs=[a], device=device)
                wp.launch(k.add_sin_in_place, dim=2, inputs=[a, b], device=device)
    messages = [str(w.message) for w in caught if issubclass(w.category, wp.OverwriteWarning)]
    # Distinct (writer line, reader line) pairs: square's own read, add_sin's own read, add_sin over square's
    # read, square over add_sin's read; add_sin's reads of `a` are linear (a[i] + sin(b[i])), kept not real. Ten
    # launches, two warnings; overwrites are safe (zero_store=True).
    assert len(messages) == len(set(messages)) == 2
    stale = {(h.writer.kernel, h.reader.kernel, h.real) for h in tape.hazards if h.kind == "stale read"}
    assert stale == {
        ("square_in_place", "square_in_place", True),
        ("add_sin_in_place", "square_in_place", True),
        ("add_sin_in_place", "add_sin_in_place", False),
        ("square_in_place", "add_sin_in_place", False),
    }
    assert len([h for h in tape.hazards if h.kind == "overwrite" and not h.real]) == 2


# -- mutated after record


@pytest.mark.parametrize("how", ["assign", "fill_", "numpy", "untaped launch"])
def test_mutation_after_record_is_caught_at_backward(how, device):
    x, y = arr([1.0, 2.0], device), arr([0.0, 0.0], device)
    tape = wp.Tape(check="error")
    with tape:
        wp.launch(k.double_into, dim=2, inputs=[x, y], device=device)
    if how == "assign":
        x.assign(np.array([3.0, 4.0]))
    elif how == "fill_":
        x.fill_(7.0)
    elif how == "numpy":
        if device != "cpu":
            pytest.skip("a NumPy view shares memory on the CPU only")
        x.numpy()[1] = 9.0  # writes through shared memory
    else:
        wp.launch(k.fill_keep, dim=2, inputs=[x, 0, f64(1.0)], device=device)
    with pytest.raises(wp.OverwriteError, match="mutated after record: the array read by kernel 'double_into'.*'x'"):
        tape.backward(grads={y: wp.ones(2, dtype=f64, device=device)})


def test_mutation_of_an_array_no_launch_reads_is_not_a_hazard(device):
    x, y = arr([1.0, 2.0], device), arr([0.0, 0.0], device)
    tape = wp.Tape(check="error")
    with tape:
        wp.launch(k.double_into, dim=2, inputs=[x, y], device=device)
    y.fill_(3.0)  # y is only written; the backward pass does not read its values
    tape.backward(grads={y: wp.ones(2, dtype=f64, device=device)})
    assert tape.hazards == [] and x.grad.numpy().tolist() == [2.0, 2.0]


# -- off by default, and nothing intercepted


def test_default_tape_is_stock_and_intercepts_nothing(device):
    assert wp.config.check == "off"
    tape = wp.Tape()
    with tape:
        assert wp.launch is _compat._LAUNCH_ORIGINAL
        wp.launch(k.square_in_place, dim=1, inputs=[arr([2.0], device)], device=device)
    assert tape.hazards == [] and len(tape.launches) == 1


def test_config_check_sets_the_default_and_is_validated():
    saved = wp.config.check
    try:
        wp.config.check = "warn"
        assert wp.Tape().check == "warn"
        with pytest.raises(ValueError, match="warp_zerostore.config.check must be one of"):
            wp.config.check = "loud"
    finally:
        wp.config.check = saved
    with pytest.raises(ValueError, match=r"Tape\(check=...\)"):
        wp.Tape(check=True)


# -- snapshots: Euler


def euler_gradients(device, steps=50, n=16, snapshot=True, check="off"):
    rng = np.random.default_rng(0)
    x0 = wp.array(rng.uniform(-1, 1, n), dtype=f64, device=device)
    v0 = wp.array(rng.uniform(-1, 1, n), dtype=f64, device=device)
    ref_tape = wp.Tape()
    rx, rv, rx_end, rv_end, rloss = k.euler_per_step(x0, v0, steps, 0.01, ref_tape)
    ref_tape.backward(rloss)
    tape = wp.Tape(snapshot=snapshot, check=check)
    x, v, loss = k.euler_in_place(x0, v0, steps, 0.01, tape)
    final = (x.numpy().copy(), v.numpy().copy())
    tape.backward(loss)
    if snapshot:  # a second backward sees the same forward values again
        first = (x.grad.numpy().copy(), v.grad.numpy().copy())
        tape.zero()
        tape.backward(loss)
        np.testing.assert_array_equal(x.grad.numpy(), first[0])
        np.testing.assert_array_equal(v.grad.numpy(), first[1])
    ref = (rx.grad.numpy(), rv.grad.numpy(), rx_end.numpy(), rv_end.numpy(), rloss.numpy())
    return tape, (x.grad.numpy(), v.grad.numpy(), x.numpy(), v.numpy(), loss.numpy()), ref, final


def test_euler_in_place_with_snapshots_matches_one_array_per_step(device):
    tape, got, ref, final = euler_gradients(device)
    np.testing.assert_allclose(got[4], ref[4], rtol=1e-12)  # same forward pass
    np.testing.assert_allclose(got[0], ref[0], rtol=1e-10)
    np.testing.assert_allclose(got[1], ref[1], rtol=1e-10)
    # backward() leaves the forward pass's final values in place
    np.testing.assert_array_equal(got[2], final[0])
    np.testing.assert_array_equal(got[3], final[1])
    np.testing.assert_allclose(got[2], ref[2], rtol=1e-12)
    # one copy of x (velocity reads it, position writes it) and of v per step, and, when the Tape is left, one of
    # each for the loss launch, which reads them after their last writer (a later change must not reach it)
    assert tape.snapshot_bytes == 2 * 50 * 16 * 8 + 2 * 16 * 8
    tape.reset()
    assert tape.snapshot_bytes == 0


def test_euler_in_place_without_snapshots_is_wrong_and_check_says_why(device):
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        tape, got, ref, _ = euler_gradients(device, snapshot=False, check="warn")
    messages = [str(w.message) for w in caught if issubclass(w.category, wp.OverwriteWarning)]
    assert any(re.search("stale read: kernel 'position_in_place'.*'x'.*velocity_in_place", m) for m in messages)
    assert not np.allclose(got[0], ref[0], rtol=1e-6)
    assert "stale read" in kinds(tape) and tape.snapshot_bytes == 0


def test_snapshot_and_check_together_still_report(device):
    with pytest.warns(wp.OverwriteWarning):
        tape, got, ref, _ = euler_gradients(device, steps=3, snapshot=True, check="warn")
    np.testing.assert_allclose(got[0], ref[0], rtol=1e-10)


def test_snapshots_of_a_strided_vec3_view_and_an_empty_array(device):
    rng = np.random.default_rng(1)
    start = rng.uniform(-1, 1, (8, 3))
    # reference: one array per step
    a0 = wp.array(start[::2], dtype=wp.vec3d, device=device, requires_grad=True)
    a1 = wp.empty_like(a0, requires_grad=True)
    a2 = wp.empty_like(a0, requires_grad=True)
    ref_loss = wp.zeros(1, dtype=f64, device=device, requires_grad=True)
    with wp.Tape() as ref:
        wp.launch(k.twist_out, dim=4, inputs=[a0], outputs=[a1], device=device)
        wp.launch(k.twist_out, dim=4, inputs=[a1], outputs=[a2], device=device)
        wp.launch(k.vec_loss, dim=4, inputs=[a2, ref_loss], device=device)
    ref.backward(ref_loss)
    # in place on every other row of a larger array (a non-contiguous view)
    base = wp.array(start, dtype=wp.vec3d, device=device, requires_grad=True)
    view = base[::2]
    empty = wp.zeros(0, dtype=wp.vec3d, device=device, requires_grad=True)
    loss = wp.zeros(1, dtype=f64, device=device, requires_grad=True)
    tape = wp.Tape(snapshot=True, check="warn")
    with pytest.warns(wp.OverwriteWarning, match="twist_in_place"):
        with tape:
            wp.launch(k.twist_in_place, dim=0, inputs=[empty], device=device)
            wp.launch(k.twist_in_place, dim=4, inputs=[view], device=device)
            wp.launch(k.twist_in_place, dim=4, inputs=[view], device=device)
            wp.launch(k.vec_loss, dim=4, inputs=[view, loss], device=device)
    tape.backward(loss)
    np.testing.assert_allclose(loss.numpy(), ref_loss.numpy(), rtol=1e-12)
    np.testing.assert_allclose(base.grad.numpy()[::2], a0.grad.numpy(), rtol=1e-10)
    np.testing.assert_array_equal(base.grad.numpy()[1::2], 0.0)
    np.testing.assert_array_equal(base.numpy()[1::2], start[1::2])  # rows the view skips are untouched
    np.testing.assert_allclose(view.numpy(), a2.numpy(), rtol=1e-12)
    assert tape.snapshot_bytes == 2 * 4 * 24  # the empty array's launch changed nothing: no copy kept


def test_snapshot_of_a_view_overwritten_after_the_whole_array_was_read(device):
    def run(snapshot):
        x = arr([0.5, 1.5, -1.0, 2.0], device)
        loss = wp.zeros(1, dtype=f64, device=device, requires_grad=True)
        tape = wp.Tape(snapshot=snapshot)
        with tape:
            wp.launch(k.accumulate, dim=4, inputs=[x, loss], device=device)  # reads all of x
            wp.launch(k.square_in_place, dim=2, inputs=[x[1:3]], device=device)  # then changes x[1], x[2]
            wp.launch(k.accumulate, dim=4, inputs=[x, loss], device=device)
        tape.backward(loss)
        return x.grad.numpy(), tape.snapshot_bytes

    # loss = sum x^2 + sum x'^2 with x'[1:3] = x[1:3]^2: d/dx = 2x + (2x or 4x^3)
    expected = np.array([2 * 0.5 + 2 * 0.5, 2 * 1.5 + 4 * 1.5**3, 2 * -1.0 + 4 * -1.0, 2 * 2.0 + 2 * 2.0])
    grad, saved = run(snapshot=True)
    np.testing.assert_allclose(grad, expected, rtol=1e-12)
    assert saved == 2 * 8  # the view, not the whole array
    assert not np.allclose(run(snapshot=False)[0], expected)


# -- snapshots: drawn in-place programs against their one-array-per-write twins

N = 5
OPS = st.one_of(
    st.tuples(st.just("square"), st.integers(0, 2)),
    st.tuples(st.just("add_sin"), st.integers(0, 2), st.integers(0, 2)).filter(lambda o: o[1] != o[2]),
    st.tuples(st.just("mul"), st.integers(0, 2), st.integers(0, 2), st.integers(0, 2)).filter(
        lambda o: len({o[1], o[2], o[3]}) == 3
    ),
)


def run_program(program, start, weights, device, in_place):
    arrays = [wp.array(s, dtype=f64, device=device, requires_grad=True) for s in start]
    inputs = list(arrays)
    loss = wp.zeros(1, dtype=f64, device=device, requires_grad=True)
    tape = wp.Tape(snapshot=True) if in_place else wp.Tape()
    with tape:
        for op in program:
            if op[0] == "square":
                a = op[1]
                if in_place:
                    wp.launch(k.square_in_place, dim=N, inputs=[arrays[a]], device=device)
                else:
                    out = wp.empty_like(arrays[a], requires_grad=True)
                    wp.launch(k.square_out, dim=N, inputs=[arrays[a]], outputs=[out], device=device)
                    arrays[a] = out
            elif op[0] == "add_sin":
                a, b = op[1], op[2]
                if in_place:
                    wp.launch(k.add_sin_in_place, dim=N, inputs=[arrays[a], arrays[b]], device=device)
                else:
                    out = wp.empty_like(arrays[a], requires_grad=True)
                    wp.launch(k.add_sin_out, dim=N, inputs=[arrays[a], arrays[b]], outputs=[out], device=device)
                    arrays[a] = out
            else:
                a, b, c = op[1:]
                if not in_place:
                    arrays[c] = wp.empty_like(arrays[c], requires_grad=True)
                wp.launch(k.mul_into, dim=N, inputs=[arrays[a], arrays[b], arrays[c]], device=device)
        for arr_, w in zip(arrays, weights):
            wp.launch(k.weighted_sum, dim=N, inputs=[arr_, f64(w), loss], device=device)
    final = [a.numpy().copy() for a in arrays]
    tape.backward(loss)
    after = [a.numpy().copy() for a in arrays]
    return [a.grad.numpy().copy() for a in inputs], final, after, tape


@given(
    program=st.lists(OPS, min_size=1, max_size=6),
    start=st.lists(st.lists(st.floats(-1.2, 1.2), min_size=N, max_size=N), min_size=3, max_size=3),
    weights=st.tuples(st.floats(-2, 2), st.floats(-2, 2), st.floats(-2, 2)),
)
def test_drawn_in_place_programs_with_snapshots_match_one_array_per_write(program, start, weights, device):
    got, final, after, tape = run_program(program, start, weights, device, in_place=True)
    ref, ref_final, _, _ = run_program(program, start, weights, device, in_place=False)
    for g, r in zip(got, ref):
        np.testing.assert_allclose(g, r, rtol=1e-10, atol=1e-12)
    for a, b, r in zip(final, after, ref_final):
        np.testing.assert_array_equal(a, b)  # backward() restored the forward pass's final values
        np.testing.assert_allclose(a, r, rtol=1e-12)


# -- python -m warp_zerostore check


def run_check(script, *args):
    env = dict(os.environ, PYTHONPATH=ROOT + os.pathsep + os.environ.get("PYTHONPATH", ""))
    return subprocess.run(
        [sys.executable, "-m", "warp_zerostore", "check", script, *args],
        capture_output=True,
        text=True,
        env=env,
        cwd=ROOT,
        timeout=300,
    )


def test_check_command_reports_the_known_bug_and_fails():
    done = run_check("examples/tape_inplace_bug.py")
    assert done.returncode == 1, done.stdout + done.stderr
    out = done.stdout
    assert "gradient:" in out  # the script ran, through plain `import warp`
    assert "warp_zerostore check: 2 hazard(s)" in out
    assert "== stale read: 2" in out and "kernel 'relu_in_place', array 'x':" in out
    assert (
        "launch #1 at examples/tape_inplace_bug.py:30" in out
        and "'energy' (launch #0 at examples/tape_inplace_bug.py:29" in out
    )


def test_check_command_passes_a_clean_script_and_its_arguments(tmp_path):
    script = tmp_path / "clean.py"
    script.write_text(
        "import sys\n"
        "import warp as wp\n"
        "wp.config.quiet = True\n"
        "@wp.kernel\n"
        "def double(x: wp.array(dtype=float), y: wp.array(dtype=float)):\n"
        "    y[wp.tid()] = 2.0 * x[wp.tid()]\n"
        "x = wp.ones(3, dtype=float, requires_grad=True)\n"
        "y = wp.zeros(3, dtype=float, requires_grad=True)\n"
        "with wp.Tape() as tape:\n"
        "    wp.launch(double, dim=3, inputs=[x, y])\n"
        "tape.backward(grads={y: wp.ones(3, dtype=float)})\n"
        "print('args', sys.argv[1:], type(tape).__module__)\n"
    )
    done = run_check(str(script), "--steps", "3")
    assert done.returncode == 0, done.stdout + done.stderr
    assert "args ['--steps', '3'] warp_zerostore.tape.tape" in done.stdout
    assert "warp_zerostore check: 0 hazard(s)" in done.stdout
