"""warp_zerostore.testing.reference: the true gradient (checked against finite differences of its own
forward pass), both store semantics on the seed program, the discarded-gradient mask, and its independence."""

import ast
import pathlib
from types import SimpleNamespace as NS

import numpy as np
import pytest
from helpers import kernels_property as kp
from hypothesis import given
from hypothesis import strategies as st

import warp_zerostore as wp
from warp_zerostore.testing import array_data, programs, reference

F64 = {name: wp.float64 for name in ("x0", "x1", "t0", "t1", "t2")}


def finite_difference(program, seeds, eps=1e-6):
    """Central differences of sum(seeds * final) along every initial element, in float64."""

    def loss(values):
        final = reference.forward(program, kp.RULES, values)
        return sum(float(np.sum(seeds[k] * final[k])) for k in seeds)

    grads = {}
    for name, base in program.data.items():
        g = np.zeros_like(base)
        for idx in np.ndindex(base.shape):
            plus = {k: v.copy() for k, v in program.data.items()}
            minus = {k: v.copy() for k, v in program.data.items()}
            plus[name][idx] += eps
            minus[name][idx] -= eps
            g[idx] = (loss(plus) - loss(minus)) / (2 * eps)
        grads[name] = g
    return grads


@st.composite
def programs_and_seeds(draw, replay_safe=True):
    program = draw(programs(kp.OPS[("float64", True)], F64, replay_safe=replay_safe))
    return program, {name: draw(array_data(wp.float64, program.shape)) for name in F64}


@given(case=programs_and_seeds(replay_safe=False))
def test_zero_semantics_is_the_true_gradient(case):
    """Even for programs with replay hazards: the reference saves what each launch read."""
    program, seeds = case
    exact = reference.backward(program, kp.RULES, seeds, zero=True)
    numeric = finite_difference(program, seeds)
    for name in F64:
        np.testing.assert_allclose(exact[name], numeric[name], rtol=1e-6, atol=1e-6, err_msg=name)


@given(case=programs_and_seeds())
def test_accumulate_semantics_differs_only_inside_the_discarded_mask(case):
    program, seeds = case
    zero = reference.backward(program, kp.RULES, seeds, zero=True)
    accumulate = reference.backward(program, kp.RULES, seeds, zero=False)
    mask = reference.discarded(program, kp.RULES)
    for name in F64:
        assert mask[name].shape == program.data[name].shape
        assert np.array_equal(zero[name][~mask[name]], accumulate[name][~mask[name]])
    for launch in program.launches:
        assert mask[launch.bind["dst"]][launch.window].all()


def seed_program():
    """README's seed program: y = 2 x_a, then y = 3 x_b."""
    rules = {
        "k1": reference.Rule(reads=("x",), write="y", forward=lambda x: 2.0 * x, vjp=lambda g, x: (2.0 * g,)),
        "k2": reference.Rule(reads=("x",), write="y", forward=lambda x: 3.0 * x, vjp=lambda g, x: (3.0 * g,)),
    }
    launches = [
        NS(op=NS(name="k1"), bind={"x": "x_a", "y": "y"}, start=0, count=1),
        NS(op=NS(name="k2"), bind={"x": "x_b", "y": "y"}, start=0, count=1),
    ]
    return NS(launches=launches, data={"x_a": np.ones(1), "x_b": np.ones(1), "y": np.zeros(1)}), rules


@pytest.mark.parametrize("zero, x_a, y", [(True, 0.0, 0.0), (False, 2.0, 1.0)])
def test_seed_program(zero, x_a, y):
    program, rules = seed_program()
    grads = reference.backward(program, rules, {"y": np.ones(1)}, zero=zero)
    assert {k: v.tolist() for k, v in grads.items()} == {"x_a": [x_a], "x_b": [3.0], "y": [y]}
    mask = reference.discarded(program, rules)
    assert {k: v.tolist() for k, v in mask.items()} == {"x_a": [True], "x_b": [False], "y": [True]}
    assert reference.forward(program, rules)["y"].tolist() == [3.0]


def test_missing_rule_is_named():
    program, rules = seed_program()
    with pytest.raises(KeyError, match=r"no Rule for op 'k2'; rules cover \['k1'\]"):
        reference.backward(program, {"k1": rules["k1"]}, {"y": np.ones(1)}, zero=True)


def test_reference_imports_nothing_but_numpy():
    """Two implementations, not one: the reference imports no Warp and no warp_zerostore code."""
    tree = ast.parse(pathlib.Path(reference.__file__).read_text())
    modules = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            modules |= {alias.name.split(".")[0] for alias in node.names}
        elif isinstance(node, ast.ImportFrom):
            modules.add("." if node.level else node.module.split(".")[0])
    assert modules <= {"__future__", "dataclasses", "typing", "numpy"}, modules
