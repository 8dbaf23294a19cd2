"""A checkpointed Newton Featherstone rollout is right by default: the two-hinge chain of
tests/helpers/newton_chain.py over 2 and 5 steps, with and without an external wrench, double-buffered. Each
step's ``eval_rigid_tau`` reads ``body_f_ext`` and then overwrites it; the rollout reverses such a step on a
snapshotting Tape without being asked. Reference: central differences of the untaped rollout (float32, eps
1e-3); within 1 % (norm of the difference over the norm of the differences).

Newton needs warp-lang >= 1.17; these tests skip where it is not installed (the 1.9-1.12 matrix venvs)."""

import warnings

import numpy as np
import pytest

newton = pytest.importorskip("newton", reason="newton is not installed (pip install -e '.[newton]', warp-lang >= 1.17)")
pytest.importorskip("checkpoint_schedules", reason="needs the checkpoint extra")

from helpers import newton_chain  # noqa: E402

import warp_zerostore as wp  # noqa: E402

Q = [0.3, -0.4]
QD = [1.0, -0.5]  # the initial joint velocity


@pytest.fixture(scope="module")
def chain():
    model = newton_chain.chain_model("cpu")
    return model, newton.solvers.SolverFeatherstone(model)


def relative_error(got, want):
    return float(np.linalg.norm(got - want) / np.linalg.norm(want))


@pytest.mark.parametrize("steps", [2, 5])
@pytest.mark.parametrize("wrench", [True, False], ids=["wrench", "no_wrench"])
def test_featherstone_rollout_matches_central_differences_by_default(chain, wrench, steps):
    model, solver = chain
    want = newton_chain.rollout_central_differences(model, solver, Q, QD, wrench, steps)
    with warnings.catch_warnings():
        # eval_rigid_tau's read of body_ft_s before and after its own write, which the snapshot Tape names
        warnings.simplefilter("ignore", wp.OverwriteWarning)
        got, run = newton_chain.checkpointed_gradient(model, solver, Q, QD, wrench, steps)
    assert relative_error(got, want) < 0.01, (got, want)
    assert run.summary.steps_snapshotted == steps  # every step overwrites body_f_ext after reading it


def test_featherstone_rollout_on_plain_tapes_is_wrong_with_the_wrench(chain):
    """What the default used to be (snapshot_step=False for double-buffered steps): with the wrench the read
    of body_f_ext matters, and a plain Tape per step is several percent off."""
    model, solver = chain
    want = newton_chain.rollout_central_differences(model, solver, Q, QD, True, 5)
    got, run = newton_chain.checkpointed_gradient(model, solver, Q, QD, True, 5, snapshot_step=False)
    assert relative_error(got, want) > 0.02 and run.summary.steps_snapshotted == 0
