"""warp_zerostore.testing.check_gradients and vjp: what they flag, what they do not, and their messages."""

import numpy as np
import pytest
from helpers import kernels_testing as kt

import warp_zerostore as wp
from warp_zerostore.testing import GradientMismatch, check_gradients, vjp

MODES = ["vjp", "jvp"]


def inputs(device, dtype=float, values=(0.5, -1.25, 2.0)):
    x = wp.array(np.array(values), dtype=dtype, requires_grad=True, device=device)
    y = wp.zeros(len(values), dtype=dtype, requires_grad=True, device=device)
    return x, y


def launcher(kernel):
    def run(x, y):
        wp.launch(kernel, dim=x.shape, inputs=[x, y], device=x.device)

    run.__qualname__ = f"run_{kernel.key}"
    return run


# -- passes ----------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("mode", MODES)
def test_correct_float32_kernel_passes_with_float32_finite_differences(device, mode):
    result = check_gradients(launcher(kt.SQUARE[("float32", True)]), inputs(device), mode=mode)
    assert result.precision == "float32" and "cannot run on float64 arrays" in result.note
    assert result.worst <= 1.0 and result.total == 6


@pytest.mark.parametrize("mode", MODES)
def test_generic_kernel_is_rerun_in_float64(device, mode):
    result = check_gradients(launcher(kt.cube_generic), inputs(device), mode=mode)
    assert result.precision == "float64" and result.note == ""
    # float32 Tape against float64 differences: well inside float32's tolerance
    assert result.worst < 0.1


def test_generic_kernel_without_declared_overloads_is_rerun_in_float64(device):
    from helpers import kernels_testing_generic as ktg

    for mode in MODES:
        assert check_gradients(launcher(ktg.sin_times), inputs(device), mode=mode).precision == "float64"


def test_float64_kernel_checks_in_float64_with_tight_tolerance(device):
    result = check_gradients(launcher(kt.SQUARE[("float64", True)]), inputs(device, wp.float64), rtol=1e-9, atol=1e-9)
    assert result.precision == "float64"


def test_two_dimensional_arrays(device):
    x = wp.array(np.linspace(-1, 1, 6).reshape(2, 3), dtype=float, requires_grad=True, device=device)
    y = wp.zeros((2, 3), dtype=float, requires_grad=True, device=device)
    assert check_gradients(launcher(kt.square_2d), [x, y]).total == 12


def test_correct_custom_adjoint_passes(device):
    check_gradients(launcher(kt.custom_cube), inputs(device))


def test_function_returning_its_output(device):
    """Outputs may be allocated inside the function (like its inputs, so the float64 re-run works)."""

    def cube(x):
        y = wp.empty_like(x, requires_grad=True)
        wp.launch(kt.cube_generic, dim=x.shape, inputs=[x, y], device=x.device)
        return y

    x, _ = inputs(device)
    result = check_gradients(cube, [x])
    assert result.precision == "float64" and result.total == 3


def test_float64_false_keeps_the_inputs_dtype(device):
    result = check_gradients(launcher(kt.cube_generic), inputs(device), float64=False)
    assert result.precision == "float32" and result.note == "float64=False"


def test_wrt_leaves_out_the_overwritten_output(device):
    """What the check does not flag: with wrt=["x"], the gradient left in an overwritten y is not compared,
    so accumulate mode passes (twin of test_overwrite_in_accumulate_mode_fails)."""
    check_gradients(launcher(kt.SQUARE[("float32", False)]), inputs(device), wrt=["x"], outputs=["y"])


# -- fails: negative twins of the passes above --------------------------------------------------------------


@pytest.mark.parametrize("mode", MODES)
def test_overwrite_in_accumulate_mode_fails(device, mode):
    with pytest.raises(GradientMismatch) as failure:
        check_gradients(launcher(kt.SQUARE[("float32", False)]), inputs(device), mode=mode)
    e = failure.value
    assert isinstance(e, AssertionError)
    # accumulate mode leaves y's gradient in y.grad; its initial value influences nothing
    assert e.array == "y" and e.mode == mode and len(e.index) == 1
    assert abs(e.tape - e.finite_difference) > e.tolerance
    message = str(e)
    assert f"y[{e.index[0]}]" in message and "tape" in message and "finite difference" in message
    assert f"{e.tolerance:.3e}" in message and "zero_store=True" in message
    assert f"{e.failing} of {e.total}" in message


@pytest.mark.parametrize("mode", MODES)
def test_generic_accumulate_kernel_fails_in_float64(device, mode):
    with pytest.raises(GradientMismatch, match=r"float64 re-run"):
        check_gradients(launcher(kt.cube_generic_accumulate), inputs(device), mode=mode)


def test_wrong_custom_adjoint_fails_naming_the_worst_element(device):
    x, y = inputs(device)
    with pytest.raises(GradientMismatch) as failure:
        check_gradients(launcher(kt.custom_cube_wrong), [x, y], outputs=["y"], cotangents={"y": np.ones(3)})
    e = failure.value
    # adjoint 2 x^2 instead of 3 x^2: worst at the largest |x|, x[2] = 2
    assert e.array == "x" and e.index == (2,)
    assert e.tape == 8.0 and e.finite_difference == pytest.approx(12.0, rel=1e-3)
    assert "x[2]: vjp of input 'x' through output 'y', shape (3,), dtype float32, element [2]" in str(e)


def test_wrong_component_of_a_vector_is_named(device):
    x = wp.array(np.full((2, 3), 0.75), dtype=wp.vec3, requires_grad=True, device=device)
    y = wp.zeros(2, dtype=wp.vec3, requires_grad=True, device=device)
    with pytest.raises(GradientMismatch) as failure:
        check_gradients(launcher(kt.vec_cube_wrong), [x, y], mode="jvp")
    e = failure.value
    assert e.array == "y" and e.index[1] == 2
    assert "component [2]" in str(e) and "dtype vec3f" in str(e)


def test_tight_tolerance_fails_float32_against_float64(device):
    """The float32 Tape is not exact: an atol/rtol far below float32's precision fails (twin of the float64 pass)."""
    with pytest.raises(GradientMismatch):
        check_gradients(launcher(kt.cube_generic), inputs(device, values=(0.3, -1.7, 1.1)), rtol=1e-12, atol=1e-12)


# -- arguments ----------------------------------------------------------------------------------------------


def test_float64_true_on_a_float32_kernel_says_what_to_do(device):
    with pytest.raises(ValueError, match=r"float64=True.*run_.*square cannot run on float64 arrays.*typing.Any"):
        check_gradients(launcher(kt.SQUARE[("float32", True)]), inputs(device), float64=True)


def test_argument_errors_name_the_argument(device):
    x, y = inputs(device)
    run = launcher(kt.SQUARE[("float32", True)])
    with pytest.raises(ValueError, match="mode must be 'vjp' or 'jvp'"):
        check_gradients(run, [x, y], mode="fwd")
    with pytest.raises(ValueError, match=r"wrt names 'z'.*'x', 'y'"):
        check_gradients(run, [x, y], wrt=["z"])
    with pytest.raises(TypeError, match="inputs must be a list or tuple"):
        check_gradients(run, x)
    plain = wp.array([1.0], dtype=float, device=device)
    with pytest.raises(ValueError, match="no input array .* requires_grad=True"):
        check_gradients(run, [plain, wp.zeros(1, dtype=float, device=device)])
    with pytest.raises(ValueError, match=r"output 'output' .* no gradient: create it with requires_grad=True"):
        check_gradients(lambda x: wp.zeros(3, dtype=float, device=device), [x])
    with pytest.raises(ValueError, match=r"cotangents\['y'\] has shape \(2,\)"):
        check_gradients(run, [x, y], cotangents={"x": np.ones(3), "y": np.ones(2)})
    with pytest.raises(ValueError, match="cotangents apply to mode='vjp' only"):
        check_gradients(run, [x, y], mode="jvp", cotangents={"y": np.ones(3)})


def test_cotangents_choose_the_loss(device):
    """With cotangents for y only, the check compares d(sum c*y)/dx: the accumulate kernel then fails only on y."""
    x, y = inputs(device)
    with pytest.raises(GradientMismatch) as failure:
        check_gradients(launcher(kt.SQUARE[("float32", False)]), [x, y], outputs=["y"], cotangents={"y": np.ones(3)})
    assert failure.value.array == "y" and failure.value.tape == 1.0 and failure.value.finite_difference == 0.0


def test_inputs_by_name_and_passthrough_arguments(device):
    a = wp.array([1.0, 2.0], dtype=float, requires_grad=True, device=device)
    b = wp.array([0.5, -0.5], dtype=float, requires_grad=True, device=device)
    dst = wp.zeros(2, dtype=float, requires_grad=True, device=device)

    def run(a, b, dst, alpha):
        wp.launch(kt.scaled_sum, dim=2, inputs=[a, b, dst, alpha, 0], device=device)

    check_gradients(run, {"a": a, "b": b, "dst": dst, "alpha": 3.0})
    _, grads = vjp(run, {"a": a, "b": b, "dst": dst, "alpha": 3.0}, {"dst": np.ones(2)}, outputs=["dst"])
    assert grads["b"].tolist() == [3.0, 3.0] and grads["dst"].tolist() == [0.0, 0.0]


def test_int_arrays_are_passed_through(device):
    """An index array is an argument, not something to differentiate; gathered twice, x[1] gets both gradients."""
    x = wp.array([0.5, -1.5], dtype=float, requires_grad=True, device=device)
    idx = wp.array([1, 0, 1], dtype=int, device=device)
    y = wp.zeros(3, dtype=float, requires_grad=True, device=device)

    def gather(x, idx, y):
        wp.launch(kt.gather_square, dim=3, inputs=[x, idx, y], device=device)

    check_gradients(gather, [x, idx, y])
    _, grads = vjp(gather, [x, idx, y], {"y": np.ones(3)}, outputs=["y"])
    assert grads["x"].tolist() == [1.0, -6.0]
    with pytest.raises(ValueError, match="wrt names 'idx', which is not a float input array"):
        check_gradients(gather, [x, idx, y], wrt=["idx"])


def test_the_callers_arrays_are_left_alone(device):
    x, y = inputs(device)
    check_gradients(launcher(kt.SQUARE[("float32", True)]), [x, y])
    assert y.numpy().tolist() == [0.0, 0.0, 0.0] and not np.any(x.grad.numpy())


# -- vjp ----------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("flag, x_a_grad, y_grad", [(True, 0.0, 0.0), (False, 2.0, 1.0)])
def test_vjp_of_the_seed_program(device, flag, x_a_grad, y_grad):
    """README's seed program: y = 2 x_a, then y = 3 x_b, y.grad = 1."""
    k1, k2 = kt.SEED_PROGRAM[flag]

    def seed(x_a, x_b, y):
        wp.launch(k1, dim=1, inputs=[x_a, y], device=device)
        wp.launch(k2, dim=1, inputs=[x_b, y], device=device)

    arrays = {n: wp.array([1.0], dtype=float, requires_grad=True, device=device) for n in ("x_a", "x_b", "y")}
    values, grads = vjp(seed, arrays, {"y": np.ones(1)}, outputs=["y"])
    assert values["y"].tolist() == [3.0]
    assert grads["x_a"].tolist() == [x_a_grad] and grads["x_b"].tolist() == [3.0] and grads["y"].tolist() == [y_grad]
