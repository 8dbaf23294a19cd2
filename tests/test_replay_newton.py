"""The replay log on Newton: Featherstone stores its mass matrices M and P through @wp.func helpers, which Warp's
backward re-runs into memory, undoing Tape(snapshot=True)'s restores. With every kernel flagged
(``config.zero_store = True``), one snapshotting Tape over several double-buffered steps matches central
differences within 1 % (1.3 % at 2 steps and 2.9 % at 5 before the replay log; stock Warp 2.6 % and 8.4 %).

Newton needs warp-lang >= 1.17; these tests skip where it is not installed (the 1.9-1.12 matrix venvs)."""

import warnings

import numpy as np
import pytest

newton = pytest.importorskip("newton", reason="newton is not installed (pip install -e '.[newton]', warp-lang >= 1.17)")

import warp  # noqa: E402
from helpers import newton_chain  # noqa: E402

import warp_zerostore as wp  # noqa: E402

Q = [0.3, -0.4]
QD = [1.0, -0.5]


@pytest.fixture(scope="module")
def chain():
    model = newton_chain.chain_model("cpu")
    return model, newton.solvers.SolverFeatherstone(model)


def taped_gradient(model, solver, wrench, steps, tape):
    control = model.control()
    states = [newton_chain.rollout_state(model, Q, QD, wrench)]
    states += [model.state(requires_grad=True) for _ in range(steps)]
    for s in states[1:]:
        s.body_f.assign(states[0].body_f)
    with tape:
        for n in range(steps):
            solver.step(states[n], states[n + 1], control, None, newton_chain.DT)
    last = states[-1]
    w = newton_chain.WEIGHTS
    tape.backward(
        grads={
            last.joint_q: warp.array(np.asarray(w[:2], dtype=np.float32), dtype=float),
            last.joint_qd: warp.array(np.asarray(w[2:], dtype=np.float32), dtype=float),
        }
    )
    return states[0].joint_q.grad.numpy().astype(np.float64)


@pytest.mark.parametrize("wrench", [False, True], ids=["no wrench", "wrench"])
@pytest.mark.parametrize("steps", [2, 5])
def test_featherstone_snapshot_tape_over_several_steps_is_within_one_percent(chain, process_default, steps, wrench):
    model, solver = chain
    process_default(True)
    fd = newton_chain.rollout_central_differences(model, solver, Q, QD, wrench, steps)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", wp.OverwriteWarning)
        grad = taped_gradient(model, solver, wrench, steps, wp.Tape(snapshot=True))
    error = np.linalg.norm(grad - fd) / np.linalg.norm(fd)
    assert error < 0.01, (grad, fd, error)


@pytest.mark.parametrize("wrench", [False, True], ids=["no wrench", "wrench"])
def test_featherstone_unflagged_on_the_snapshot_tape_is_within_one_percent_or_names_a_kernel(chain, wrench):
    # Stock Warp's backward re-runs Featherstone's helper stores (M, P) into memory, which no snapshot undoes:
    # the snapshot Tape must then say so by kernel name (never worse than stock's plain Tape, 8.4 % here).
    model, solver = chain
    fd = newton_chain.rollout_central_differences(model, solver, Q, QD, wrench, 5)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        grad = taped_gradient(model, solver, wrench, 5, wp.Tape(snapshot=True))
        plain = taped_gradient(model, solver, wrench, 5, warp.Tape())
    error = np.linalg.norm(grad - fd) / np.linalg.norm(fd)
    plain_error = np.linalg.norm(plain - fd) / np.linalg.norm(fd)
    named = [
        str(w.message)
        for w in caught
        if issubclass(w.category, wp.OverwriteWarning) and str(w.message).startswith("read before and after write")
    ]
    assert error < 0.01 or named, (grad, fd, error)
    assert error <= plain_error, (error, plain_error)


@pytest.mark.parametrize("snapshot", [False, True], ids=["plain", "snapshot"])
def test_flagged_featherstone_is_not_warned_where_its_gradient_is_right(chain, process_default, snapshot):
    """Every Featherstone kernel flagged, 5 steps: the replay reports nothing for the backward each Tape runs, and
    the adjoint lint nothing (they named eval_rigid_tau's and the forward kinematics' runtime-loop reads, Newton's
    dense_solve helper, and eval_rigid_jacobian's tree walk, whose gradients are right: the snapshot Tape is within
    1 % of central differences, above). The plain Tape's error is an in-place update's, which stock has too and
    `Tape(snapshot=True)` removes."""
    from warp_zerostore import _compat  # noqa: PLC0415
    from warp_zerostore.codegen import pre_twin, replay_records
    from warp_zerostore.lints import adjoint_bugs  # noqa: PLC0415

    model, solver = chain
    process_default(True)
    tape = wp.Tape(snapshot=snapshot)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", wp.OverwriteWarning)
        taped_gradient(model, solver, True, 5, tape)
    kernels = _compat.tape_kernels(tape)
    assert len(kernels) > 5
    for kernel in kernels:
        found = replay_records.issues(kernel, pre_twin.replay_memory(kernel))
        assert not found, found
        assert adjoint_bugs.find(_compat.kernel_tree(kernel)) == [], kernel.key
