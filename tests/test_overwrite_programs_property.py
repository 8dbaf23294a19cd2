"""Random overwrite programs: Warp's Tape against the independent NumPy reference of warp_zerostore.testing.

Each example draws a dtype (float32, float64, vec3, mat22) and, with ``warp_zerostore.testing.programs``,
a program of 1 to 6 launches of four elementwise ops over five arrays: windows overlap, arrays are
overwritten, no launch stores to a value an earlier backward pass needs. Kernels are built once
(``tests/kernels_property.py``). Zero mode must match the reference's zero semantics (exactly, in
float64); accumulate mode must match the reference's accumulate semantics and the zero semantics
wherever no overwrite discarded gradient; and the comparisons that pass zero mode must fail accumulate
mode where the semantics differ (negative twins), the reference comparison and check_gradients alike.
"""

import numpy as np
import pytest
from helpers import kernels_property as kp
from hypothesis import assume, given
from hypothesis import strategies as st

import warp_zerostore.testing as wpt
from warp_zerostore.testing import reference

ARRAYS = ("x0", "x1", "t0", "t1", "t2")
# |tape - reference| <= RTOL * |reference| + ATOL; float64 must be exact.
RTOL = {"float64": 0.0, "float32": 2e-5, "vec3": 2e-5, "mat22": 2e-5}
ATOL = {"float64": 0.0, "float32": 2e-4, "vec3": 2e-4, "mat22": 2e-4}


@st.composite
def cases(draw):
    dtype = draw(st.sampled_from(list(kp.DTYPES)))
    T = kp.DTYPES[dtype]
    program = draw(wpt.programs(kp.OPS[(dtype, True)], {name: T for name in ARRAYS}, max_launches=6))
    seeds = {name: draw(wpt.array_data(T, program.shape)) for name in ARRAYS}
    return dtype, program, seeds


def in_mode(dtype, program, flag):
    return program.with_kernels(kp.KERNELS[(dtype, flag)])


class Differs(AssertionError):
    def __init__(self, message, name, index):
        super().__init__(message)
        self.name, self.index = name, index


def assert_matches(got, expected, dtype, what):
    """Every array equal (exactly in float64, else within tolerance); a failure names the worst element."""
    for name in ARRAYS:
        excess = np.abs(got[name] - expected[name]) - (RTOL[dtype] * np.abs(expected[name]) + ATOL[dtype])
        if np.any(excess > 0):
            idx = np.unravel_index(int(np.argmax(excess)), excess.shape)
            raise Differs(
                f"{what}: {name}{list(idx)} is {got[name][idx]!r}, the reference says {expected[name][idx]!r}",
                name,
                tuple(int(i) for i in idx),
            )


@pytest.mark.parametrize("flag", [True, False])
@given(case=cases())
def test_tape_matches_reference_semantics(flag, case):
    dtype, program, seeds = case
    run = in_mode(dtype, program, flag)
    values, grads = wpt.vjp(run, run.arrays(), seeds)
    assert_matches(values, reference.forward(program, kp.RULES), dtype, "final values")
    expected = reference.backward(program, kp.RULES, seeds, zero=flag)
    assert_matches(grads, expected, dtype, f"gradients, zero_store={flag}\n{program}")


@given(case=cases())
def test_accumulate_mode_differs_from_zero_semantics_only_where_an_overwrite_discarded_gradient(case):
    dtype, program, seeds = case
    run = in_mode(dtype, program, False)
    _, grads = wpt.vjp(run, run.arrays(), seeds)
    zero = reference.backward(program, kp.RULES, seeds, zero=True)
    accumulate = reference.backward(program, kp.RULES, seeds, zero=False)
    discarded = reference.discarded(program, kp.RULES)
    untouched = {name: np.where(discarded[name], zero[name], grads[name]) for name in ARRAYS}
    assert_matches(untouched, zero, dtype, f"accumulate mode outside the discarded elements\n{program}")
    for name in ARRAYS:
        assert not np.any((accumulate[name] != zero[name]) & ~discarded[name]), (name, program)


@given(case=cases())
def test_zero_semantics_comparison_fails_accumulate_mode(case):
    """Negative twin of the two tests above: the comparison that passes zero mode catches accumulate mode
    wherever the two semantics differ, and the element it names is one an overwrite discarded."""
    dtype, program, seeds = case
    zero = reference.backward(program, kp.RULES, seeds, zero=True)
    accumulate = reference.backward(program, kp.RULES, seeds, zero=False)
    gap = max(float(np.max(np.abs(accumulate[n] - zero[n]) - RTOL[dtype] * np.abs(zero[n]))) for n in ARRAYS)
    assume(gap > 10 * ATOL[dtype])
    run = in_mode(dtype, program, False)
    _, grads = wpt.vjp(run, run.arrays(), seeds)
    with pytest.raises(Differs) as failure:
        assert_matches(grads, zero, dtype, "accumulate mode against zero semantics")
    assert reference.discarded(program, kp.RULES)[failure.value.name][failure.value.index]


@pytest.mark.parametrize("mode", ["vjp", "jvp"])
@given(case=cases())
def test_zero_mode_passes_check_gradients(mode, case):
    dtype, program, seeds = case
    run = in_mode(dtype, program, True)
    wpt.check_gradients(run, run.arrays(), mode=mode, cotangents=seeds if mode == "vjp" else None)


@given(case=cases())
def test_accumulate_mode_fails_check_gradients(case):
    """Negative twin: where the semantics differ by more than check_gradients' tolerance, it raises and
    names an element an overwrite discarded."""
    dtype, program, seeds = case
    zero = reference.backward(program, kp.RULES, seeds, zero=True)
    accumulate = reference.backward(program, kp.RULES, seeds, zero=False)
    scale = max(1.0, max(float(np.max(np.abs(zero[n]))) for n in ARRAYS))
    assume(max(float(np.max(np.abs(accumulate[n] - zero[n]))) for n in ARRAYS) > 0.05 * scale)
    run = in_mode(dtype, program, False)
    with pytest.raises(wpt.GradientMismatch) as failure:
        wpt.check_gradients(run, run.arrays(), cotangents=seeds)
    assert reference.discarded(program, kp.RULES)[failure.value.array][failure.value.index]
    assert f"{failure.value.array}[" in str(failure.value)
