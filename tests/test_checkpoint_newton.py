"""A real simulator as the client: a Newton spring system (ModelBuilder, SolverSemiImplicit on CPU), its
rollout checkpointed with warp_zerostore.checkpoint, against Newton's own full-Tape gradient (one State per
step, as Newton's diffsim examples do). Needs the newton extra (warp-lang >= 1.17)."""

import time

import numpy as np
import pytest

newton = pytest.importorskip(
    "newton", reason="needs the newton extra (newton==1.8.0, which needs warp-lang >= 1.17; .venv only)"
)
pytest.importorskip("checkpoint_schedules", reason="needs the checkpoint extra")

import warp  # noqa: E402

from warp_zerostore.checkpoint import optimal_step_count, rollout  # noqa: E402

STEPS, SNAPSHOTS, DT = 120, 4, 1.0 / 120.0
FIELDS = ["particle_q", "particle_qd"]


@warp.kernel
def distance_to_target(q: warp.array(dtype=warp.vec3), target: warp.vec3, loss: warp.array(dtype=float)):
    loss[0] = warp.length_sq(q[0] - target)


def spring_cage():
    """Newton's spring-cage example: one particle pulled by springs to fixed anchors (mass 0)."""
    builder = newton.ModelBuilder()
    builder.add_particle((0.0, 0.0, 0.0), (0.0, 0.0, 0.0), 1.0)
    anchors = [(0.2, -0.7, 0.8), (1.1, 0.0, 0.2), (-1.2, 0.1, 0.1), (0.4, 0.6, 0.4), (-0.2, 0.7, -0.9)]
    for anchor in anchors:
        builder.add_particle(anchor, (0.0, 0.0, 0.0), 0.0)
    for i in range(1, builder.particle_count):
        builder.add_spring(0, i, 100.0, 10.0, 0)
    model = builder.finalize(device="cpu", requires_grad=True)
    return model, newton.solvers.SolverSemiImplicit(model)


def newton_step(solver, control):
    def step(state_in, state_out, n):
        state_in.clear_forces()
        solver.step(state_in, state_out, control, None, DT)

    return step


def state_bytes(state):
    return sum(getattr(state, f).capacity for f in FIELDS)


@pytest.mark.parametrize("writes_input", [True, False], ids=["default", "writes_input_false"])
def test_newton_spring_cage_checkpointed_matches_full_tape(writes_input):
    """writes_input=False: the solver writes state_in.particle_f, which is not a state field here, so the
    promise holds and both of its checks pass on Newton's kernels."""
    target = warp.vec3(0.375, 0.125, 0.25)
    timings = {}

    # Newton's own way: one State per step on one Tape.
    model, solver = spring_cage()
    control = model.control()
    states = [model.state() for _ in range(STEPS + 1)]
    step = newton_step(solver, control)
    loss = warp.zeros(1, dtype=float, requires_grad=True)
    start = time.perf_counter()
    tape = warp.Tape()
    with tape:
        for n in range(STEPS):
            step(states[n], states[n + 1], n)
        warp.launch(distance_to_target, dim=1, inputs=[states[-1].particle_q, target, loss])
    tape.backward(loss)
    timings["full tape"] = time.perf_counter() - start
    want = [model.spring_rest_length.grad.numpy().copy(), states[0].particle_q.grad.numpy().copy()]
    full_bytes = 2 * (STEPS + 1) * state_bytes(states[0])  # values and gradients of every step's State

    # Checkpointed: two States, double-buffered, at most SNAPSHOTS snapshots.
    model, solver = spring_cage()
    control = model.control()
    s0, s1 = model.state(), model.state()
    loss = warp.zeros(1, dtype=float, requires_grad=True)
    start = time.perf_counter()
    tape = warp.Tape()
    with tape:
        run = rollout(
            newton_step(solver, control),
            s0,
            STEPS,
            snapshots=SNAPSHOTS,
            out=s1,
            fields=FIELDS,
            params=[model.spring_rest_length],
            writes_input=writes_input,
        )
        warp.launch(distance_to_target, dim=1, inputs=[run.state.particle_q, target, loss])
    tape.backward(loss)
    timings["checkpointed"] = time.perf_counter() - start
    got = [model.spring_rest_length.grad.numpy(), s0.particle_q.grad.numpy()]

    np.testing.assert_allclose(got[0], want[0], rtol=1e-5, atol=1e-6 * np.abs(want[0]).max())
    np.testing.assert_allclose(got[1], want[1], rtol=1e-5, atol=1e-6 * np.abs(want[1]).max())
    assert np.abs(want[0]).max() > 0
    assert run.summary.steps_run == optimal_step_count(STEPS, SNAPSHOTS)
    checkpointed_bytes = run.summary.ram_bytes + 2 * 2 * state_bytes(s0)  # snapshots + two States + gradients
    assert checkpointed_bytes < full_bytes / 10
    print(
        f"\nNewton spring cage, {STEPS} steps: full Tape holds {full_bytes} B of state values and gradients, "
        f"checkpointed {checkpointed_bytes} B ({run.summary}); time {timings}"
    )


def test_newton_forces_in_the_state_break_the_writes_input_promise():
    """Negative twin of the writes_input=False case above: with particle_f in the state, the solver writes its
    input state (it accumulates spring forces into state_in.particle_f). The springs start at rest, so step 0
    leaves particle_f zero and the value check cannot see it; the launch check on the first reversed step does."""
    from warp_zerostore.checkpoint import CheckpointError

    model, solver = spring_cage()
    s0, s1 = model.state(), model.state()
    tape = warp.Tape()
    with pytest.raises(CheckpointError, match=r"kernel 'eval_spring'.*state\.particle_f.*fields="):
        with tape:
            run = rollout(
                newton_step(solver, model.control()),
                s0,
                STEPS,
                snapshots=SNAPSHOTS,
                out=s1,
                fields=FIELDS + ["particle_f"],
                writes_input=False,
            )
        run.state.particle_q.grad.fill_(1.0)
        tape.backward()
