"""check_gradients' finite-difference steps, gradient resets and tolerance scales.

Every case that must fail is paired with the correct kernel under the same call, which must pass.
"""

import numpy as np
import pytest
from helpers import kernels_checks as K

import warp_zerostore as wp
from warp_zerostore.testing import GradientMismatch, check_gradients

MODES = ["vjp", "jvp"]


def arr(values, device, requires_grad=True):
    return wp.array(np.asarray(values, dtype=np.float64), dtype=float, requires_grad=requires_grad, device=device)


# -- item 4: one large input does not set every input's step ---------------------------------------------------


def cube_plus_small(x, k, y):
    wp.launch(K.cube_plus_small, dim=x.shape, inputs=[x, k, y], device=x.device)


def spring_chain(x, k, e):
    wp.launch(K.spring_energy, dim=e.shape, inputs=[x, k, e], device=x.device)


@pytest.mark.parametrize("mode", MODES)
def test_large_parameter_does_not_break_small_inputs(device, mode):
    inputs = [arr([0.5, -0.4], device), arr([1000.0, 1000.0], device), arr([0.0, 0.0], device)]
    check_gradients(cube_plus_small, inputs, mode=mode, seed=0)


@pytest.mark.parametrize("mode", MODES)
def test_stiff_spring_chain_passes(device, mode):
    x = arr([0.0, 1.1, 2.05, 3.2, 4.1], device)
    inputs = [x, arr([1000.0] * 4, device), arr([0.0] * 4, device)]
    for seed in range(3):
        check_gradients(spring_chain, inputs, mode=mode, seed=seed)


def test_message_prints_the_steps_used(device):
    """A broken kernel's message shows the step range actually taken, per input element."""

    def broken(x, k, y):
        wp.launch(K.sin_bad_kernel, dim=x.shape, inputs=[x, y], device=x.device)

    inputs = [arr([0.5, -0.4], device), arr([1000.0, 1000.0], device), arr([0.0, 0.0], device)]
    with pytest.raises(GradientMismatch) as info:
        check_gradients(broken, inputs, mode="jvp")
    # x's elements step by 5e-3 (|x| < 1), k's by 5e-3 * 1000 = 5
    assert "steps 0.005 * max(1, |x|) per input element: 0.005 to 5," in str(info.value)
    with pytest.raises(GradientMismatch) as info:
        check_gradients(broken, inputs, mode="vjp")
    assert "step 0.005 (0.005 * max(1, |x|) at this element)" in str(info.value)


# -- item 5: gradients of arrays that are not inputs start at zero ---------------------------------------------

F = wp.zeros(2, dtype=float, requires_grad=True)


def through_module_buffer(x, y):
    F.zero_()
    wp.launch(K.accumulate_square, dim=x.shape, inputs=[x, F], device=x.device)
    wp.launch(K.half, dim=x.shape, inputs=[F, y], device=x.device)


def test_module_level_buffer_gradient_does_not_leak_between_calls():
    inputs = [arr([1.2, -0.7], "cpu"), arr([0.0, 0.0], "cpu")]
    for mode in ["vjp", "vjp", "jvp", "vjp", "jvp"]:
        check_gradients(through_module_buffer, inputs, mode=mode, seed=1)


def test_module_level_buffer_wrong_math_still_fails():
    """Twin: the reset does not hide a wrong gradient through the same buffer (y = F instead of 0.5 F
    has a wrong adjoint only if we lie; so break it with the 2x sin instead)."""

    def wrong(x, y):
        F.zero_()
        wp.launch(K.accumulate_square, dim=x.shape, inputs=[x, F], device=x.device)
        wp.launch(K.sin_bad_kernel, dim=x.shape, inputs=[F, y], device=x.device)

    inputs = [arr([1.2, -0.7], "cpu"), arr([0.0, 0.0], "cpu")]
    for mode in MODES:
        with pytest.raises(GradientMismatch):
            check_gradients(wrong, inputs, mode=mode, seed=1)


# -- item 6: one stiff output does not hide a wrong adjoint elsewhere -------------------------------------------


def two_outputs(kernel):
    def f(x, w, y, z):
        wp.launch(kernel, dim=x.shape, inputs=[x, w, y, z], device=x.device)

    f.__qualname__ = kernel.key
    return f


def one_input(kernel):
    def f(x, y, z):
        wp.launch(kernel, dim=x.shape, inputs=[x, y, z], device=x.device)

    f.__qualname__ = kernel.key
    return f


def two_output_inputs(device, seed):
    rng = np.random.default_rng(seed)
    x, w = rng.uniform(-1, 1, 4), rng.uniform(-1.5, 1.5, 4)
    return [arr(x, device), arr(w, device), arr(np.zeros(4), device), arr(np.zeros(4), device)]


@pytest.mark.parametrize("mode", MODES)
def test_stiff_output_does_not_hide_a_wrong_adjoint(device, mode):
    for seed in range(5):
        with pytest.raises(GradientMismatch, match="'z'|'w'"):
            check_gradients(two_outputs(K.stiff_and_bad), two_output_inputs(device, seed), mode=mode, seed=seed)


@pytest.mark.parametrize("mode", MODES)
def test_stiff_output_beside_a_correct_one_passes(device, mode):
    for seed in range(5):
        check_gradients(two_outputs(K.stiff_and_good), two_output_inputs(device, seed), mode=mode, seed=seed)


def test_stiff_output_of_the_same_input_does_not_hide_a_wrong_adjoint(device):
    for seed in range(5):
        x = np.random.default_rng(seed).uniform(-1.5, 1.5, 4)
        inputs = [arr(x, device), arr(np.zeros(4), device), arr(np.zeros(4), device)]
        with pytest.raises(GradientMismatch, match="output 'z'"):
            check_gradients(one_input(K.stiff_and_bad_one_input), inputs, seed=seed)
