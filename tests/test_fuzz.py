"""The kernel fuzzer: its grammar, printer and reference without Warp builds, then a short fixed-seed campaign.

The campaign (one build of a batch of drawn kernels, each checked stock and flagged on a plain and a snapshot
Tape) fails on a failure that is neither listed in ``testing.fuzz.known`` for the installed Warp nor warned about
by the package at build time, and on any failure worse than stock (tests/test_fuzz_worse_than_stock.py)."""

import ast

import numpy as np
import pytest
from helpers.fuzz_cases import COT, INPUTS, LOOPS, assert_nothing_unknown
from hypothesis import given, settings

import warp_zerostore as wp
from warp_zerostore.testing import kernels
from warp_zerostore.testing.fuzz import (
    DEFAULT_FEATURES,
    FEATURES,
    batch,
    campaign,
    known,
    oracle,
    printer,
    shrink,
)
from warp_zerostore.testing.fuzz.nodes import (
    Assign,
    Binary,
    Cond,
    Const,
    For,
    If,
    Kink,
    Load,
    Local,
    Program,
    Store,
    Unary,
)


@settings(max_examples=40)
@given(kernels())
def test_drawn_kernels_print_as_python_and_are_kink_free(case):
    source = printer.source(case.program, case.thresholds)
    ast.parse(source)
    assert source.count("@wp.kernel") == 1
    run = oracle.run(case.program, case.thresholds, case.inputs)
    for site, values in run.sites.items():  # every kink quantity stays MARGIN away from its threshold
        t = case.thresholds[site]
        assert min(abs(q - t) for q in values) >= oracle.MARGIN * max(1.0, abs(t))
    assert all(np.isfinite(v).all() for v in run.outputs.values())


@settings(max_examples=20)
@given(kernels(features={"float64", "stores", "smooth"}))
def test_feature_sets_switch_constructs_off(case):
    labels = set(shrink.constructs(case.program))
    assert labels <= {"store", "add", "sub", "mul", "div", "sin", "cos", "tanh", "neg", "exp", "log", "sqrt"}
    assert case.program.dtype == "float64"


def test_unknown_features_are_named():
    with pytest.raises(ValueError, match="unknown features \\['matrices'\\]"):
        kernels(features={"float32", "matrices"})
    assert "helpers" in FEATURES


def test_reference_forward_and_gradient_by_hand():
    # y[i] = sin(x[i]); y[i] = y[i] * x[i]  ->  y = x sin x,  dy/dx = sin x + x cos x, dy/dy0 = 0
    body = (
        Store("y", "=", Unary("sin", Load("x"))),
        Store("y", "=", Binary("mul", Load("y"), Load("x"))),
    )
    program = Program("float64", (("a0", Const(1.0)),), (), (), body)
    ref = oracle.reference(program, {}, INPUTS, COT)
    x = INPUTS["x"]
    np.testing.assert_allclose(ref.outputs["y"], x * np.sin(x), rtol=1e-12)
    np.testing.assert_allclose(ref.grads["x"], COT["y"] * (np.sin(x) + x * np.cos(x)), rtol=1e-7)
    np.testing.assert_allclose(ref.grads["y"], 0.0, atol=1e-8)


def test_thresholds_are_placed_away_from_the_values_met():
    # if x[i] > t: a0 = max(x[i], y[i] + t'): both kinks placed off every value, by construction
    body = (
        If(Cond("threshold", Load("x"), 0), (Assign("a0", "f", "=", Kink("max", Load("x"), Load("y"), 1)),), ()),
        Store("y", "=", Local("a0", "f")),
    )
    program = Program("float32", (("a0", Const(1.0)),), (), (), body)
    for placement in range(3):
        thresholds = oracle.place_thresholds(program, INPUTS, [placement, placement])
        met = oracle.run(program, thresholds, INPUTS).sites
        assert set(thresholds) == set(met)  # a site the run never meets needs no threshold
        for site, values in met.items():
            assert min(abs(q - thresholds[site]) for q in values) >= oracle.MARGIN * max(1.0, abs(thresholds[site]))
        assert min(abs(q - thresholds[0]) for q in INPUTS["x"]) >= oracle.MARGIN


def test_a_loop_bound_by_an_argument_runs_the_programs_loop_count():
    body = (For("k0", 3, True, (Store("y", "+=", Const(1.0)),)),)
    program = Program("float32", (("a0", Const(1.0)),), (), (), body, loop_count=2)
    assert oracle.run(program, {}, INPUTS).outputs["y"].tolist() == (INPUTS["y"] + 2).tolist()


def test_the_shrinker_keeps_a_smaller_program():
    body = (Store("y", "=", Unary("sin", Load("x"))), Store("y", "=", Binary("mul", Load("y"), Load("x"))))
    program = Program("float32", (("a0", Const(1.0)),), (), (), body)
    smaller = list(shrink.statement_candidates(program)) + list(shrink.expression_candidates(program))
    assert any(len(p.body) == 1 for p in smaller)  # a statement dropped
    assert any(p.body[0].expr == Load("x") for p in smaller)  # sin(x[i]) -> x[i]


@pytest.mark.matrix
def test_fixed_seed_campaign_finds_nothing_unknown(tmp_path):
    summary = campaign.run(minutes=60, seed=19, batch_size=24, max_batches=1, shrink_rounds=0, out=str(tmp_path))
    assert_nothing_unknown(summary, 24)
    assert summary.worse == []  # every package path right wherever stock on a plain Tape is
    assert {(f.variant, f.tape) for f in summary.findings} <= set(batch.PATHS)


def test_known_issues_match_by_constructs():
    from warp_zerostore.testing.fuzz import Case

    def failure(body, variant, kind="gradient"):
        return batch.Failure(Case(Program("float32", (), (), (), body), {}, INPUTS, COT), variant, kind)

    read_then_store = (Store("y", "=", Binary("mul", Load("x"), Load("y"))),)
    assert known.match(failure(read_then_store, "stock"), "1.19.0") == "read-then-overwrite"
    assert known.match(failure(read_then_store, "zero_store"), "1.19.0") == ""  # right on a snapshot Tape
    assert known.match(failure(read_then_store, "stock", "forward"), "1.19.0") == ""  # another kind
    assert known.match(failure(read_then_store, "stock"), "0.0.0") == ""  # another version
    two_stores = (Store("y", "=", Load("x")), Store("y", "=", Const(1.0)))
    assert known.match(failure(two_stores, "stock"), "1.12.1") == "overwrite-accumulates"
    assert known.match(failure(two_stores, "zero_store"), "1.12.1") == ""  # flagged kernels are right


def test_the_shrinker_drops_unused_helpers_and_locals():
    from warp_zerostore.testing.fuzz.nodes import Call, Helper

    helpers = (Helper(1, Local("p0", "f")), Helper(1, Unary("sin", Local("p0", "f"))))
    body = (Store("y", "=", Call(1, (Load("x"),))),)
    program = Program("float32", (("a0", Const(1.0)), ("a1", Const(1.0))), (), helpers, body)
    smaller = list(shrink.statement_candidates(program))
    assert any(p.helpers == helpers[1:] and p.body == (Store("y", "=", Call(0, (Load("x"),))),) for p in smaller)
    assert any(p.scalars == () for p in smaller)
    run = oracle.run(next(p for p in smaller if len(p.helpers) == 1), {}, INPUTS)
    assert run.outputs["y"].tolist() == np.sin(INPUTS["x"]).tolist()


def test_the_fuzz_command_names_an_unknown_feature(capsys):
    from warp_zerostore.cli import main

    assert main(["fuzz", "--features", "stores", "matrices", "--minutes", "0"]) == 2
    assert "unknown features ['matrices']" in capsys.readouterr().out


@pytest.mark.matrix
def test_an_in_place_update_is_right_on_a_snapshot_tape_and_reported_by_check(tmp_path):
    """y[i] = x[i] * y[i]: Warp's backward re-reads the new y (stock wrong on a plain Tape, on every version, and
    the flagged kernel with it: never worse than stock); on Tape(snapshot=True), the package's remedy, the flagged
    kernel is right (and stock too but on Warp <= 1.12, whose store adjoint keeps the overwritten value's
    gradient); a checking Tape names the hazard (the plain-Tape failure is never silent)."""
    from warp_zerostore.testing.fuzz import Case

    case = Case(
        Program("float32", (), (), (), (Store("y", "=", Binary("mul", Load("x"), Load("y"))),)), {}, INPUTS, COT
    )
    failures = batch.check_batch([case])
    old = wp.config.version in known.OLD
    want = [("stock", "plain"), ("zero_store", "plain")] + [("stock", "snapshot")] * old
    assert [(f.path, f.kind, f.worse) for f in failures] == [(path, "gradient", False) for path in want]
    # Read after its own store: the snapshot Tape wants the read twin, built with the batch (one compile); the
    # in-place case reads before storing and gets none then (a twin made later has a module of its own).
    from warp_zerostore import _compat
    from warp_zerostore.tape import read_twin

    body = (Store("y", "=", Load("x")), Store("y", "=", Binary("mul", Load("x"), Load("y"))))
    read_back = Case(Program("float32", (), (), (), body), {}, INPUTS, COT)
    module = batch.build([case, read_back], str(tmp_path))
    batch_module = _compat.kernel_module(module.c0_zero_store)
    assert _compat.kernel_module(read_twin.twin(module.c1_zero_store)[0]) is batch_module
    assert _compat.kernel_module(read_twin.twin(module.c0_zero_store)[0]) is not batch_module
    with pytest.warns(wp.OverwriteWarning, match="stale read"):
        batch.run_case(case, module.c0_zero_store, make_tape=lambda: wp.Tape(check="warn"))


# The constructs beyond the default set: loops with jumps, while loops, ternaries and wp.where.
FEATURE_SOURCE = {
    "mat33": ("wp.mat33", "mat33"),
    "quat": ("wp.quat_from_axis_angle(", "quat"),
    "while_loops": ("while w", "while_loops"),
    "break": ("break", "break"),
    "continue": ("continue", "continue"),
    "ternaries": (" else ", "ternaries"),
    "where": ("wp.where(", "where"),
    "static": ("wp.static(", "static"),
    "arrays2d": ("ym[i, ", "arrays2d"),
}


@pytest.mark.parametrize("feature", sorted(FEATURE_SOURCE))
def test_each_new_feature_is_drawn_and_only_when_named(feature):
    text, name = FEATURE_SOURCE[feature]
    on = campaign.draw(30, 3, LOOPS | {"branches", "vec3", name})
    assert any(text in c.source() for c in on)
    off = campaign.draw(
        30, 3, (LOOPS | {"branches", "break", "continue", "ternaries", "where", "mat33", "quat"}) - {name}
    )
    assert not any(text in c.source() for c in off)
    assert name in FEATURES and name not in DEFAULT_FEATURES
