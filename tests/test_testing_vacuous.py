"""check_gradients never passes without checking, and says why it refuses.

Each refusal or newly checked case has a negative twin: a correct kernel under the same call passes.
"""

import numpy as np
import pytest
from helpers import kernels_checks as K

import warp_zerostore as wp
from warp_zerostore.testing import GradientMismatch, check_gradients

MODES = ["vjp", "jvp"]


def xy(device, requires_y=True):
    x = wp.array(np.array([0.5, -1.25, 2.0]), dtype=float, requires_grad=True, device=device)
    y = wp.zeros(3, dtype=float, requires_grad=requires_y, device=device)
    return x, y


def sin_of(kernel):
    def f(x, y):
        wp.launch(kernel, dim=x.shape, inputs=[x, y], device=x.device)

    f.__qualname__ = f"f_{kernel.key}"
    return f


# -- item 3: outputs=[] ---------------------------------------------------------------------------------------


@pytest.mark.parametrize("mode", MODES)
def test_empty_outputs_is_refused_naming_outputs(device, mode):
    with pytest.raises(ValueError, match=r"outputs=\[\] .*nothing to compare"):
        check_gradients(sin_of(K.sin_bad_kernel), xy(device), outputs=[], mode=mode)


@pytest.mark.parametrize("mode", MODES)
def test_named_output_is_checked(device, mode):
    """Twin: naming the output checks it (and catches the broken adjoint)."""
    with pytest.raises(GradientMismatch):
        check_gradients(sin_of(K.sin_bad_kernel), xy(device), outputs=["y"], mode=mode)
    check_gradients(sin_of(K.sin_good_kernel), xy(device), outputs=["y"], mode=mode)


# -- item 3: negative tolerances ------------------------------------------------------------------------------


@pytest.mark.parametrize("option", ["rtol", "atol"])
@pytest.mark.parametrize("value", [-1e-3, float("nan")])
def test_negative_or_nan_tolerance_is_refused_naming_it(device, option, value):
    with pytest.raises(ValueError, match=rf"{option} must be a number >= 0"):
        check_gradients(sin_of(K.sin_bad_kernel), xy(device), **{option: value})


@pytest.mark.parametrize("option", ["rtol", "atol"])
def test_zero_tolerance_is_allowed(device, option):
    """Twin: 0 is a legal tolerance (the other one, and the rounding allowance, still apply)."""
    check_gradients(sin_of(K.sin_good_kernel), xy(device), **{option: 0.0})


# -- item 3: an output without requires_grad ------------------------------------------------------------------


@pytest.mark.parametrize("mode", MODES)
def test_output_without_requires_grad_is_still_checked(device, mode):
    """f(x, y) with only x requiring grad: y, which the kernel writes, is differentiated anyway."""
    with pytest.raises(GradientMismatch, match="'y'"):
        check_gradients(sin_of(K.sin_bad_kernel), xy(device, requires_y=False), mode=mode)


@pytest.mark.parametrize("mode", MODES)
def test_output_without_requires_grad_correct_kernel_passes(device, mode):
    result = check_gradients(sin_of(K.sin_good_kernel), xy(device, requires_y=False), mode=mode)
    assert result.total > 0


def test_explicit_output_without_requires_grad_is_checked(device):
    with pytest.raises(GradientMismatch):
        check_gradients(sin_of(K.sin_bad_kernel), xy(device, requires_y=False), outputs=["y"])


def test_returned_array_without_gradient_is_refused_naming_it(device):
    def f(x):
        y = wp.zeros(x.shape, dtype=float, device=x.device)
        wp.launch(K.sin_good_kernel, dim=x.shape, inputs=[x, y], device=x.device)
        return y

    with pytest.raises(ValueError, match=r"output 'output' .* requires_grad=True"):
        check_gradients(f, [xy(device)[0]])


# -- item 8: integer arrays, eps ------------------------------------------------------------------------------


def test_integer_array_with_requires_grad_says_integers_are_not_differentiated(device):
    index = wp.array(np.array([1, 2, 3]), dtype=int, requires_grad=True, device=device)
    x = wp.array(np.array([0.5, -1.0, 2.0]), dtype=float, device=device)
    y = wp.zeros(3, dtype=float, device=device)

    def f(x, index, y):
        wp.launch(K.scale_by_index, dim=3, inputs=[x, index, y], device=device)

    with pytest.raises(ValueError, match=r"'index' is an integer array .* not differentiated") as info:
        check_gradients(f, [x, index, y])
    assert "no input array" not in str(info.value)


def test_integer_array_beside_a_float_input_is_passed_through(device):
    """Twin: the same function checks fine when the float input requires grad."""
    index = wp.array(np.array([1, 2, 3]), dtype=int, requires_grad=True, device=device)
    x = wp.array(np.array([0.5, -1.0, 2.0]), dtype=float, requires_grad=True, device=device)
    y = wp.zeros(3, dtype=float, requires_grad=True, device=device)

    def f(x, index, y):
        wp.launch(K.scale_by_index, dim=3, inputs=[x, index, y], device=device)

    check_gradients(f, [x, index, y])


@pytest.mark.parametrize("eps", [0.0, -1e-3, float("nan"), float("inf")])
@pytest.mark.parametrize("mode", MODES)
def test_bad_eps_is_a_value_error_naming_eps(device, eps, mode):
    with pytest.raises(ValueError, match=r"eps must be a finite number > 0"):
        check_gradients(sin_of(K.sin_good_kernel), xy(device), eps=eps, mode=mode)


def test_explicit_positive_eps_is_used(device):
    check_gradients(sin_of(K.sin_good_kernel), xy(device), eps=1e-2)
