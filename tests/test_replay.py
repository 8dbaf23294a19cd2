"""The replay log: a zero_store=True kernel's backward reads what its forward read (docs/semantics.md).

Each gradient is compared with the derivative worked out by hand in float64 NumPy; the unflagged and
zero_store=False twins keep Warp's replay (its wrong value is asserted, so a change there is seen).
"""

import pathlib
import re
import warnings

import numpy as np
import pytest
from helpers import kernels_replay as k
from hypothesis import given
from hypothesis import strategies as st

import warp_zerostore as wp
from warp_zerostore import _compat, codegen
from warp_zerostore.codegen import replay, replay_records
from warp_zerostore.tape import tape as tape_module

# Values away from the branch threshold (1.0) of read_back_branch and away from zero.
values = st.lists(st.one_of(st.floats(0.2, 0.9), st.floats(1.1, 2.5), st.floats(-2.0, -0.2)), min_size=1, max_size=6)


def f64(values, device, requires_grad=True):
    return wp.array(np.asarray(values, dtype=np.float64), dtype=wp.float64, device=device, requires_grad=requires_grad)


def grad_of_sum(kernel, x, outputs, device, tape_options=None, n_extra=()):
    """d(sum of each output)/dx on a Tape, and the outputs' values after backward()."""
    tape = wp.Tape(**(tape_options or {}))
    with tape:
        wp.launch(kernel, dim=x.shape[0], inputs=[x, *outputs, *n_extra], device=device)
    forward = [o.numpy().copy() for o in outputs]
    tape.backward(grads={o: wp.ones(o.shape, dtype=o.dtype, device=device) for o in outputs})
    after = [o.numpy().copy() for o in outputs]
    return x.grad.numpy().copy(), forward, after


CASES = {
    "read_back": (k.read_back, lambda x: 3 * x**2),
    "read_back_helpers": (k.read_back_helpers, lambda x: 5 * x**4),
    "read_back_nested": (k.read_back_nested, lambda x: 4 * x**3 + 1),
    "read_back_branch": (k.read_back_branch, lambda x: np.where(x > 1, 3 * x**2, 2.0)),
    "read_back_static_loop": (k.read_back_static_loop, lambda x: 4 * x**3),
    "read_back_after_add": (k.read_back_after_add, lambda x: 2 * x + 3 * x**2),
}


@pytest.mark.parametrize("name", sorted(CASES))
@given(xs=values)
def test_a_thread_reading_back_its_own_store_gets_the_exact_gradient(name, xs, device):
    kernel, derivative = CASES[name]
    x = f64(xs, device)
    y = wp.zeros(len(xs), dtype=wp.float64, device=device, requires_grad=True)
    grad, forward, after = grad_of_sum(kernel, x, [y], device)
    np.testing.assert_allclose(grad, derivative(np.asarray(xs)), rtol=1e-12, atol=1e-12)
    # the backward pass leaves array memory as the forward left it
    np.testing.assert_array_equal(after[0], forward[0])


@pytest.mark.parametrize("tape_options", [{"snapshot": True}, {"check": "error"}, {"check": "warn", "snapshot": True}])
def test_snapshot_and_check_tapes_agree_and_report_nothing(tape_options, device):
    xs = np.array([0.5, 1.0, 2.0])
    x = f64(xs, device)
    y = wp.zeros(3, dtype=wp.float64, device=device, requires_grad=True)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        grad, _, _ = grad_of_sum(k.read_back, x, [y], device, tape_options)
    np.testing.assert_allclose(grad, 3 * xs**2, rtol=1e-12)


def test_the_seed_numbers(device):
    # the seed report's numbers: x = [0.5, 1, 2], exact [0.75, 3, 12]; Warp 1.19's replay gives [0.625, 3, 16], and
    # Warp <= 1.12's accumulating store adjoint adds the overwritten value's gradient (2x) to that
    stock = [0.625, 3, 16] if _compat.STOCK_STORE_ZEROES else [1.625, 5, 20]
    for kernel, expected in ((k.read_back, [0.75, 3, 12]), (k.read_back_stock, stock)):
        x = f64([0.5, 1.0, 2.0], device)
        y = wp.zeros(3, dtype=wp.float64, device=device, requires_grad=True)
        grad, _, _ = grad_of_sum(kernel, x, [y], device)
        np.testing.assert_allclose(grad, expected, rtol=1e-12)


def test_zero_store_false_keeps_warps_replay(device):
    # documented: False is Warp <= 1.12's store adjoint with Warp's own replay: the replay's [0.625, 3, 16]
    # plus the leaked gradient of the overwritten y = x^2 (2x)
    x = f64([0.5, 1.0, 2.0], device)
    y = wp.zeros(3, dtype=wp.float64, device=device, requires_grad=True)
    grad, _, _ = grad_of_sum(k.read_back_accumulate, x, [y], device)
    np.testing.assert_allclose(grad, [0.625 + 1, 3 + 2, 16 + 4], rtol=1e-12)


def test_a_read_back_through_a_run_time_index_uses_the_log(device):
    xs = np.array([0.5, 1.0, 2.0])
    x = f64(xs, device)
    index = wp.array(np.arange(3, dtype=np.int32), dtype=int, device=device)
    y = wp.zeros(3, dtype=wp.float64, device=device, requires_grad=True)
    tape = wp.Tape()
    with tape:
        wp.launch(k.read_back_indirect, dim=3, inputs=[x, index, y], device=device)
    tape.backward(grads={y: wp.ones(3, dtype=wp.float64, device=device)})
    np.testing.assert_allclose(x.grad.numpy(), 3 * xs**2, rtol=1e-12)


def test_two_dimensional_read_back(device):
    xs = np.array([[0.5, 7.0], [1.5, 7.0], [-2.0, 7.0]])
    x = wp.array(xs, dtype=wp.float64, device=device, requires_grad=True)
    y = wp.zeros((3, 2), dtype=wp.float64, device=device, requires_grad=True)
    tape = wp.Tape()
    with tape:
        wp.launch(k.read_back_2d, dim=3, inputs=[x, y], device=device)
    tape.backward(grads={y: wp.ones((3, 2), dtype=wp.float64, device=device)})
    expected = np.zeros_like(xs)
    expected[:, 0] = 1 + 3 * xs[:, 0] ** 2  # d(y[i, 0] + y[i, 1]) / dx = d(x + x^3) / dx
    np.testing.assert_allclose(x.grad.numpy(), expected, rtol=1e-12)


def test_a_component_store_is_read_back_whole(device):
    xs = np.array([0.5, 1.5, -2.0])
    x = f64(xs, device)
    v = wp.zeros(3, dtype=wp.vec3d, device=device, requires_grad=True)
    out = wp.zeros(3, dtype=wp.float64, device=device, requires_grad=True)
    tape = wp.Tape()
    with tape:
        wp.launch(k.read_back_components, dim=3, inputs=[x, v, out], device=device)
    np.testing.assert_allclose(out.numpy(), xs**4 + 2 * xs**2, rtol=1e-12)
    tape.backward(grads={out: wp.ones(3, dtype=wp.float64, device=device)})
    np.testing.assert_allclose(x.grad.numpy(), 4 * xs**3 + 4 * xs, rtol=1e-12)


@given(xs=values)
def test_read_before_and_after_write_is_exact_on_a_snapshot_tape(xs, device):
    # t = x; x = t*t; x = x*t: d x_final / d x_initial = 3 x^2 (Warp's replay alone gives [0.156, 3, 136])
    x = f64(xs, device)
    tape = wp.Tape(snapshot=True)
    with warnings.catch_warnings():
        warnings.simplefilter("error", tape_module.OverwriteWarning)
        with tape:
            wp.launch(k.read_back_in_place, dim=len(xs), inputs=[x], device=device)
        forward = x.numpy().copy()
        tape.backward(grads={x: wp.ones(len(xs), dtype=wp.float64, device=device)})
    np.testing.assert_allclose(x.grad.numpy(), 3 * np.asarray(xs) ** 2, rtol=1e-12)
    assert not [h for h in tape.hazards if h.kind == tape_module.REPLAY]
    np.testing.assert_array_equal(x.numpy(), forward)


@pytest.mark.parametrize("overwrite", [k.overwrite_direct, k.overwrite_through_helper])
def test_a_store_in_a_helper_does_not_undo_a_snapshot(overwrite, device):
    # launch A reads y = 3 (out = y*y), launch B overwrites y = 5: d out/dy = 6 either way
    y = f64([3.0, 3.0], device)
    out = wp.zeros(2, dtype=wp.float64, device=device, requires_grad=True)
    tape = wp.Tape(snapshot=True)
    with tape:
        wp.launch(k.square_reader, dim=2, inputs=[y, out], device=device)
        wp.launch(overwrite, dim=2, inputs=[y], device=device)
    tape.backward(grads={out: wp.ones(2, dtype=wp.float64, device=device)})
    np.testing.assert_allclose(y.grad.numpy(), [6.0, 6.0])
    np.testing.assert_array_equal(y.numpy(), [5.0, 5.0])


def test_no_helper_store_lands_in_memory_during_backward(device):
    x = f64([0.5, 1.5], device)
    y = wp.zeros(2, dtype=wp.float64, device=device, requires_grad=True)
    tape = wp.Tape()
    with tape:
        wp.launch(k.read_back_helpers, dim=2, inputs=[x, y], device=device)
    y.assign(np.array([-7.0, -7.0]))  # whatever memory holds at backward time stays there
    tape.backward(grads={y: wp.ones(2, dtype=wp.float64, device=device)})
    np.testing.assert_array_equal(y.numpy(), [-7.0, -7.0])


# ------------------------------------------------------------------------------------------------------------
# The generated code: read-back kernels get the log (CPU and CUDA), the others keep Warp's text; loop warnings


@pytest.fixture(scope="module")
def cuda_build(tmp_path_factory):
    out = tmp_path_factory.mktemp("replay_ptx")
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            wp.compile_aot_module(k, device=None, arch=[75], module_dir=str(out), use_ptx=True)
        except Exception as error:  # noqa: BLE001
            if "nvrtc" in str(error).lower() or "cuda" in str(error).lower():
                pytest.skip(f"this Warp build cannot compile CUDA here: {error}")
            raise
    (cu,) = pathlib.Path(out).glob("*.cu")
    return cu.read_text(), [w for w in caught if issubclass(w.category, wp.ReplayWarning)]


def _backward(source: str, key: str) -> str:
    m = re.search(rf"void {key}_[0-9a-f]+_cuda_kernel_backward\(.*?\n}}\n", source, re.S)
    assert m, key
    return m.group(0)


def test_the_cuda_backward_of_a_read_back_kernel_uses_the_log(cuda_build):
    source, _ = cuda_build
    # the same element by the same index variables: the stored value is forwarded, no log
    assert "the value this thread stored" in _backward(source, "read_back")
    assert "zs_log" not in _backward(source, "read_back")
    # an index known only at run time: the log
    assert "wp::zs::replay_load<wp::zs::slots<wp::zs::whole<wp::float64, 0>>>(zs_log" in _backward(
        source, "read_back_indirect"
    )
    # the module mixes modes, so the helper's variant carries the mode's suffix too: put_0__zs_zero__zs_log
    assert re.search(r"put_0__zs_zero__zs_log<\d+, wp::zs::slots<.*>>\(", _backward(source, "read_back_helpers"))


@pytest.mark.parametrize("key", ["no_read_back", "runtime_loop_no_carry", "overwrite_direct"])
def test_flagged_kernels_that_read_nothing_back_keep_warps_code(cuda_build, key):
    backward = _backward(cuda_build[0], key)
    assert "zs_log" not in backward
    assert replay.ModuleReplay().kernel(backward, key) == backward


@pytest.mark.parametrize("key", ["read_back_stock", "read_back_accumulate", "square_reader"])
def test_unflagged_and_false_kernels_get_no_log(cuda_build, key):
    assert "zs_log" not in _backward(cuda_build[0], key)


def test_a_value_carried_through_a_runtime_loop_is_warned_at_backward_not_at_build(cuda_build, device):
    # nothing is warned while a module builds: whether an issue applies depends on the memory the backward sees
    assert cuda_build[1] == []
    x = f64([0.5], device)
    y = wp.zeros(1, dtype=wp.float64, device=device, requires_grad=True)
    messages = {}
    for name in (
        "carried_in_runtime_loop",
        "carried_through_another_index",
        "read_back_static_loop",
        "runtime_loop_no_carry",
    ):
        replay_records.forget_warnings()
        tape = wp.Tape()
        with tape:
            wp.launch(getattr(k, name), dim=1, inputs=[x, y, 2] if "static" not in name else [x, y], device=device)
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            tape.backward(grads={y: wp.ones(1, dtype=wp.float64, device=device)})
        messages[name] = [w for w in caught if issubclass(w.category, wp.ReplayWarning)]
    (carried,) = messages["carried_in_runtime_loop"]
    assert "argument 'y'" in str(carried.message) and "runtime-bound loop" in str(carried.message)
    assert carried.filename.endswith("kernels_replay.py")
    # a value carried around the loop is wrong whatever memory holds: reported for both backwards, also where the
    # read names the element through another index variable the loop does not change
    (other,) = messages["carried_through_another_index"]
    assert "argument 'y'" in str(other.message)
    for kernel in (k.carried_in_runtime_loop, k.carried_through_another_index):
        for memory in replay.MEMORIES:
            assert len(replay_records.issues(kernel, memory)) == 1
    # negative twins: unrolled loops and runtime loops without a carried value are not warned
    assert messages["read_back_static_loop"] == [] and messages["runtime_loop_no_carry"] == []


def test_a_users_func_grad_keeps_its_own_stores(device):
    # a @wp.func_grad runs as written in the backward, scratch stores included (Newton's dense_solve does this)
    xs = np.array([0.5, 1.5, -2.0])
    x = f64(xs, device)
    out = wp.zeros(3, dtype=wp.float64, device=device, requires_grad=True)
    scratch = wp.zeros(3, dtype=wp.float64, device=device)
    tape = wp.Tape()
    with tape:
        wp.launch(k.custom_adjoint_with_scratch, dim=3, inputs=[x, out, scratch], device=device)
    tape.backward(grads={out: wp.ones(3, dtype=wp.float64, device=device)})
    np.testing.assert_allclose(x.grad.numpy(), 2 * xs, rtol=1e-12)
    np.testing.assert_allclose(scratch.numpy(), 2 * xs, rtol=1e-12)


def test_a_build_loaded_from_the_cache_warns_again_and_is_not_exact(device):
    # the issues are kept beside Warp's kernel cache: a later process (here: a forgotten record) reads them back
    x = f64([0.5], device)
    y = wp.zeros(1, dtype=wp.float64, device=device, requires_grad=True)
    wp.launch(k.carried_in_runtime_loop, dim=1, inputs=[x, y, 2], device=device)
    build = replay_records.build_of(k.carried_in_runtime_loop)
    replay_records._RECORDS.pop(build)
    assert replay_records.issues(k.carried_in_runtime_loop, replay.POST) is None
    replay_records.remember_build(k.carried_in_runtime_loop, build)
    replay_records.forget_warnings()
    with pytest.warns(wp.ReplayWarning, match="carried_in_runtime_loop"):
        replay_records.warn(k.carried_in_runtime_loop, replay.POST)
    assert not codegen.replays_exactly(k.carried_in_runtime_loop)
    # negative twins: a flagged kernel without issues replays exactly; an unflagged one does not claim to
    wp.launch(k.read_back, dim=1, inputs=[x, y], device=device)
    assert codegen.replays_exactly(k.read_back)
    assert not codegen.replays_exactly(k.read_back_stock)


def test_a_write_the_replay_does_not_follow_is_reported_where_a_read_needs_it(device):
    if not _compat.HAS_SLOT_STORES:
        pytest.skip("component += on array elements builds from Warp 1.19 (wp.array_atomic_add_slot)")
    from helpers import kernels_replay_slots as slots  # noqa: PLC0415

    xs = np.array([0.5, 1.5, -2.0])
    grads = {}
    for name in ("component_add_read_back", "component_add_only"):
        for options in ({}, {"snapshot": True}):
            replay_records.forget_warnings()
            x = f64(xs, device)
            v = wp.zeros(3, dtype=wp.vec2d, device=device, requires_grad=True)
            out = wp.zeros(3, dtype=wp.float64, device=device, requires_grad=True)
            inputs = [x, v, out] if name == "component_add_read_back" else [x, v]
            tape = wp.Tape(**options)
            with warnings.catch_warnings(record=True) as caught:
                warnings.simplefilter("always")
                with tape:
                    wp.launch(getattr(slots, name), dim=3, inputs=inputs, device=device)
                seed = out if name == "component_add_read_back" else v
                tape.backward(grads={seed: wp.ones_like(seed)})
            assert not [w for w in caught if issubclass(w.category, wp.ReplayWarning)], (name, options)
            grads[name, bool(options)] = x.grad.numpy().copy()
    # v[i] = (x, x^2); v[i][0] += v[i][1]; out = v[i][0] * x = x^2 + x^3: the read after the += reads memory on a
    # plain Tape (what the forward left), and the snapshot Tape, whose PRE backward is not exact here, gives the same
    for snapshot in (False, True):
        np.testing.assert_allclose(grads["component_add_read_back", snapshot], 2 * xs + 3 * xs**2, rtol=1e-12)
    # the PRE backward would read the log, which does not follow the += : reported for PRE only
    (pre,) = replay_records.issues(slots.component_add_read_back, replay.PRE)
    assert "argument 'v'" in pre["message"] and "array_atomic_add_slot" in pre["message"]
    assert replay_records.issues(slots.component_add_read_back, replay.POST) == []
    assert not codegen.replays_exactly(slots.component_add_read_back)
    # negative twin: the same component += never read again
    for memory in replay.MEMORIES:
        assert replay_records.issues(slots.component_add_only, memory) == []


@pytest.mark.parametrize("tape_options", [{}, {"snapshot": True}], ids=["plain", "snapshot"])
def test_a_read_after_a_runtime_bound_loop_is_exact_and_warned_only_where_memory_cannot_serve_it(tape_options, device):
    # out = (n x)^2 after the loop (n = 3): d/dx = 18 x
    xs = np.array([0.5, 1.5, -2.0])
    for kernel, warned in ((k.read_after_runtime_loop, False), (k.read_after_runtime_loop_then_store, True)):
        replay_records.forget_warnings()
        x = f64(xs, device)
        y = wp.zeros(3, dtype=wp.float64, device=device, requires_grad=True)
        out = wp.zeros(3, dtype=wp.float64, device=device, requires_grad=True)
        tape = wp.Tape(**tape_options)
        with tape:
            wp.launch(kernel, dim=3, inputs=[x, y, out, 3], device=device)
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            tape.backward(grads={out: wp.ones(3, dtype=wp.float64, device=device)})
        said = [str(w.message) for w in caught if issubclass(w.category, wp.ReplayWarning)]
        if warned:  # the read is followed by a store: on a plain Tape memory holds the later value (as stock reads)
            assert len(said) == 1 and "argument 'y'" in said[0] and "runtime-bound loop" in said[0], said
        else:
            assert said == []
            np.testing.assert_allclose(x.grad.numpy(), 18 * xs, rtol=1e-12)
    # the record says which backward needs what: the read after the loop reads memory on POST
    assert replay_records.issues(k.read_after_runtime_loop, replay.POST) == []
    assert len(replay_records.issues(k.read_after_runtime_loop, replay.PRE)) == 1
    for memory in replay.MEMORIES:
        assert len(replay_records.issues(k.read_after_runtime_loop_then_store, memory)) == 1


def test_warps_own_tape_warns_too(device):
    # a program that records on warp.Tape (not the facade's) runs the same POST backward: warned the same way
    import warp  # noqa: PLC0415

    replay_records.forget_warnings()
    x = f64([0.5], device)
    y = wp.zeros(1, dtype=wp.float64, device=device, requires_grad=True)
    tape = warp.Tape()
    with tape:
        wp.launch(k.carried_in_runtime_loop, dim=1, inputs=[x, y, 2], device=device)
    with pytest.warns(wp.ReplayWarning, match="carried_in_runtime_loop"):
        tape.backward(grads={y: wp.ones(1, dtype=wp.float64, device=device)})


@pytest.mark.parametrize("tape_options", [{}, {"snapshot": True}], ids=["plain", "snapshot"])
def test_a_helper_loop_reading_what_an_earlier_iteration_stored_is_exact_and_unwarned_where_memory_serves_it(
    tape_options, device
):
    # y[k] = x[0] ... x[k] (Newton's forward kinematics shape): the read of y[parent] reads memory on a plain Tape,
    # which holds what the forward stored there; the snapshot Tape runs that backward too (its PRE one is not exact)
    xs = np.array([0.5, 1.5, -2.0, 0.7])
    cot = np.array([1.0, 2.0, 3.0, 4.0])
    prefix = np.cumprod(xs)
    want = np.array([np.sum(cot[k:] * prefix[k:]) / xs[k] for k in range(4)])
    replay_records.forget_warnings()
    x = f64(xs, device)
    y = wp.zeros(4, dtype=wp.float64, device=device, requires_grad=True)
    tape = wp.Tape(**tape_options)
    with tape:
        wp.launch(k.helper_forward_kinematics, dim=1, inputs=[x, y, 4], device=device)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        tape.backward(grads={y: f64(cot, device)})
    np.testing.assert_allclose(x.grad.numpy(), want, rtol=1e-12)
    assert replay_records.issues(k.helper_forward_kinematics, replay.POST) == []
    assert len(replay_records.issues(k.helper_forward_kinematics, replay.PRE)) == 1
    # negative twin: the array stored before the loop too, so the helper's log holds an entry older than the
    # loop's stores, which the read then gets: wrong, and warned on both backwards
    replay_records.forget_warnings()
    y = wp.zeros(4, dtype=wp.float64, device=device, requires_grad=True)
    x = f64(xs, device)
    tape = wp.Tape(**tape_options)
    with tape:
        wp.launch(k.helper_scale_from_a_seed, dim=1, inputs=[x, y, 4], device=device)
    with pytest.warns(wp.ReplayWarning, match="scale_in_place_from_a_seed"):
        tape.backward(grads={y: f64(cot, device)})
    assert not np.allclose(x.grad.numpy(), cot[0] * prefix[-1] / xs)  # d(prod x)/dx, which it does not give
    for memory in replay.MEMORIES:
        assert len(replay_records.issues(k.helper_scale_from_a_seed, memory)) == 1
