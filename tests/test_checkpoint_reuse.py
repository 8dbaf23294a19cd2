"""What the reverse sweep of a double-buffered rollout does not redo, and the cases where it must:

* a snapshot the schedule moves back is read in place by the step it was taken before (no copy into the work
  buffer), also when the step writes into its input state, and state 0 is left in ``state`` after the backward;
* the output buffer's gradient is not zeroed again when the step's backward provably left it zero
  (``checkpoint.zeroed.left_zero``), with a negative twin for each condition of the proof.

Gradients are compared with a plain Tape holding one state per step (float64, 1e-12)."""

import numpy as np
import pytest
from helpers import kernels_checkpoint as k

import warp_zerostore as wp
from warp_zerostore import _compat
from warp_zerostore.checkpoint import rollout
from warp_zerostore.checkpoint.zeroed import left_zero

pytest.importorskip("checkpoint_schedules", reason="needs the checkpoint extra")

F64 = wp.float64
N = 5


def _data(steps, seed=0):
    rng = np.random.default_rng(seed)
    return (
        rng.uniform(-1, 1, (N, 3)),
        rng.uniform(-1, 1, (N, 3)),
        np.array([1.3, 0.2]),
        rng.uniform(-1, 1, steps),
        rng.uniform(-1, 1, (N, 3)),
    )


def _loss(x, v, w):
    loss = wp.zeros(1, dtype=F64, requires_grad=True)
    wp.launch(k.loss_kernel, dim=N, inputs=[x, v, wp.array(w, dtype=wp.vec3d), loss])
    return loss


def _arrays(data):
    x0, v0, p, g, _ = data
    return (
        wp.array(x0, dtype=wp.vec3d, requires_grad=True),
        wp.array(v0, dtype=wp.vec3d, requires_grad=True),
        wp.array(p, dtype=F64, requires_grad=True),
        wp.array(g, dtype=F64, requires_grad=True),
    )


def _grads(*arrays):
    return [a.grad.numpy().copy() for a in arrays]


def _same(got, want):
    for g, w in zip(got, want):
        np.testing.assert_allclose(g, w, rtol=1e-12, atol=1e-12 * max(np.abs(w).max(), 1e-300))


def reference(kernel, data, steps):
    x, v, params, gravity = _arrays(data)
    xs, vs = [x], [v]
    tape = wp.Tape()
    with tape:
        for n in range(steps):
            xs.append(wp.empty_like(x, requires_grad=True))
            vs.append(wp.empty_like(v, requires_grad=True))
            wp.launch(kernel, dim=N, inputs=[xs[n], vs[n], params, gravity, n, xs[n + 1], vs[n + 1]])
        loss = _loss(xs[-1], vs[-1], data[4])
    tape.backward(loss)
    return _grads(x, v, params, gravity)


def checkpointed(kernel, data, steps, snapshots, in_place=False):
    """The rollout through ``rollout()``: double-buffered with ``kernel``, or in place (kick, drift)."""
    x, v, params, gravity = _arrays(data)
    if in_place:

        def step(s, n):
            wp.launch(k.kick_in_place, dim=N, inputs=[s[0], s[1], params, gravity, n])
            wp.launch(k.drift_in_place, dim=N, inputs=[s[0], s[1]])

        out = None
    else:

        def step(a, b, n):
            wp.launch(kernel, dim=N, inputs=[a[0], a[1], params, gravity, n, b[0], b[1]])

        out = [wp.empty_like(x, requires_grad=True), wp.empty_like(v, requires_grad=True)]
    tape = wp.Tape()
    with tape:
        run = rollout(step, [x, v], steps, snapshots=snapshots, params=[params, gravity], out=out)
        loss = _loss(*run.state, data[4])
    tape.backward(loss)
    return _grads(x, v, params, gravity), (x, v), run


@pytest.mark.parametrize("kernel", [k.euler_step, k.euler_step_accumulate], ids=["zeroing", "accumulating"])
@pytest.mark.parametrize("steps,snapshots", [(7, 2), (30, 3)])
def test_gradients_with_and_without_a_zeroing_step(kernel, steps, snapshots):
    """euler_step's store adjoint zeroes on Warp >= 1.13 (the skip applies there); the accumulating twin keeps
    what it consumed, so its output gradient must be zeroed before the next reversal: both match the reference."""
    data = _data(steps)
    got, (x, v), _ = checkpointed(kernel, data, steps, snapshots)
    _same(got, reference(kernel, data, steps))
    # state 0 is back in the state buffer after the reverse sweep
    np.testing.assert_array_equal(x.numpy(), data[0])
    np.testing.assert_array_equal(v.numpy(), data[1])


class ForceState:
    """A state object whose force field the step writes while reading the state (as Newton's solvers do)."""

    def __init__(self, x, v):
        self.x = x
        self.v = v
        self.f = wp.zeros_like(x, requires_grad=True)
        self.label = "not an array"


@pytest.mark.parametrize("steps,snapshots", [(7, 2), (30, 3)])
def test_step_writing_its_input_state_through_moved_and_copied_snapshots(steps, snapshots):
    """The step stores forces into state_in.f: a snapshot read in place must be one the schedule deletes (Move),
    never one it keeps (Copy), or later restores would see the overwritten force field."""
    data = _data(steps, seed=1)
    x0, v0, p, g, w = data

    def step(a, b, n):
        assert a.label == "not an array"  # the in-place view keeps the object's other attributes
        wp.launch(k.compute_force, dim=N, inputs=[a.x, a.v, params, gravity, n, a.f])
        wp.launch(k.integrate_force, dim=N, inputs=[a.x, a.v, a.f, b.x, b.v])

    # reference: one state object per step
    x, v, params, gravity = _arrays(data)
    states = [ForceState(x, v)]
    tape = wp.Tape()
    with tape:
        for n in range(steps):
            states.append(ForceState(wp.empty_like(x, requires_grad=True), wp.empty_like(v, requires_grad=True)))
            step(states[n], states[n + 1], n)
        loss = _loss(states[-1].x, states[-1].v, w)
    tape.backward(loss)
    want = _grads(x, v, params, gravity)

    x, v, params, gravity = _arrays(data)
    state = ForceState(x, v)
    out = ForceState(wp.empty_like(x, requires_grad=True), wp.empty_like(v, requires_grad=True))
    tape = wp.Tape()
    with tape:
        run = rollout(step, state, steps, snapshots=snapshots, params=[params, gravity], out=out)
        loss = _loss(run.state.x, run.state.v, w)
    tape.backward(loss)
    _same(_grads(x, v, params, gravity), want)


# -- left_zero: the proof, one condition at a time


def _pair():
    x = wp.array(np.ones((4, 3)), dtype=wp.vec3d, requires_grad=True)
    y = wp.zeros_like(x, requires_grad=True)
    return x, y


def _taped(*launches):
    tape = wp.Tape()
    with tape:
        for kernel, dim, inputs in launches:
            wp.launch(kernel, dim=dim, inputs=inputs)
    return tape


def test_full_zeroing_store_is_left_zero():
    x, y = _pair()
    assert left_zero(_taped((k.scale_all, 4, [x, y])), [y]) == {id(y)}
    # and it is: the backward consumed y.grad
    tape = _taped((k.scale_all, 4, [x, y]))
    y.grad.fill_(1.0)
    tape.backward()
    assert not y.grad.numpy().any()


@pytest.mark.parametrize(
    "case", ["partial store", "accumulating adjoint", "short launch", "touched twice", "a view", "record_func"]
)
def test_left_zero_negative_twins(case):
    x, y = _pair()
    if case == "partial store":
        tape = _taped((k.scale_some, 4, [x, y]))
    elif case == "accumulating adjoint":
        tape = _taped((k.scale_all_accumulate, 4, [x, y]))
    elif case == "short launch":
        tape = _taped((k.scale_all, 3, [x, y]))
    elif case == "touched twice":
        tape = _taped((k.scale_all, 4, [x, y]), (k.scale_all, 4, [y, wp.zeros_like(y, requires_grad=True)]))
    elif case == "a view":
        tape = _taped(
            (k.scale_all, 4, [x, y]), (k.scale_all, 2, [y[1:3], wp.zeros(2, dtype=wp.vec3d, requires_grad=True)])
        )
    else:
        tape = _taped((k.scale_all, 4, [x, y]))
        tape.record_func(backward=lambda: None, arrays=[y])
    assert left_zero(tape, [y]) == set()


@pytest.mark.skipif(not _compat.HAS_RETAIN_GRAD, reason="retain_grad arrays exist from warp-lang 1.13")
def test_retain_grad_array_is_never_left_zero():
    x = wp.array(np.ones((4, 3)), dtype=wp.vec3d, requires_grad=True)
    y = wp.zeros(4, dtype=wp.vec3d, requires_grad=True, retain_grad=True)
    assert left_zero(_taped((k.scale_all, 4, [x, y])), [y]) == set()


@pytest.mark.parametrize("in_place", [True, False], ids=["in_place", "double_buffered"])
def test_state_copies_are_the_schedules_writes_and_restores(in_place):
    """summary.state_copies counts what the executor copied: every snapshot write and every restore in place;
    double-buffered, moved snapshots (but the one of state 0) are read in place, not copied."""
    import checkpoint_schedules as cs

    steps, snapshots = 30, 3
    actions = list(cs.MultistageCheckpointSchedule(steps, snapshots, 0))
    writes = sum(isinstance(a, cs.Forward) and a.write_ics for a in actions)
    kept = sum(isinstance(a, cs.Copy) for a in actions)
    moved = [a.n for a in actions if isinstance(a, cs.Move)]
    _, _, run = checkpointed(k.euler_step, _data(steps, seed=2), steps, snapshots, in_place=in_place)
    expected = writes + kept + (len(moved) if in_place else moved.count(0))
    assert run.summary.state_copies == expected
    assert f"{expected} state copies" in str(run.summary)
