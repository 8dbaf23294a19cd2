"""rollout(writes_input=False): a double-buffered step promises never to write its input state, so snapshots
are read in place and written by the step itself (no copies), and a broken promise is an error, not wrong
gradients.

Gradients under the promise are checked against a full Tape over the whole (T, s) grid in test_checkpoint.py;
here: which copies are left, and each check of the promise with its negative twin (a step that keeps it)."""

import numpy as np
import pytest
from helpers import kernels_checkpoint as k

import warp_zerostore as wp
from warp_zerostore.checkpoint import CheckpointError, rollout

cs = pytest.importorskip("checkpoint_schedules", reason="needs the checkpoint extra")

F64 = wp.float64
N = 5


def _arrays(steps, seed=0):
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


def _euler_rollout(steps, snapshots, **options):
    x, v, params, gravity = _arrays(steps)
    x0, v0 = x.numpy().copy(), v.numpy().copy()

    def step(a, b, n):
        wp.launch(k.euler_step, dim=N, inputs=[a[0], a[1], params, gravity, n, b[0], b[1]])

    out = [wp.empty_like(x, requires_grad=True), wp.empty_like(v, requires_grad=True)]
    tape = wp.Tape()
    with tape:
        run = rollout(step, [x, v], steps, snapshots=snapshots, params=[params, gravity], out=out, **options)
        loss = _loss(*run.state)
    tape.backward(loss)
    return run, [a.grad.numpy().copy() for a in (x, v, params, gravity)], (x, v, x0, v0)


def _copies_left(steps, snapshots):
    """The copies the promise leaves: snapshots taken right after a restore (no step wrote that state), and
    restores of state 0 (it must be back in ``state`` after the backward pass)."""
    actions = list(cs.MultistageCheckpointSchedule(steps, snapshots, 0))
    copies = 0
    for before, action in zip([None] + actions, actions):
        if isinstance(action, cs.Forward) and action.write_ics:
            written_by_a_step = isinstance(before, cs.Forward) and before.n1 == action.n0 and not before.write_adj_deps
            copies += not written_by_a_step
        elif isinstance(action, (cs.Copy, cs.Move)) and action.n == 0:
            copies += 1
    return copies


@pytest.mark.parametrize("steps,snapshots", [(7, 2), (30, 3), (100, 10)])
def test_the_promise_leaves_only_the_copies_no_step_could_make(steps, snapshots):
    run, got, (x, v, x0, v0) = _euler_rollout(steps, snapshots, writes_input=False)
    plain, want, _ = _euler_rollout(steps, snapshots)
    for g, w in zip(got, want):
        np.testing.assert_array_equal(g, w)  # the same launches on the same values: bit for bit
    assert run.summary.state_copies == _copies_left(steps, snapshots)
    assert run.summary.state_copies < plain.summary.state_copies
    assert run.summary.steps_run == plain.summary.steps_run
    assert run.summary.ram_bytes == plain.summary.ram_bytes  # snapshots written in place take no more memory
    np.testing.assert_array_equal(x.numpy(), x0)  # state 0 is back in `state`
    np.testing.assert_array_equal(v.numpy(), v0)


class ForceState:
    """x, v and a force field f, all state arrays."""

    def __init__(self, x, v):
        self.x = x
        self.v = v
        self.f = wp.zeros_like(x, requires_grad=True)


def _force_rollout(step_force, steps=12, **options):
    x, v, params, gravity = _arrays(steps, seed=3)

    def step(a, b, n):
        step_force(a, n, params, gravity)
        wp.launch(k.integrate_force, dim=N, inputs=[a.x, a.v, a.f, b.x, b.v])

    out = ForceState(wp.empty_like(x, requires_grad=True), wp.empty_like(v, requires_grad=True))
    tape = wp.Tape()
    with tape:
        run = rollout(step, ForceState(x, v), steps, snapshots=3, params=[params, gravity], out=out, **options)
        loss = _loss(run.state.x, run.state.v)
    tape.backward(loss)
    return x.grad.numpy()


def _force_from_step_3(a, n, params, gravity):
    if n >= 3:  # step 0 leaves its input alone: only the Tape check can see this one
        wp.launch(k.compute_force, dim=N, inputs=[a.x, a.v, params, gravity, n, a.f])


def _force_every_step(a, n, params, gravity):
    wp.launch(k.compute_force, dim=N, inputs=[a.x, a.v, params, gravity, n, a.f])


def _zero_velocity_every_step(a, n, params, gravity):
    a.v.zero_()  # a write no Tape records


@pytest.mark.parametrize(
    "step_force,where",
    [
        (_force_every_step, "step 0 changed state.f, an array of its input state (written by kernel 'compute_force'"),
        (_zero_velocity_every_step, "step 0 changed state.v, an array of its input state (written by no kernel launch"),
        (
            _force_from_step_3,
            "kernel 'compute_force', which writes (or may write) its argument 'f', and that is state.f",
        ),
    ],
    ids=["kernel at step 0", "zero_ at step 0", "kernel from step 3"],
)
def test_a_step_writing_its_input_breaks_the_promise(step_force, where):
    with pytest.raises(CheckpointError, match="writes_input=False") as caught:
        _force_rollout(step_force, writes_input=False)
    assert where in str(caught.value)
    assert "fields=" in str(caught.value)  # says what to do
    # Negative twin: without the promise the same step is fine (snapshots are copied).
    assert np.isfinite(_force_rollout(step_force)).all()


def test_a_step_keeping_the_promise_passes_both_checks():
    """Negative twin of the above: forces written into the *output* state's f, read from nowhere else."""

    def into_scratch(a, n, params, gravity):
        scratch = ForceState(a.x, a.v)  # a fresh f, not a state array
        wp.launch(k.compute_force, dim=N, inputs=[a.x, a.v, params, gravity, n, scratch.f])
        wp.launch(k.scale_all, dim=N, inputs=[scratch.f, scratch.f])

    grads = _force_rollout(into_scratch, writes_input=False)
    np.testing.assert_array_equal(grads, _force_rollout(into_scratch))


def test_the_promise_is_for_double_buffered_steps():
    x, v, params, gravity = _arrays(4)
    with pytest.raises(CheckpointError, match=r"writes_input=False\) is a promise for double-buffered steps"):
        rollout(lambda s, n: None, [x, v], 4, writes_input=False)


def test_a_step_rebinding_its_output_is_told_to_write_into_it():
    """With the promise a step's output arrays may be a snapshot's: rebinding one would leave the snapshot
    unwritten, so it is an error; the negative twin writes into the same array with wp.copy."""
    steps = 12
    x, v, params, gravity = _arrays(steps)

    def rebinding(a, b, n):
        b.x = wp.clone(a.x, requires_grad=True)
        b.v = wp.clone(a.v, requires_grad=True)

    def copying(a, b, n):
        wp.copy(b.x, a.x)
        wp.copy(b.v, a.v)

    state = ForceState(x, v)
    for step, fails in ((rebinding, True), (copying, False)):
        out = ForceState(wp.empty_like(x, requires_grad=True), wp.empty_like(v, requires_grad=True))
        if fails:
            with pytest.raises(CheckpointError, match=r"step \d+ rebound out\.x to another array"):
                rollout(step, state, steps, snapshots=3, out=out, writes_input=False)
        else:
            rollout(step, state, steps, snapshots=3, out=out, writes_input=False).close()
