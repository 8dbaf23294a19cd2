"""The kernel fuzzer's second set of builtins (pow, atan2, asin, sign, length, normalize): drawn only when named,
references by hand against central differences, and a fixed-seed campaign over them."""

import numpy as np
import pytest
from helpers.fuzz_cases import COT, INPUTS, assert_nothing_unknown, loop_program, small_campaign

from warp_zerostore.testing.fuzz import (
    DEFAULT_FEATURES,
    FEATURES,
    campaign,
    grammar,
    oracle,
    printer,
    shrink,
)
from warp_zerostore.testing.fuzz.nodes import (
    Binary,
    Const,
    Kink,
    Load,
    Store,
    Unary,
)

BUILTINS2_SOURCE = ("wp.pow(", "wp.atan2(", "wp.asin(", "wp.sign(", "wp.length(", "wp.length_sq(", "wp.normalize(")


def test_builtins2_are_drawn_and_only_when_named():
    base = {"float32", "float64", "vec3", "smooth", "kinks", "locals", "stores"}
    on = "\n".join(c.source() for c in campaign.draw(100, 3, base | {"builtins2"}))
    assert [text for text in BUILTINS2_SOURCE if text not in on] == []
    off = "\n".join(
        c.source() for c in campaign.draw(30, 3, (base | set(FEATURES)) - {"builtins2", "static", "vec_builtins"})
    )
    off = off.replace("wp.quat_from_axis_angle(wp.normalize(", "")  # feature "quat"'s safe axis, not builtins2's
    assert [text for text in BUILTINS2_SOURCE if text in off] == []
    assert "builtins2" in FEATURES and "builtins2" not in DEFAULT_FEATURES


def _central(f, x, h=1e-6):
    return (f(x + h) - f(x - h)) / (2 * h)


def test_reference_of_builtins2_by_hand():
    """Each builtin's value against its closed form, and the reference gradient (central differences of the
    oracle) against the closed-form derivative."""
    from warp_zerostore.testing.fuzz.nodes import Component, MakeVec

    x, y0 = INPUTS["x"], INPUTS["y"]
    c = COT["y"]
    xv = np.array([[0.5, -0.25, 1.0], [0.75, 0.5, -1.0], [0.25, 1.0, 0.5], [-0.5, 0.75, 0.25]])
    inputs = dict(INPUTS, xv=xv)
    v = MakeVec((Load("x"), Const(0.5), Load("y")))  # (x, 0.5, y) of the thread's own x, y

    def safe(j):  # the safe vector of length/normalize: (cosh x, 0.5, y), length >= 1
        return np.array([np.cosh(x[j]), 0.5, y0[j]])

    # expr -> (value of thread j, d value / d x[j], d value / d y[j] (the y read before the store))
    cases = {
        Binary("pow", Load("x"), Const(1.5)): (
            lambda j: (1.5 + np.tanh(x[j])) ** 1.5,
            lambda j: 1.5 * (1.5 + np.tanh(x[j])) ** 0.5 * (1 - np.tanh(x[j]) ** 2),
            lambda j: 0.0,
        ),
        Binary("pow", Const(0.5), Load("x")): (  # base 1.5 + tanh(0.5), exponent x: d/dx = b^x log b
            lambda j: (1.5 + np.tanh(0.5)) ** x[j],
            lambda j: (1.5 + np.tanh(0.5)) ** x[j] * np.log(1.5 + np.tanh(0.5)),
            lambda j: 0.0,
        ),
        Binary("atan2", Load("x"), Load("y")): (
            lambda j: np.arctan2(x[j], np.cosh(y0[j])),
            lambda j: np.cosh(y0[j]) / (x[j] ** 2 + np.cosh(y0[j]) ** 2),
            lambda j: -x[j] * np.sinh(y0[j]) / (x[j] ** 2 + np.cosh(y0[j]) ** 2),
        ),
        Unary("asin", Load("x")): (
            lambda j: np.arcsin(0.5 * np.tanh(x[j])),
            lambda j: 0.5 * (1 - np.tanh(x[j]) ** 2) / np.sqrt(1 - 0.25 * np.tanh(x[j]) ** 2),
            lambda j: 0.0,
        ),
        Unary("length", v): (
            lambda j: np.linalg.norm(safe(j)),
            lambda j: np.cosh(x[j]) * np.sinh(x[j]) / np.linalg.norm(safe(j)),
            lambda j: y0[j] / np.linalg.norm(safe(j)),
        ),
        Unary("length_sq", v): (lambda j: x[j] ** 2 + 0.25 + y0[j] ** 2, lambda j: 2 * x[j], lambda j: 2 * y0[j]),
        Component(Unary("normalize", v), 2): (  # y / sqrt(cosh^2 x + 0.25 + y^2)
            lambda j: y0[j] / np.linalg.norm(safe(j)),
            lambda j: -y0[j] * np.cosh(x[j]) * np.sinh(x[j]) / np.linalg.norm(safe(j)) ** 3,
            lambda j: (np.cosh(x[j]) ** 2 + 0.25) / np.linalg.norm(safe(j)) ** 3,
        ),
    }
    for expr, (value, dx, dy) in cases.items():
        program = loop_program((Store("y", "=", expr),))
        ref = oracle.reference(program, {}, inputs, COT)
        np.testing.assert_allclose(ref.outputs["y"], [value(j) for j in range(4)], rtol=1e-12, err_msg=str(expr))
        np.testing.assert_allclose(ref.grads["x"], [c[j] * dx(j) for j in range(4)], rtol=1e-6, atol=1e-8)
        np.testing.assert_allclose(ref.grads["y"], [c[j] * dy(j) for j in range(4)], rtol=1e-6, atol=1e-8)
    # wp.sign: y[i] = (x * x) * sign(x - t), a kink site whose threshold is placed away from every x
    program = grammar.number_sites(loop_program((Store("y", "=", Kink("sign", Load("x"), _sq(), -1)),)))
    for placement, side in ((0, 1.0), (1, -1.0)):  # below all values: sign 1; above all: sign -1
        thresholds = oracle.place_thresholds(program, INPUTS, [placement])
        assert min(abs(x - thresholds[0])) >= oracle.MARGIN
        ref = oracle.reference(program, thresholds, INPUTS, COT)
        np.testing.assert_allclose(ref.outputs["y"], side * x * x, rtol=1e-12)
        np.testing.assert_allclose(ref.grads["x"], side * 2 * x * c, rtol=1e-6)  # sign's own derivative: 0
    text = printer.source(program, {0: -1.5})
    assert "y[i] = ((x[i] * x[i]) * wp.sign(x[i] - wp.float64(-1.5)))" in text
    texts = {str(e): printer.source(loop_program((Store("y", "=", e),)), {}) for e in cases}
    joined = "\n".join(texts.values())
    assert "wp.pow(wp.float64(1.5) + wp.tanh(x[i]), wp.float64(1.5))" in joined
    assert "wp.atan2(x[i], wp.cosh(y[i]))" in joined
    assert "wp.asin(wp.float64(0.5) * wp.tanh(x[i]))" in joined
    assert "wp.length(wp.vec3d(wp.cosh(wp.vec3d(x[i], wp.float64(0.5), y[i])[0]), " in joined
    assert "wp.length_sq(wp.vec3d(x[i], wp.float64(0.5), y[i]))" in joined
    assert "wp.normalize(wp.vec3d(wp.cosh(wp.vec3d(x[i], wp.float64(0.5), y[i])[0]), " in joined
    assert shrink.constructs(program) == ("mul", "sign", "store")


def _sq():
    return Binary("mul", Load("x"), Load("x"))


@pytest.mark.matrix
def test_fixed_seed_campaign_over_builtins2_finds_nothing_unknown(tmp_path):
    """wp.pow, atan2, asin, sign, length, length_sq and normalize among smooth math, kinks and vec3: one build."""
    features = {"float32", "float64", "vec3", "smooth", "kinks", "locals", "stores", "builtins2"}
    assert_nothing_unknown(small_campaign(features, tmp_path), 12)


# Feature "struct_helpers": a @wp.func returning the kernel's struct (r = S(); r.a = ...; return r), read in the
# kernel as h(...).a / h(...).v[j], and with "structs" assigned whole to the struct local (s0 = h(...)).
