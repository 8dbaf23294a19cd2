"""The kernel fuzzer's loops and jumps (while, break, continue) and ternaries: references by hand, kink sites,
the shrinker, and a fixed-seed campaign over them."""

import numpy as np
import pytest
from helpers.fuzz_cases import COT, INPUTS, LOOPS, assert_nothing_unknown, loop_program, small_campaign

from warp_zerostore.testing.fuzz import (
    oracle,
    printer,
    shrink,
)
from warp_zerostore.testing.fuzz.nodes import (
    Binary,
    Cond,
    For,
    If,
    Load,
    Store,
    Unary,
)


def test_reference_of_while_break_and_continue_by_hand():
    from warp_zerostore.testing.fuzz.nodes import Jump, LoopIndex, While

    x = INPUTS["x"]
    # while w0 < 3: w0 += 1; y[i] += x * w0; if w0 == 2: break   ->  y0 + x * (1 + 2)
    body = (
        While(
            "w0",
            3,
            (
                Store("y", "+=", Binary("mul", Load("x"), LoopIndex("w0"))),
                If(Cond("counter", var="w0", value=2), (Jump("break"),), ()),
            ),
        ),
    )
    ref = oracle.reference(loop_program(body), {}, INPUTS, COT)
    np.testing.assert_allclose(ref.outputs["y"], INPUTS["y"] + 3 * x)
    np.testing.assert_allclose(ref.grads["x"], 3 * COT["y"], rtol=1e-7)
    # for k0 in range(n): if i % 2 == 0: continue; y[i] += x * x   (n = 3: odd threads add 3 x^2)
    body = (
        For(
            "k0",
            1,
            True,
            (If(Cond("parity"), (Jump("continue"),), ()), Store("y", "+=", Binary("mul", Load("x"), Load("x")))),
        ),
    )
    ref = oracle.reference(loop_program(body), {}, INPUTS, COT)
    odd = np.arange(4) % 2
    np.testing.assert_allclose(ref.outputs["y"], INPUTS["y"] + odd * 3 * x * x)
    np.testing.assert_allclose(ref.grads["x"], COT["y"] * odd * 6 * x, rtol=1e-6)


def test_a_threshold_break_is_a_kink_site_placed_away_from_the_values():
    from warp_zerostore.testing.fuzz.nodes import Jump

    # for k0 in range(3): y[i] += x; if y[i] > t: break   -> t kept MARGIN away from every y[i] met
    body = (
        For("k0", 3, False, (Store("y", "+=", Load("x")), If(Cond("threshold", Load("y"), 0), (Jump("break"),), ()))),
    )
    program = loop_program(body)
    placed = [oracle.place_thresholds(program, INPUTS, [placement]) for placement in range(3)]
    assert placed[0] is not None  # below every value met: each thread breaks at once (above: a later y[i] crosses)
    for thresholds in filter(None, placed):
        met = oracle.run(program, thresholds, INPUTS).sites[0]
        assert min(abs(q - thresholds[0]) for q in met) >= oracle.MARGIN * max(1.0, abs(thresholds[0]))


def test_reference_of_ternaries_and_where_by_hand():
    from warp_zerostore.testing.fuzz.nodes import Select

    x = INPUTS["x"]  # [0.5, -0.25, 0.75, 1.0]; x > 0.6 on threads 2 and 3
    for form in ("ternary", "where"):
        pick = Select(
            form, Cond("threshold", Load("x"), 0), Unary("sin", Load("x")), Binary("mul", Load("x"), Load("x"))
        )
        program = loop_program((Store("y", "=", pick),))
        ref = oracle.reference(program, {0: 0.6}, INPUTS, COT)
        above = x > 0.6
        np.testing.assert_allclose(ref.outputs["y"], np.where(above, np.sin(x), x * x))
        np.testing.assert_allclose(ref.grads["x"], COT["y"] * np.where(above, np.cos(x), 2 * x), rtol=1e-6)
        text = printer.source(program, {0: 0.6})
        assert ("wp.where(x[i] > wp.float64(0.6), wp.sin(x[i]), (x[i] * x[i]))" in text) == (form == "where")
        assert ("(wp.sin(x[i]) if x[i] > wp.float64(0.6) else (x[i] * x[i]))" in text) == (form == "ternary")


def test_the_shrinker_keeps_a_jump_inside_a_loop():
    from warp_zerostore.testing.fuzz.nodes import Jump, While

    jump = If(Cond("counter", var="w0", value=1), (Jump("continue"),), ())
    program = loop_program((While("w0", 2, (Store("y", "+=", Load("x")), jump)),))
    for candidate in shrink.statement_candidates(program):
        for node in candidate.body:  # no jump left outside its loop
            assert not isinstance(node, If) or not any(isinstance(s, Jump) for s in node.body)
    assert any(
        c.body[0].count == 1 for c in shrink.statement_candidates(program) if c.body and isinstance(c.body[0], While)
    )
    assert shrink.constructs(program) == ("augstore", "continue", "if(counter)", "while")


@pytest.mark.matrix
def test_fixed_seed_campaign_over_the_new_constructs_finds_nothing_unknown(tmp_path):
    """Loops with jumps, while loops, ternaries, wp.where and mat33: one small build, checked like the default
    set."""
    features = LOOPS | {"branches", "break", "continue", "ternaries", "where", "kinks", "vec3", "mat33"}
    assert_nothing_unknown(small_campaign(features, tmp_path), 12)
