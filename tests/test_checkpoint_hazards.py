"""Checkpointed steps with a hazard inside them: a double-buffered step in which a launch
overwrites what it or an earlier launch read is reversed on a snapshotting Tape by default, or refused by name;
a step that writes its output state with ``wp.copy``; ``check=`` with in-place steps. Each against a plain
Tape over fresh arrays per step (float64, to 1e-12), with negative twins."""

import warnings

import numpy as np
import pytest
from helpers import kernels_checkpoint as k
from helpers.examples import docstring_example, run_as_module

import warp_zerostore as wp
from warp_zerostore import copy_adjoint
from warp_zerostore.checkpoint import CheckpointError, launches, rollout

pytest.importorskip("checkpoint_schedules", reason="needs the checkpoint extra")

N, F64 = 4, wp.float64


def _arrays(steps, seed=3):
    rng = np.random.default_rng(seed)
    x = wp.array(rng.uniform(-1, 1, (N, 3)), dtype=wp.vec3d, requires_grad=True)
    v = wp.array(rng.uniform(-1, 1, (N, 3)), dtype=wp.vec3d, requires_grad=True)
    params = wp.array([1.3, 0.2], dtype=F64, requires_grad=True)
    gravity = wp.array(rng.uniform(-1, 1, steps), dtype=F64, requires_grad=True)
    return x, v, params, gravity


def _loss(x, v):
    loss = wp.zeros(1, dtype=F64, requires_grad=True)
    wp.launch(k.loss_kernel, dim=N, inputs=[x, v, wp.ones(N, dtype=wp.vec3d), loss])
    return loss


def _empty(like):
    return wp.empty_like(like, requires_grad=True)


def reference(steps, fresh_step):
    """One plain Tape, fresh arrays for every step and every temporary: no overwrite anywhere."""
    x, v, params, gravity = _arrays(steps)
    state = [x, v]
    tape = wp.Tape()
    with tape:
        for n in range(steps):
            out = [_empty(x), _empty(v)]
            fresh_step(state, out, n, params, gravity)
            state = out
        loss = _loss(*state)
    tape.backward(loss)
    return [a.grad.numpy().copy() for a in (x, v, params, gravity)]


def checkpointed(steps, step, snapshots=2, **options):
    """``step(state_in, state_out, n, params, gravity)`` through a double-buffered rollout."""
    x, v, params, gravity = _arrays(steps)
    tape = wp.Tape()
    with tape:
        run = rollout(
            lambda a, b, n: step(a, b, n, params, gravity),
            [x, v],
            steps,
            snapshots=snapshots,
            params=[params, gravity],
            out=[_empty(x), _empty(v)],
            **options,
        )
        loss = _loss(*run.state)
    tape.backward(loss)
    return [a.grad.numpy().copy() for a in (x, v, params, gravity)], run


def assert_same(got, want):
    for g, w in zip(got, want):
        np.testing.assert_allclose(g, w, rtol=1e-12, atol=1e-12 * np.abs(w).max())


def differs(got, want):
    return any(not np.allclose(g, w, rtol=1e-6) for g, w in zip(got, want))


# -- item 3: a hazard inside a double-buffered step


def _shifted_force_step(scratch, hazard_at=lambda n: True):
    """Newton's Featherstone pattern: a force into a scratch array the solver keeps, read and overwritten in
    place by a later launch (where ``hazard_at(n)``; else shifted into a second array), then integrated."""

    def step(a, b, n, params, gravity):
        f, f_shifted = scratch
        wp.launch(k.compute_force, dim=N, inputs=[a[0], a[1], params, gravity, n, f])
        if hazard_at(n):
            wp.launch(k.shift_force_in_place, dim=N, inputs=[a[0], f])
        else:
            wp.launch(k.shift_force, dim=N, inputs=[a[0], f, f_shifted])
            f = f_shifted
        wp.launch(k.integrate_force, dim=N, inputs=[a[0], a[1], f, b[0], b[1]])

    return step


def _shifted_force_fresh(a, b, n, params, gravity):
    f, f_shifted = _empty(a[0]), _empty(a[0])
    wp.launch(k.compute_force, dim=N, inputs=[a[0], a[1], params, gravity, n, f])
    wp.launch(k.shift_force, dim=N, inputs=[a[0], f, f_shifted])
    wp.launch(k.integrate_force, dim=N, inputs=[a[0], a[1], f_shifted, b[0], b[1]])


def _scratch():
    return [wp.zeros(N, dtype=wp.vec3d, requires_grad=True) for _ in range(2)]


def test_a_step_overwriting_what_it_read_is_right_by_default():
    steps = 6
    want = reference(steps, _shifted_force_fresh)
    got, run = checkpointed(steps, _shifted_force_step(_scratch()))
    assert_same(got, want)
    assert run.summary.steps_snapshotted == steps  # every reversed step, on a snapshotting Tape
    # check="warn" neither warns (the snapshot makes the stale read right) nor returns another value.
    with warnings.catch_warnings():
        warnings.simplefilter("error", wp.OverwriteWarning)
        got, _ = checkpointed(steps, _shifted_force_step(_scratch()), check="warn")
    assert_same(got, want)
    # What the default used to do, a plain Tape per step, is wrong here: the hazard is real.
    got, run = checkpointed(steps, _shifted_force_step(_scratch()), snapshot_step=False)
    assert differs(got, want) and run.summary.steps_snapshotted == 0


def test_a_step_overwriting_what_it_read_through_a_struct_is_right_by_default():
    """The scratch force held in a @wp.struct (``s.f``): the step reads it, then overwrites it. The snapshotting
    Tape is chosen from the launches' own reads and writes, struct-held arrays included, with no check (a plain
    Tape per step was chosen before, silently wrong); against one plain Tape over fresh arrays."""
    steps = 4
    scratch = k.Scratch()
    scratch.f = wp.zeros(N, dtype=wp.vec3d, requires_grad=True)

    def step(a, b, n, params, gravity):
        wp.launch(k.compute_force, dim=N, inputs=[a[0], a[1], params, gravity, n, scratch.f])
        wp.launch(k.shift_force_in_struct, dim=N, inputs=[a[0], scratch])
        wp.launch(k.integrate_force, dim=N, inputs=[a[0], a[1], scratch.f, b[0], b[1]])

    want = reference(steps, _shifted_force_fresh)
    got, run = checkpointed(steps, step)
    assert_same(got, want)
    assert run.summary.steps_snapshotted == steps
    [found] = launches.read_then_written(_one_step_tape(step))
    assert found.describe() == "kernel 'shift_force_in_struct' writes its argument 's.f', which the same launch reads"


def _one_step_tape(step):
    x, v, params, gravity = _arrays(1)
    tape = wp.Tape()
    with tape:
        step([x, v], [_empty(x), _empty(v)], 0, params, gravity)
    return tape


def test_a_step_without_hazards_stays_on_a_plain_tape():
    """Negative twin: the Euler step reads one buffer and writes the other. The forward sweep's first step,
    recorded on a plain Tape, shows it: no step is reversed on a snapshotting Tape. With store_all, where a
    reversed step comes first, that one step is."""

    def euler(a, b, n, params, gravity):
        wp.launch(k.euler_step, dim=N, inputs=[a[0], a[1], params, gravity, n, b[0], b[1]])

    steps = 7
    got, run = checkpointed(steps, euler)
    assert_same(got, reference(steps, euler))
    assert run.summary.steps_snapshotted == 0
    got, run = checkpointed(steps, euler, schedule="store_all")
    assert_same(got, reference(steps, euler))
    assert run.summary.steps_snapshotted == 1
    # the same with the scratch pattern but no in-place shift: no hazard either
    got, run = checkpointed(steps, _shifted_force_step(_scratch(), hazard_at=lambda n: False))
    assert_same(got, reference(steps, _shifted_force_fresh))
    assert run.summary.steps_snapshotted == 0


def test_a_hazard_in_the_first_reversed_step_of_store_all_is_snapshotted():
    steps = 5
    got, run = checkpointed(steps, _shifted_force_step(_scratch()), schedule="store_all")
    assert_same(got, reference(steps, _shifted_force_fresh))
    assert run.summary.steps_snapshotted == steps


def test_a_hazard_first_seen_at_a_later_step_is_recorded_again():
    """Step 0 shows no hazard in the forward sweep, so steps 3 and 2 are reversed on plain Tapes; step 1
    overwrites what it read: it is recorded again on a snapshotting Tape (its input state is intact), and so is
    every step after."""
    steps = 4
    got, run = checkpointed(steps, _shifted_force_step(_scratch(), hazard_at=lambda n: n == 1), snapshots=4)
    assert_same(got, reference(steps, _shifted_force_fresh))
    assert run.summary.steps_snapshotted == 2  # steps 1 (again) and 0
    assert run.summary.steps_run == 2 * steps - 1 + 1  # Revolve storing every state, and step 1 once more


def _square_velocity_step(at):
    def step(a, b, n, params, gravity):
        if at(n):
            wp.launch(k.square_velocity_in_place, dim=N, inputs=[a[1]])
        wp.launch(k.euler_step, dim=N, inputs=[a[0], a[1], params, gravity, n, b[0], b[1]])

    return step


def _square_velocity_fresh(at):
    def step(a, b, n, params, gravity):
        v = a[1]
        if at(n):
            v = _empty(a[1])
            wp.launch(k.square_velocity, dim=N, inputs=[a[1], v])
        wp.launch(k.euler_step, dim=N, inputs=[a[0], v, params, gravity, n, b[0], b[1]])

    return step


def test_a_late_hazard_in_a_step_that_overwrites_its_input_is_refused_by_name():
    """Step 1 squares its input velocity in place: it cannot be run again once recorded, so the rollout names
    the step, the kernel, the array and the fix."""
    steps, at = 4, lambda n: n == 1
    with pytest.raises(CheckpointError) as caught:
        checkpointed(steps, _square_velocity_step(at), snapshots=4)
    message = str(caught.value)
    for part in ("step 1", "kernel 'square_velocity_in_place'", "argument 'v'", "state[1]", "snapshot_step=True"):
        assert part in message
    # Negative twins: the fix it names, and the same step at every step (seen at step 0 in the forward sweep).
    want = reference(steps, _square_velocity_fresh(at))
    assert_same(checkpointed(steps, _square_velocity_step(at), snapshots=4, snapshot_step=True)[0], want)
    every = lambda n: True  # noqa: E731
    got, run = checkpointed(steps, _square_velocity_step(every), snapshots=4)
    assert_same(got, reference(steps, _square_velocity_fresh(every)))
    assert run.summary.steps_snapshotted == steps


# -- item 4: wp.copy into the output state


def _copy_step(a, b, n, params, gravity):
    tmp = [_empty(a[0]), _empty(a[1])]
    wp.launch(k.euler_step, dim=N, inputs=[a[0], a[1], params, gravity, n, tmp[0], tmp[1]])
    wp.copy(b[0], tmp[0])
    wp.copy(b[1], tmp[1])


@pytest.mark.parametrize("writes_input", [True, False], ids=["default", "writes_input_false"])
def test_a_step_writing_its_output_with_copy(writes_input):
    """wp.copy copies src.grad over dest.grad in the forward pass; inside a rollout it must not wipe the adjoint
    held in the output state's .grad (it gave a zero gradient for the initial state)."""
    steps = 5
    want = reference(steps, _copy_step)
    got, _ = checkpointed(steps, _copy_step, writes_input=writes_input)
    assert_same(got, want)
    assert np.abs(got[0]).max() > 0


def test_an_in_place_step_copying_over_what_it_read_is_refused_by_name():
    """In place, the copy overwrites the state the step's kernel read: that kernel's backward would re-read the
    copied values, and a Tape snapshots launches, not copies (it gave a silently wrong gradient)."""
    x, v, params, gravity = _arrays(3)

    def step(state, n):
        tmp = [_empty(state[0]), _empty(state[1])]
        wp.launch(k.euler_step, dim=N, inputs=[state[0], state[1], params, gravity, n, tmp[0], tmp[1]])
        wp.copy(state[0], tmp[0])
        wp.copy(state[1], tmp[1])

    with pytest.raises(CheckpointError) as caught:
        with wp.Tape():
            rollout(step, [x, v], 3, snapshots=2, params=[params, gravity])
    for part in ("step 2", "state[0] with wp.copy", "argument 'x_in'", "double-buffered (out=...)"):
        assert part in str(caught.value)


@wp.kernel(enable_backward=False)
def _speed_probe(v: wp.array(dtype=wp.vec3d), speed: wp.array(dtype=F64)):
    i = wp.tid()
    speed[i] = wp.length(v[i])


@wp.kernel
def _velocity_from_position(x: wp.array(dtype=wp.vec3d), v_new: wp.array(dtype=wp.vec3d)):
    i = wp.tid()
    v_new[i] = wp.vec3d(wp.sin(x[i][0]), x[i][1] * x[i][2], x[i][0])


def _probe_then_copy_step(state, n):
    """A forward-only kernel reads v; v is then overwritten by wp.copy. Nothing differentiated read v."""
    speed = wp.zeros(N, dtype=F64)
    wp.launch(_speed_probe, dim=N, inputs=[state[1], speed])
    v_new = _empty(state[1])
    wp.launch(_velocity_from_position, dim=N, inputs=[state[0], v_new])
    with wp.copy_zero_store(True):  # Warp's own copy adjoint keeps dest.grad up to 1.16
        wp.copy(state[1], v_new)


def test_a_copy_over_what_only_a_forward_only_kernel_read_is_not_refused():
    """The negative twin of the refusal above: a kernel built with enable_backward=False is never re-read by a
    backward, so a copy over what it read changes no gradient (it was refused by name: found by the program
    fuzzer). Against the same steps on one plain Tape."""
    x, v, _, _ = _arrays(3)
    seed = np.arange(1.0, 1.0 + 3 * N).reshape(N, 3)

    def run(steps):
        xa, va = wp.clone(x, requires_grad=True), wp.clone(v, requires_grad=True)
        tape = wp.Tape()
        with tape:
            state = steps(xa, va)
        tape.backward(grads={state[1]: wp.array(seed, dtype=wp.vec3d)})
        return xa.grad.numpy(), state[1].numpy()

    def checkpointed(xa, va):
        return rollout(_probe_then_copy_step, [xa, va], 3, snapshots=2).state

    def plain(xa, va):
        state = [xa, va]
        for _ in range(3):
            v_new = _empty(va)
            wp.launch(_velocity_from_position, dim=N, inputs=[state[0], v_new])
            state = [state[0], v_new]
        return state

    (got, got_v), (want, want_v) = run(checkpointed), run(plain)
    np.testing.assert_allclose(got_v, want_v, rtol=1e-12)
    np.testing.assert_allclose(got, want, rtol=1e-12)
    assert np.abs(want).max() > 0


def test_copy_outside_a_rollout_still_copies_the_gradient():
    """Negative twin: Warp's forward copy of the gradient is only skipped inside a rollout's steps."""
    src = wp.array([1.0, 2.0], dtype=F64, requires_grad=True)
    dest = wp.zeros(2, dtype=F64, requires_grad=True)
    src.grad.fill_(3.0)
    wp.copy(dest, src)
    assert dest.grad.numpy().tolist() == [3.0, 3.0]


# -- item 5: check= with in-place steps


def _in_place(square_twice):
    def step(state, n, params, gravity):
        if square_twice:
            wp.launch(k.square_keep, dim=1, inputs=[state[2]])
            wp.launch(k.square_keep, dim=1, inputs=[state[2]])
        wp.launch(k.kick_in_place, dim=N, inputs=[state[0], state[1], params, gravity, n])
        wp.launch(k.drift_in_place, dim=N, inputs=[state[0], state[1]])

    return step


def _in_place_rollout(steps, step, **options):
    x, v, params, gravity = _arrays(steps)
    s = wp.array([1.1], dtype=F64, requires_grad=True)
    tape = wp.Tape()
    with tape:
        run = rollout(
            lambda state, n: step(state, n, params, gravity),
            [x, v, s],
            steps,
            snapshots=2,
            params=[params, gravity],
            **options,
        )
        loss = _loss(*run.state[:2])
    tape.backward(loss)
    return [a.grad.numpy().copy() for a in (x, v, params, gravity)]


def test_check_error_accepts_a_correct_in_place_step():
    """The in-place zero_store=True step reads and overwrites its state: a stale read its local snapshotting Tape
    makes right, so check='error' (and 'warn') does not report it."""
    steps = 5
    want = _in_place_rollout(steps, _in_place(False))
    assert_same(_in_place_rollout(steps, _in_place(False), check="error"), want)
    with warnings.catch_warnings():
        warnings.simplefilter("error", wp.OverwriteWarning)
        assert_same(_in_place_rollout(steps, _in_place(False), check="warn"), want)


def test_check_error_still_refuses_what_a_snapshot_cannot_make_right():
    """Negative twin: square_keep twice (store adjoints that keep the overwritten gradient) is a real overwrite."""
    with pytest.raises(wp.OverwriteError, match=r"overwrite.*square_keep.*rollout\(\): step \d+"):
        _in_place_rollout(3, _in_place(True), check="error")


@pytest.mark.parametrize("name", ["read_then_written", "gradients_kept"])
def test_docstring_examples_run(name, tmp_path):
    obj = {"read_then_written": launches.read_then_written, "gradients_kept": copy_adjoint.gradients_kept}[name]
    run_as_module(docstring_example(obj), tmp_path, f"docstring_{name}")
