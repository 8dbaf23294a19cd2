"""Newton programs for the Tape-safety tests and benchmark: a two-hinge Featherstone chain with an external
wrench on its bodies (``State.body_f``), and Newton's forward kinematics. Imports Newton: callers skip when it
is absent."""

import newton
import numpy as np
import warp

DT = 0.01
WEIGHTS = (1.0, -2.0, 0.5, 3.0)  # loss = WEIGHTS . (joint_q, joint_qd) after one step
WRENCH = ((0.3, -0.2, 0.5, 0.1, 0.4, -0.3), (-0.4, 0.6, 0.2, -0.2, 0.1, 0.5))  # per body: force, torque


def chain_model(device="cpu"):
    """Two links hinged about y, one after the other, under gravity."""
    builder = newton.ModelBuilder(up_axis=newton.Axis.Z)
    inertia = warp.mat33(np.eye(3) * 0.1)
    first = builder.add_link(mass=1.0, inertia=inertia, com=warp.vec3(0.5, 0.0, 0.0))
    second = builder.add_link(mass=1.0, inertia=inertia, com=warp.vec3(0.5, 0.0, 0.0))
    j0 = builder.add_joint_revolute(-1, first, axis=newton.Axis.Y)
    j1 = builder.add_joint_revolute(
        first, second, axis=newton.Axis.Y, parent_xform=warp.transform(warp.vec3(1.0, 0.0, 0.0), warp.quat_identity())
    )
    builder.add_articulation([j0, j1])
    builder.joint_q[:] = [0.3, -0.4]
    builder.joint_qd[:] = [0.2, 0.1]
    return builder.finalize(device=device, requires_grad=True)


def chain_state(model, joint_q):
    """A state at ``joint_q`` (and the model's joint_qd), with the external wrench on both bodies."""
    state = model.state(requires_grad=True)
    state.joint_q.assign(np.asarray(joint_q, dtype=np.float32))
    newton.eval_fk(model, state.joint_q, state.joint_qd, state)
    state.body_f.assign(np.asarray(WRENCH, dtype=np.float32))
    return state


def chain_loss(model, solver, joint_q, tape=None):
    """The loss after one step from ``joint_q``; with ``tape``, recorded on it (state returned for backward)."""
    state = chain_state(model, joint_q)
    out = model.state(requires_grad=True)
    control = model.control()
    if tape is None:
        solver.step(state, out, control, None, DT)
    else:
        with tape:
            solver.step(state, out, control, None, DT)
    value = float(np.dot(WEIGHTS, np.concatenate([out.joint_q.numpy(), out.joint_qd.numpy()])))
    return value, state, out


def chain_gradient(model, solver, joint_q, tape):
    """d loss / d joint_q through ``tape`` (a Warp or warp_zerostore Tape)."""
    _, state, out = chain_loss(model, solver, joint_q, tape)
    weights_q = warp.array(np.asarray(WEIGHTS[:2], dtype=np.float32), dtype=float, device=model.device)
    weights_qd = warp.array(np.asarray(WEIGHTS[2:], dtype=np.float32), dtype=float, device=model.device)
    tape.backward(grads={out.joint_q: weights_q, out.joint_qd: weights_qd})
    return state.joint_q.grad.numpy().copy()


def chain_central_differences(model, solver, joint_q, eps=1e-3):
    grad = []
    for i in range(len(joint_q)):
        up, down = np.array(joint_q, dtype=np.float64), np.array(joint_q, dtype=np.float64)
        up[i] += eps
        down[i] -= eps
        grad.append((chain_loss(model, solver, up)[0] - chain_loss(model, solver, down)[0]) / (2 * eps))
    return np.array(grad)


# -- several steps (the checkpointed rollout's tests): loss = WEIGHTS . (joint_q, joint_qd) after ``steps`` steps


def rollout_state(model, joint_q, joint_qd, wrench):
    """A state at ``joint_q``, ``joint_qd``, with the external wrench on both bodies or none."""
    state = model.state(requires_grad=True)
    state.joint_q.assign(np.asarray(joint_q, dtype=np.float32))
    state.joint_qd.assign(np.asarray(joint_qd, dtype=np.float32))
    newton.eval_fk(model, state.joint_q, state.joint_qd, state)
    if wrench:
        state.body_f.assign(np.asarray(WRENCH, dtype=np.float32))
    return state


def rollout_loss(model, solver, joint_q, joint_qd, wrench, steps):
    """The loss after ``steps`` steps from ``joint_q``, double-buffered, with no Tape."""
    control = model.control()
    a, b = (rollout_state(model, joint_q, joint_qd, wrench) for _ in range(2))
    for _ in range(steps):
        solver.step(a, b, control, None, DT)
        a, b = b, a
    return float(np.dot(WEIGHTS, np.concatenate([a.joint_q.numpy(), a.joint_qd.numpy()])))


def rollout_central_differences(model, solver, joint_q, joint_qd, wrench, steps, eps=1e-3):
    grad = []
    for i in range(len(joint_q)):
        up, down = np.array(joint_q, dtype=np.float64), np.array(joint_q, dtype=np.float64)
        up[i] += eps
        down[i] -= eps
        losses = [rollout_loss(model, solver, q, joint_qd, wrench, steps) for q in (up, down)]
        grad.append((losses[0] - losses[1]) / (2 * eps))
    return np.array(grad)


def checkpointed_gradient(model, solver, joint_q, joint_qd, wrench, steps, snapshots=2, **options):
    """d loss / d joint_q through ``warp_zerostore.checkpoint.rollout`` (joint_q and joint_qd are the state);
    returns the gradient and the Rollout."""
    from warp_zerostore.checkpoint import rollout  # noqa: PLC0415

    control = model.control()
    s0, s1 = (rollout_state(model, joint_q, joint_qd, wrench) for _ in range(2))
    tape = warp.Tape()
    with tape:
        run = rollout(
            lambda a, b, n: solver.step(a, b, control, None, DT),
            s0,
            steps,
            snapshots=snapshots,
            out=s1,
            fields=["joint_q", "joint_qd"],
            **options,
        )
    weights_q = warp.array(np.asarray(WEIGHTS[:2], dtype=np.float32), dtype=float, device=model.device)
    weights_qd = warp.array(np.asarray(WEIGHTS[2:], dtype=np.float32), dtype=float, device=model.device)
    tape.backward(grads={run.state.joint_q: weights_q, run.state.joint_qd: weights_qd})
    return s0.joint_q.grad.numpy().copy(), run
