"""Random overwrite programs: Warp's tape gradients against an independent NumPy float64 reference.

Each example draws a program of 2 to 6 launches over five arrays (two leaves, three intermediates),
a dtype (float32, float64, vec3, mat22), windows that overlap or not, and data; kernels are built once.
"""

import numpy as np
import pytest
from hypothesis import assume, given
from hypothesis import strategies as st

import kernels_property as kp
import reference
import warp_zerostore as wp

LEAVES = ("x0", "x1")
INTERMEDIATES = ("t0", "t1", "t2")
ARRAYS = LEAVES + INTERMEDIATES
ROLES = {"scale": ("src",), "add": ("a", "b"), "mul": ("a", "b"), "axpy": ("src",)}
ELEMENT_SHAPE = {"float32": (), "float64": (), "vec3": (3,), "mat22": (2, 2)}
TOLERANCE = {"float64": 1e-11, "float32": 2e-5, "vec3": 2e-5, "mat22": 2e-5}


def values_stay_valid(program) -> bool:
    """Warp's backward re-reads arrays as they are after the forward pass: a value a nonlinear op read
    (or a window an op reads and writes in one launch) must not change afterwards."""
    for k, op in enumerate(program):
        needed = set()
        for name in reference.NONLINEAR_READS[op["kind"]]:
            needed.add(op[name])
        if op["kind"] == "mul" and op["dst"] in (op["a"], op["b"]):
            return False
        window = set(range(op["off"], op["off"] + op["count"]))
        for later in program[k + 1 :]:
            if later["dst"] in needed and window & set(range(later["off"], later["off"] + later["count"])):
                return False
    return True


@st.composite
def programs(draw):
    dtype = draw(st.sampled_from(list(kp.DTYPES)))
    n = draw(st.integers(1, 5))
    program = []
    for _ in range(draw(st.integers(2, 6))):
        kind = draw(st.sampled_from(kp.OPS))
        op = {"kind": kind, "dst": draw(st.sampled_from(INTERMEDIATES))}
        for role in ROLES[kind]:
            op[role] = draw(st.sampled_from(ARRAYS))
        op["off"] = draw(st.integers(0, n - 1))
        op["count"] = draw(st.integers(1, n - op["off"]))
        program.append(op)
    assume(values_stay_valid(program))
    shape = (n,) + ELEMENT_SHAPE[dtype]
    floats = st.floats(-2.0, 2.0, allow_nan=False, width=32)
    data = {name: np.array(draw(st.lists(floats, min_size=int(np.prod(shape)), max_size=int(np.prod(shape))))).reshape(shape) for name in ARRAYS}
    seeds = {name: np.array(draw(st.lists(floats, min_size=int(np.prod(shape)), max_size=int(np.prod(shape))))).reshape(shape) for name in INTERMEDIATES}
    return dtype, program, data, seeds


def run_on_tape(dtype, program, data, seeds, flag, device):
    kernels = kp.KERNELS[(dtype, flag)]
    T = kp.DTYPES[dtype]
    arrays = {name: wp.array(data[name], dtype=T, requires_grad=True, device=device) for name in ARRAYS}
    with wp.Tape() as tape:
        for op in program:
            args = [arrays[op[role]] for role in ROLES[op["kind"]]] + [arrays[op["dst"]], op["off"]]
            wp.launch(kernels[op["kind"]], dim=op["count"], inputs=args, device=device)
    tape.backward(grads={arrays[name]: wp.array(seeds[name], dtype=T, device=device) for name in INTERMEDIATES})
    return {name: arrays[name].grad.numpy().astype(np.float64) for name in ARRAYS}, {
        name: arrays[name].numpy().astype(np.float64) for name in ARRAYS
    }


def as_stored(data, dtype):
    """The inputs as Warp holds them (float32 rounding included), in float64."""
    np_type = np.float64 if dtype == "float64" else np.float32
    return {k: v.astype(np_type).astype(np.float64) for k, v in data.items()}


@pytest.mark.parametrize("flag", [True, False])
@given(case=programs())
def test_tape_gradients_match_reference(flag, case):
    dtype, program, data, seeds = case
    data = as_stored(data, dtype)
    seeds = as_stored(seeds, dtype)
    grads, finals = run_on_tape(dtype, program, data, seeds, flag, "cpu")
    expected_finals, _ = reference.forward(data, program)
    expected = reference.backward(data, program, seeds, zero=flag)
    tol = TOLERANCE[dtype]
    for name in ARRAYS:
        np.testing.assert_allclose(finals[name], expected_finals[name], rtol=tol, atol=tol, err_msg=f"value {name}")
        np.testing.assert_allclose(
            grads[name], expected[name], rtol=tol, atol=tol * 10, err_msg=f"{name}.grad, zero_store={flag}, {program}"
        )


@given(case=programs())
def test_reference_zero_mode_is_the_true_gradient(case):
    """The reference's zero mode equals central finite differences of its own forward pass."""
    dtype, program, data, seeds = case
    exact = reference.backward(data, program, seeds, zero=True)
    numeric = reference.finite_difference(data, program, seeds)
    for name in ARRAYS:
        np.testing.assert_allclose(exact[name], numeric[name], rtol=1e-6, atol=1e-6)


@given(case=programs())
def test_accumulate_mode_fails_the_true_gradient_check(case):
    """Negative twin: where an overwrite discards gradient, accumulate-mode Warp disagrees with the true
    gradient, so the comparison above can fail."""
    dtype, program, data, seeds = case
    data = as_stored(data, dtype)
    seeds = as_stored(seeds, dtype)
    true_grad = reference.backward(data, program, seeds, zero=True)
    legacy = reference.backward(data, program, seeds, zero=False)
    tol = TOLERANCE[dtype]
    assume(any(not np.allclose(true_grad[k], legacy[k], rtol=tol, atol=tol * 100) for k in ARRAYS))
    grads, _ = run_on_tape(dtype, program, data, seeds, False, "cpu")
    assert any(not np.allclose(grads[k], true_grad[k], rtol=tol, atol=tol * 10) for k in ARRAYS)
