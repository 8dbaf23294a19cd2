"""The process default reaches kernels inside libraries the user cannot edit: warp.sim (warp-lang 1.9)."""

import importlib.util
import warnings

import numpy as np
import pytest

import warp_zerostore as wp

with warnings.catch_warnings():
    warnings.simplefilter("ignore")
    HAS_SIM = importlib.util.find_spec("warp.sim") is not None

pytestmark = pytest.mark.skipif(not HAS_SIM, reason="warp.sim was removed after warp-lang 1.9")


def simulate_and_differentiate():
    import warp_zerostore.sim as sim  # noqa: PLC0415

    builder = sim.ModelBuilder()
    for i in range(4):
        builder.add_particle(pos=(float(i), 1.0, 0.0), vel=(0.1 * i, 0.0, 0.0), mass=1.0)
    builder.add_spring(0, 1, 100.0, 1.0, 0)
    builder.add_spring(1, 2, 100.0, 1.0, 0)
    builder.add_spring(2, 3, 100.0, 1.0, 0)
    model = builder.finalize(requires_grad=True)
    model.ground = False
    integrator = sim.SemiImplicitIntegrator()
    states = [model.state(requires_grad=True) for _ in range(6)]
    with wp.Tape() as tape:
        for k in range(5):
            states[k].clear_forces()
            integrator.simulate(model, states[k], states[k + 1], 1e-2)
    seed = wp.array(np.ones((4, 3), dtype=np.float32), dtype=wp.vec3)
    tape.backward(grads={states[5].particle_q: seed})
    kernel = sim.integrator_euler.eval_springs
    return wp.effective_zero_store(kernel), states[0].particle_q.grad.numpy(), states[0].particle_qd.grad.numpy()


def test_process_default_reaches_warp_sim(process_default):
    """One line flags every warp.sim kernel; a simulation without overwrites differentiates the same in both
    modes, so zeroing breaks nothing there."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        process_default(True)
        mode_true, q_true, qd_true = simulate_and_differentiate()
        process_default(False)
        mode_false, q_false, qd_false = simulate_and_differentiate()
    assert (mode_true, mode_false) == (True, False)
    assert np.abs(qd_true).sum() > 0
    np.testing.assert_allclose(q_true, q_false, rtol=1e-5)
    np.testing.assert_allclose(qd_true, qd_false, rtol=1e-5)
