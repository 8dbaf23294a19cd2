"""warp_zerostore.checkpoint: checkpointed rollouts give a full Tape's gradients (float64, in place and
double-buffered), with Revolve's optimal step count, RAM and disk snapshots, online schedules, clear errors."""

import gc
import importlib.util
import os
import warnings

import numpy as np
import pytest
from helpers import kernels_checkpoint as k
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import warp_zerostore as wp
from warp_zerostore.checkpoint import CheckpointError, optimal_step_count, rollout

checkpoint_schedules = pytest.importorskip("checkpoint_schedules", reason="needs the checkpoint extra")

F64 = wp.float64


class Problem:
    """Drawn data of one particle system: initial state, parameters (k, c), per-step gravity, loss weights."""

    def __init__(self, steps, data):
        self.steps = steps
        n = data.draw(st.integers(1, 6), label="particles")
        rng = np.random.default_rng(data.draw(st.integers(0, 2**32 - 1), label="seed"))
        self.x0 = rng.uniform(-1.0, 1.0, (n, 3))
        self.v0 = rng.uniform(-1.0, 1.0, (n, 3))
        self.params = np.array([rng.uniform(0.5, 2.0), rng.uniform(0.0, 0.5)])
        self.gravity = rng.uniform(-1.0, 1.0, steps)
        self.w = rng.uniform(-1.0, 1.0, (n, 3))

    @property
    def n(self):
        return len(self.x0)

    def arrays(self):
        x = wp.array(self.x0, dtype=wp.vec3d, requires_grad=True)
        v = wp.array(self.v0, dtype=wp.vec3d, requires_grad=True)
        params = wp.array(self.params, dtype=F64, requires_grad=True)
        gravity = wp.array(self.gravity, dtype=F64, requires_grad=True)
        return x, v, params, gravity

    def loss(self, x, v):
        loss = wp.zeros(1, dtype=F64, requires_grad=True)
        wp.launch(k.loss_kernel, dim=self.n, inputs=[x, v, wp.array(self.w, dtype=wp.vec3d), loss])
        return loss


def grads(*arrays):
    return [a.grad.numpy().copy() for a in arrays]


def per_step_reference(p):
    """A plain Tape with one state array per step."""
    x, v, params, gravity = p.arrays()
    xs, vs = [x], [v]
    tape = wp.Tape()
    with tape:
        for n in range(p.steps):
            xs.append(wp.empty_like(x, requires_grad=True))
            vs.append(wp.empty_like(v, requires_grad=True))
            wp.launch(k.euler_step, dim=p.n, inputs=[xs[n], vs[n], params, gravity, n, xs[n + 1], vs[n + 1]])
        loss = p.loss(xs[-1], vs[-1])
    tape.backward(loss)
    return grads(x, v, params, gravity), loss.numpy()[0]


def snapshot_reference(p):
    """In place on one state, on ``Tape(snapshot=True)``."""
    x, v, params, gravity = p.arrays()
    tape = wp.Tape(snapshot=True)
    with tape:
        for n in range(p.steps):
            in_place_step([x, v], n, params, gravity)
        loss = p.loss(x, v)
    tape.backward(loss)
    return grads(x, v, params, gravity), loss.numpy()[0]


def in_place_step(state, n, params, gravity):
    x, v = state
    wp.launch(k.kick_in_place, dim=len(x), inputs=[x, v, params, gravity, n])
    wp.launch(k.drift_in_place, dim=len(x), inputs=[x, v])


def checkpointed(p, snapshots, in_place, **options):
    """The same rollout through ``rollout()``; returns gradients, loss, step evaluations and the Rollout."""
    x, v, params, gravity = p.arrays()
    calls = [0]
    if in_place:

        def step(state, n):
            calls[0] += 1
            in_place_step(state, n, params, gravity)

        out = None
    else:

        def step(state_in, state_out, n):
            calls[0] += 1
            inputs = [state_in[0], state_in[1], params, gravity, n, state_out[0], state_out[1]]
            wp.launch(k.euler_step, dim=p.n, inputs=inputs)

        out = [wp.empty_like(x, requires_grad=True), wp.empty_like(v, requires_grad=True)]
    tape = wp.Tape()
    with tape:
        run = rollout(step, [x, v], p.steps, snapshots=snapshots, params=[params, gravity], out=out, **options)
        loss = p.loss(*run.state)
    tape.backward(loss)
    return grads(x, v, params, gravity), loss.numpy()[0], calls[0], run


def assert_same(got, want):
    for g, w in zip(got, want):
        scale = max(np.abs(w).max(), 1e-300)
        np.testing.assert_allclose(g, w, rtol=1e-12, atol=1e-12 * scale)


GRID = [(t, s) for t in (1, 2, 7, 100, 1000) for s in (1, 2, 5, 10, t)]
# Reversing 1000 steps with 1 or 2 snapshots takes 500,500 / 45,000 step evaluations: their count is checked
# below with a step that launches nothing; gradients are checked on the rest of the grid.
SLOW = {(1000, 1), (1000, 2)}


MODES = {  # name: (in place, rollout options)
    "in_place": (True, {}),
    "double_buffered": (False, {}),
    "double_buffered_writes_input_false": (False, {"writes_input": False}),
}


@pytest.mark.parametrize("mode", list(MODES))
@pytest.mark.parametrize("steps,snapshots", [c for c in GRID if c not in SLOW])
@settings(max_examples=2, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_gradients_equal_full_tape(steps, snapshots, mode, data):
    in_place, options = MODES[mode]
    p = Problem(steps, data)
    want, want_loss = per_step_reference(p)
    got, loss, calls, run = checkpointed(p, snapshots, in_place, **options)
    assert_same(got, want)
    assert loss == want_loss
    if in_place:
        assert_same(snapshot_reference(p)[0], want)
    # Acceptance 2: the step ran exactly as often as Revolve's optimum says.
    assert calls == optimal_step_count(steps, snapshots) == run.summary.steps_run
    assert run.summary.snapshots_held <= min(snapshots, max(steps - 1, 0))


@pytest.mark.parametrize("steps,snapshots", sorted(SLOW) + [(1000, 10)])
def test_step_count_is_revolve_optimum(steps, snapshots):
    calls = [0]

    def step(state, n):  # launches nothing: only the count matters here
        calls[0] += 1

    x = wp.zeros(1, dtype=F64, requires_grad=True)
    tape = wp.Tape()
    with tape:
        run = rollout(step, [x], steps, snapshots=snapshots)
    tape.backward(grads={x: wp.ones(1, dtype=F64)})
    want = checkpoint_schedules.optimal_steps_binomial(steps, snapshots)
    assert calls[0] == run.summary.steps_run == want
    if (steps, snapshots) == (1000, 10):
        assert want == 4636


def test_broken_reverse_is_caught():
    """The equality test fails when a reverse step starts from the wrong state (restores skipped; try once)."""
    from warp_zerostore.checkpoint import executor

    p = Problem(7, _FixedData())
    want, _ = per_step_reference(p)
    original = executor.Executor._restore

    def broken(self, action, delete):
        self.position = action.n  # moves on without restoring the snapshot into the buffers

    executor.Executor._restore = broken
    try:
        got = checkpointed(p, 2, in_place=False)[0]
    finally:
        executor.Executor._restore = original
    with pytest.raises(AssertionError):
        assert_same(got, want)


class _FixedData:
    """A stand-in for ``st.data()`` that returns fixed draws."""

    def draw(self, strategy, label=None):
        return {"particles": 3, "seed": 7}[label]


def test_central_finite_differences():
    p = Problem(7, _FixedData())
    got = checkpointed(p, 2, in_place=True)[0]

    def loss_of(x0, params):
        q = Problem(7, _FixedData())
        q.x0, q.params = x0, params
        return per_step_reference(q)[1]

    h = 1e-6
    for index in [(0, 0), (1, 2), (2, 1)]:
        plus, minus = p.x0.copy(), p.x0.copy()
        plus[index] += h
        minus[index] -= h
        fd = (loss_of(plus, p.params) - loss_of(minus, p.params)) / (2 * h)
        assert fd == pytest.approx(got[0][index], rel=1e-7, abs=1e-9)
    for j in range(2):
        plus, minus = p.params.copy(), p.params.copy()
        plus[j] += h
        minus[j] -= h
        fd = (loss_of(p.x0, plus) - loss_of(p.x0, minus)) / (2 * h)
        assert fd == pytest.approx(got[2][j], rel=1e-7, abs=1e-9)


# -- schedules: store everything, multistage RAM + disk, online two-level


@pytest.mark.parametrize("mode", list(MODES))
def test_store_all_reference_mode(mode):
    in_place, options = MODES[mode]
    p = Problem(20, _FixedData())
    want, _ = per_step_reference(p)
    got, _, calls, run = checkpointed(p, 1, in_place, schedule="store_all", **options)
    assert_same(got, want)
    assert calls == 20 and run.summary.schedule == "store_all"


@pytest.mark.parametrize("mode", list(MODES))
def test_multistage_disk_equals_ram_and_cleans_up(tmp_path, mode):
    in_place, options = MODES[mode]
    p = Problem(40, _FixedData())
    ram, _, ram_calls, _ = checkpointed(p, 5, in_place)
    got, _, calls, run = checkpointed(
        p, 2, in_place, schedule="multistage", disk_snapshots=3, directory=tmp_path, **options
    )
    assert_same(got, ram)
    assert calls == optimal_step_count(40, 5) == ram_calls
    assert run.summary.disk_bytes > 0 and run.summary.ram_bytes > 0
    assert os.listdir(tmp_path) == []


class Boom(RuntimeError):
    pass


@pytest.mark.parametrize("when", ["forward", "reverse"])
def test_disk_snapshots_removed_when_the_step_raises(tmp_path, when):
    p = Problem(40, _FixedData())
    x, v, params, gravity = p.arrays()
    calls = [0]
    fail_at = 17 if when == "forward" else 45  # the forward runs 40 evaluations

    def step(state, n):
        calls[0] += 1
        if calls[0] == fail_at:
            raise Boom(f"step {n} failed")
        in_place_step(state, n, params, gravity)

    tape = wp.Tape()
    with pytest.raises(Boom):
        with tape:
            rollout(step, [x, v], 40, snapshots=1, schedule="multistage", disk_snapshots=4, directory=tmp_path)
            loss = p.loss(x, v)
        tape.backward(loss)
    assert os.listdir(tmp_path) == []


def test_no_files_left_negative_twin(tmp_path):
    """The disk schedule does write files while the rollout is held (so the clean-up checks above mean something)."""
    p = Problem(40, _FixedData())
    x, v, params, gravity = p.arrays()
    run = rollout(
        lambda s, n: in_place_step(s, n, params, gravity),
        [x, v],
        40,
        snapshots=1,
        schedule="multistage",
        disk_snapshots=4,
        directory=tmp_path,
    )
    (folder,) = os.listdir(tmp_path)
    assert any(name.endswith(".npy") for name in os.listdir(tmp_path / folder))
    run.close()
    assert os.listdir(tmp_path) == []
    # A rollout neither reversed nor closed removes its folder when it is collected.
    run = rollout(
        lambda s, n: in_place_step(s, n, params, gravity),
        [x, v],
        40,
        snapshots=1,
        schedule="multistage",
        disk_snapshots=4,
        directory=tmp_path,
    )
    assert len(os.listdir(tmp_path)) == 1
    del run
    gc.collect()
    assert os.listdir(tmp_path) == []


@pytest.mark.parametrize("mode", list(MODES))
def test_online_two_level_until(tmp_path, mode):
    in_place, options = MODES[mode]
    p = Problem(37, _FixedData())
    want, _ = per_step_reference(p)
    stop = lambda state, n: n == 37  # noqa: E731 - the length is known only as the rollout runs
    got, _, _, run = checkpointed(
        p, 3, in_place, schedule="two_level", period=10, directory=tmp_path, until=stop, **options
    )
    # `steps` was passed too (Problem.steps), so give an online run without it:
    assert_same(got, want)
    assert run.steps == 37 and os.listdir(tmp_path) == []


def test_online_store_all_without_steps():
    p = Problem(12, _FixedData())
    want, _ = per_step_reference(p)
    x, v, params, gravity = p.arrays()
    tape = wp.Tape()
    with tape:
        run = rollout(
            lambda s, n: in_place_step(s, n, params, gravity),
            [x, v],
            None,
            schedule="store_all",
            until=lambda s, n: n == 12,
            params=[params, gravity],
        )
        loss = p.loss(x, v)
    tape.backward(loss)
    assert run.steps == 12
    assert_same(grads(x, v, params, gravity), want)


def test_budget_larger_than_steps_is_fine():
    p = Problem(7, _FixedData())
    want, _ = per_step_reference(p)
    got, _, calls, run = checkpointed(p, 50, in_place=True)
    assert_same(got, want)
    assert run.summary.snapshots_held == 6 and calls == optimal_step_count(7, 6)


# -- summary and progress


def test_summary_and_progress(capsys):
    p = Problem(30, _FixedData())
    got, _, calls, run = checkpointed(p, 4, in_place=False, progress=True)
    s = run.summary
    assert (s.steps, s.steps_run, s.steps_reversed, s.snapshots_held) == (30, calls, 30, 4)
    assert s.ram_bytes == 4 * 2 * p.n * 24 and s.disk_bytes == 0 and s.state_bytes == 2 * p.n * 24
    assert "30 steps" in str(s)
    assert "rollout" in capsys.readouterr().err  # the tqdm bars


# -- composition: a torch op, Tape entries around the rollout


def test_loss_before_and_after_rollout_on_one_tape():
    """A kernel before the rollout produces the initial state; its gradient flows through the rollout."""
    p = Problem(9, _FixedData())
    want, _ = per_step_reference(p)
    x, v, params, gravity = p.arrays()
    x_src = wp.array(p.x0, dtype=wp.vec3d, requires_grad=True)
    tape = wp.Tape()
    with tape:
        wp.copy(x, x_src)
        rollout(lambda s, n: in_place_step(s, n, params, gravity), [x, v], 9, snapshots=2, params=[params, gravity])
        loss = p.loss(x, v)
    tape.backward(loss)
    assert_same([x_src.grad.numpy()], [want[0]])


@pytest.mark.skipif(importlib.util.find_spec("torch") is None, reason="needs torch (the torch extra)")
def test_inside_a_torch_op():
    import torch

    import warp_zerostore.torch as wpt

    p = Problem(25, _FixedData())
    want, _ = per_step_reference(p)

    @wpt.op(outputs={"x": "x0", "v": "v0"})
    def simulate(
        x0: wp.array(dtype=wp.vec3d),
        v0: wp.array(dtype=wp.vec3d),
        params: wp.array(dtype=F64),
        gravity: wp.array(dtype=F64),
        x: wp.array(dtype=wp.vec3d),
        v: wp.array(dtype=wp.vec3d),
    ):
        wp.copy(x, x0)
        wp.copy(v, v0)
        rollout(lambda s, n: in_place_step(s, n, params, gravity), [x, v], 25, snapshots=3, params=[params, gravity])

    tensors = [torch.tensor(a, requires_grad=True) for a in (p.x0, p.v0, p.params, p.gravity)]
    x, v = simulate(*tensors)
    w = torch.tensor(p.w)
    loss = ((w * x).sum(1) + 0.5 * (v * v).sum(1) + ((x * x).sum(1)) ** 2).sum()
    loss.backward()
    assert_same([t.grad.numpy() for t in tensors], want)


# -- errors


def test_zero_snapshots_is_an_error():
    x = wp.zeros(1, dtype=F64, requires_grad=True)
    with pytest.raises(CheckpointError, match=r"snapshots=0.*at least one snapshot"):
        rollout(lambda s, n: None, [x], 5, snapshots=0)


def test_state_without_requires_grad_is_an_error():
    x = wp.zeros(1, dtype=F64, requires_grad=True)
    y = wp.zeros(1, dtype=F64)
    with pytest.raises(CheckpointError, match=r"state\[1\] has requires_grad=False"):
        rollout(lambda s, n: None, [x, y], 5)
    rollout(lambda s, n: None, [x], 5).close()  # negative twin


class Particles:
    def __init__(self, n):
        self.x = wp.zeros(n, dtype=F64, requires_grad=True)
        self.count = 3  # not an array: not part of the state


@pytest.mark.parametrize("change", ["shape", "dtype"])
def test_step_changing_shape_or_dtype_is_an_error(change):
    state = Particles(4)

    def step(s, n):
        if n == 2:
            s.x = (
                wp.zeros(5, dtype=F64, requires_grad=True)
                if change == "shape"
                else wp.zeros(4, dtype=wp.float32, requires_grad=True)
            )

    with pytest.raises(
        CheckpointError, match=rf"step 2 changed state\.x from shape \(4,\).*{change}|step 2 changed state\.x"
    ):
        rollout(step, state, 5)


def test_step_rebinding_same_shape_is_fine():
    state = Particles(4)

    def step(s, n):
        s.x = wp.clone(s.x, requires_grad=True)

    run = rollout(step, state, 5, snapshots=2)
    assert run.state is state
    run.close()


def test_checking_tape_is_an_error_saying_how_to_combine():
    x = wp.zeros(1, dtype=F64, requires_grad=True)
    with pytest.raises(
        CheckpointError, match=r"check='warn'.*record the rollout on a Tape without checks.*pass check="
    ):
        with wp.Tape(check="warn"):
            rollout(lambda s, n: None, [x], 5)
    with wp.Tape():  # negative twin: a plain Tape records it
        rollout(lambda s, n: None, [x], 5)


def test_check_runs_on_each_reversed_step():
    x = wp.array([1.5], dtype=F64, requires_grad=True)

    def step(s, n):
        wp.launch(k.square_keep, dim=1, inputs=[s[0]])
        wp.launch(k.square_keep, dim=1, inputs=[s[0]])

    tape = wp.Tape()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", wp.OverwriteWarning)
        with tape:
            rollout(step, [x], 3, snapshots=1, check="warn")
        tape.backward(grads={x: wp.ones(1, dtype=F64)})
    # The local Tape of each reversed step reports the overwrite (and, as any checking Tape does, the stale
    # reads its snapshots make harmless).
    messages = [str(w.message) for w in caught if issubclass(w.category, wp.OverwriteWarning)]
    assert any(m.startswith("overwrite") and "square_keep" in m for m in messages)
    # Negative twin: check="off" (the default) says nothing.
    x = wp.array([1.5], dtype=F64, requires_grad=True)
    tape = wp.Tape()
    with warnings.catch_warnings():
        warnings.simplefilter("error", wp.OverwriteWarning)
        with tape:
            rollout(step, [x], 3, snapshots=1)
        tape.backward(grads={x: wp.ones(1, dtype=F64)})


def test_double_buffers_must_match():
    x = wp.zeros(3, dtype=F64, requires_grad=True)
    with pytest.raises(CheckpointError, match="same arrays"):
        rollout(lambda a, b, n: None, [x], 5, out=[wp.zeros(4, dtype=F64, requires_grad=True)])
    with pytest.raises(CheckpointError, match="must not share"):
        rollout(lambda a, b, n: None, [x], 5, out=[x])


def test_second_backward_is_an_error():
    x = wp.zeros(1, dtype=F64, requires_grad=True)
    tape = wp.Tape()
    with tape:
        rollout(lambda s, n: None, [x], 5)
    tape.backward(grads={x: wp.ones(1, dtype=F64)})
    with pytest.raises(CheckpointError, match="already reversed"):
        tape.backward(grads={x: wp.ones(1, dtype=F64)})
