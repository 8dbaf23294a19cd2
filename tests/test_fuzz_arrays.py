"""The kernel fuzzer's wp.static constants and its 2-D and 3-D arrays: references by hand, known 2-D forms, the
in-place 2-D update stock and flagged, and a fixed-seed campaign over them."""

import numpy as np
import pytest
from helpers.fuzz_cases import COT, INPUTS, assert_nothing_unknown, small_campaign

import warp_zerostore as wp
from warp_zerostore.testing import kernels
from warp_zerostore.testing.fuzz import (
    batch,
    campaign,
    grammar,
    known,
    oracle,
    printer,
    shrink,
)
from warp_zerostore.testing.fuzz.nodes import (
    Binary,
    Const,
    For,
    Load,
    Program,
    Store,
    Unary,
)

ARRAYS = {
    "xm": np.array([[0.5, -0.25], [0.75, 1.0], [-0.5, 0.25], [1.0, -1.0]]),
    "xt": np.arange(16.0).reshape(4, 2, 2) / 16 - 0.5,
    "ym": np.array([[0.1, 0.2], [0.3, 0.4], [-0.1, -0.2], [0.5, -0.5]]),
}
ARRAYS_COT = {"ym": np.array([[1.0, 2.0], [-1.0, 0.5], [0.25, 3.0], [2.0, -2.0]])}


def test_reference_of_2d_and_3d_arrays_by_hand():
    # ym[i, 0] = xm[(i + 1) % 4, 1] * xt[i, 1, 0]; ym[i, 1] += ym[i, 0] * x[i]; ym[i, 0] = sin(ym[i, 0])
    # -> p = xm[j, 1] xt[i, 1, 0] (j = i + 1), ym[i, 0] = sin p, ym[i, 1] = ym0[i, 1] + p x[i]
    p_ = Binary("mul", Load("xm", 1, (1,)), Load("xt", 0, (1, 0)))
    body = (
        Store("ym", "=", p_, (0,)),
        Store("ym", "+=", Binary("mul", Load("ym", 0, (0,)), Load("x")), (1,)),
        Store("ym", "=", Unary("sin", Load("ym", 0, (0,))), (0,)),
    )
    program = Program("float64", (), (), (), body, arrays=True)
    inputs, cot = dict(INPUTS, **ARRAYS), dict(COT, **ARRAYS_COT)
    ref = oracle.reference(program, {}, inputs, cot)
    x, xm, xt, c = INPUTS["x"], ARRAYS["xm"], ARRAYS["xt"], ARRAYS_COT["ym"]
    j = (np.arange(4) + 1) % 4
    p = xm[j, 1] * xt[:, 1, 0]
    np.testing.assert_allclose(ref.outputs["ym"][:, 0], np.sin(p), rtol=1e-12)
    np.testing.assert_allclose(ref.outputs["ym"][:, 1], ARRAYS["ym"][:, 1] + p * x, rtol=1e-12)
    np.testing.assert_allclose(ref.outputs["y"], INPUTS["y"])  # y untouched
    dp = c[:, 0] * np.cos(p) + c[:, 1] * x  # d(sum c * ym) / dp, per thread
    want_xm, want_xt = np.zeros((4, 2)), np.zeros((4, 2, 2))
    want_xm[j, 1] = dp * xt[:, 1, 0]
    want_xt[:, 1, 0] = dp * xm[j, 1]
    np.testing.assert_allclose(ref.grads["xm"], want_xm, rtol=1e-6, atol=1e-8)
    np.testing.assert_allclose(ref.grads["xt"], want_xt, rtol=1e-6, atol=1e-8)
    np.testing.assert_allclose(ref.grads["x"], c[:, 1] * p, rtol=1e-6, atol=1e-8)
    np.testing.assert_allclose(
        ref.grads["ym"], np.stack([np.zeros(4), c[:, 1]], axis=1), atol=1e-8
    )  # [:, 0] stored over
    text = printer.source(program, {})
    assert (
        "xm: wp.array2d(dtype=wp.float64), xt: wp.array3d(dtype=wp.float64), ym: wp.array2d(dtype=wp.float64), n: int"
        in text
    )
    assert "ym[i, 0] = (xm[(i + 1) % 4, 1] * xt[i, 1, 0])" in text
    assert "ym[i, 1] += (ym[i, 0] * x[i])" in text
    labels = shrink.constructs(program)
    assert {"load xm", "load xt", "store ym", "augstore ym", "readback ym[i, c]"} <= set(labels)
    assert "store" not in labels and "readback y[i]" not in labels  # the 1-D labels stay the 1-D array's


def test_opt_in_draws_keep_outputs_in_float32_range(monkeypatch):
    # read-backs and += in nested unrolled loops compound: y[i] += sqrt(cosh(y[i])) six times overflows float32

    def largest(cases):
        return [
            max(np.abs(v).max() for v in oracle.run(c.program, c.thresholds, c.inputs).outputs.values()) for c in cases
        ]

    features = {"float32", "augstores", "readback", "smooth", "static_loops", "static"}
    kept = largest(campaign.draw(40, 4, features, max_depth=3, max_statements=3))
    assert len(kept) == 40 and max(kept) < grammar.OUTPUT_BOUND
    monkeypatch.setattr(grammar, "OUTPUT_BOUND", float("inf"))
    with np.errstate(over="ignore", invalid="ignore"):
        unbounded = largest(campaign.draw(40, 4, features, max_depth=3, max_statements=3))
    assert sum(not (m < 1e4) for m in unbounded) >= 3  # without the bound, the same draws overflow


def test_reference_of_wp_static_by_hand():
    from warp_zerostore.testing.fuzz.nodes import StaticConst

    # for k0 in range(wp.static(2 + 1)): y[i] += wp.static(0.5 * 3.0) * x[i]   ->  y0 + 4.5 x
    body = (For("k0", 3, False, (Store("y", "+=", Binary("mul", StaticConst(0.5, 3.0), Load("x"))),), True),)
    program = Program("float32", (), (), (), body)
    ref = oracle.reference(program, {}, INPUTS, COT)
    np.testing.assert_allclose(ref.outputs["y"], INPUTS["y"] + 4.5 * INPUTS["x"], rtol=1e-12)
    np.testing.assert_allclose(ref.grads["x"], 4.5 * COT["y"], rtol=1e-7)
    text = printer.source(program, {})
    assert "for k0 in range(wp.static(2 + 1)):" in text
    assert "y[i] += (wp.float32(wp.static(0.5 * 3.0)) * x[i])" in text
    assert shrink.constructs(program) == ("augstore", "for(static)", "mul", "wp.static")
    smaller = list(shrink.statement_candidates(program)) + list(shrink.expression_candidates(program))
    assert any(isinstance(p.body[0], For) and not p.body[0].static for p in smaller if p.body)  # a plain range
    assert any("wp.static(0.5" not in printer.source(p, {}) for p in smaller)  # the constant made plain


def test_static_is_refused_where_warp_has_no_wp_static(monkeypatch):
    import warp

    kernels(features={"float32", "stores", "static"})  # 1.9.1 and later have it
    monkeypatch.delattr(warp, "static")
    with pytest.raises(ValueError, match="feature 'static' needs wp.static"):
        kernels(features={"float32", "stores", "static"})
    kernels(features={"float32", "stores"})  # the rest is drawn as before


def test_arrays2d_inputs_and_cotangents_only_when_named():
    on = campaign.draw(20, 4, {"float32", "stores", "augstores", "readback", "arrays2d"})
    for case in on:
        assert {n: v.shape for n, v in case.inputs.items()} == {**oracle.INPUTS, **oracle.ARRAY_INPUTS}
        assert {n: v.shape for n, v in case.cotangents.items()} == {"y": (4,), "acc": (2,), "ym": (4, 2)}
        assert case.program.arrays and "xt: wp.array3d" in case.source()
    assert any("xt[" in c.source() for c in on) and any("xm[" in c.source() for c in on)
    assert any("ym[i, 1] +=" in c.source() for c in on)
    for case in campaign.draw(20, 4, {"float32", "stores", "augstores", "readback"}):
        assert set(case.inputs) == set(oracle.INPUTS) and set(case.cotangents) == set(oracle.OUTPUTS)
        assert not case.program.arrays and "xm" not in case.source()


def test_known_issues_match_the_2d_forms_by_constructs():
    from warp_zerostore.testing.fuzz import Case

    def failure(body, variant, kind="gradient"):
        program = Program("float32", (), (), (), body, arrays=True)
        return batch.Failure(Case(program, {}, dict(INPUTS, **ARRAYS), dict(COT, **ARRAYS_COT)), variant, kind)

    in_place = (Store("ym", "=", Binary("mul", Load("xm", 0, (0,)), Load("ym", 0, (0,))), (0,)),)
    assert known.match(failure(in_place, "stock"), "1.19.0") == "read-then-overwrite-2d"
    assert known.match(failure(in_place, "zero_store"), "1.19.0") == ""  # right on a snapshot Tape
    augmented = (Store("ym", "+=", Binary("mul", Load("xm", 0, (0,)), Load("ym", 0, (1,))), (1,)),)
    assert known.match(failure(augmented, "stock"), "1.9.1") == "read-then-augstore-2d"
    two_stores = (Store("ym", "=", Load("xt", 0, (0, 1)), (1,)), Store("ym", "=", Const(1.0), (1,)))
    assert known.match(failure(two_stores, "stock"), "1.12.1") == "overwrite-accumulates-2d"
    assert known.match(failure(two_stores, "stock"), "1.19.0") == ""  # fixed upstream in 1.13
    assert known.match(failure(two_stores, "zero_store"), "1.12.1") == ""
    no_read = (Store("ym", "=", Load("xm", 0, (0,)), (0,)),)
    assert known.match(failure(no_read, "stock"), "1.19.0") == ""  # a 2-D store alone is not a known bug there


@pytest.mark.matrix
def test_a_2d_in_place_update_is_wrong_stock_and_right_flagged(tmp_path):
    """ym[i, 0] = xm[i, 0] * ym[i, 0]: the 1-D read-then-overwrite bug on a 2-D output (stock, every version;
    known as read-then-overwrite-2d); right flagged on the snapshot Tape. Its twin reads the column it never
    stores (ym[i, 1]) and is right in both variants (stock on Warp <= 1.12: overwrite-accumulates-2d, its store
    over a seeded element); the repro script prints the wrong gradient."""
    import subprocess
    import sys

    from warp_zerostore.testing.fuzz import Case, repro

    inputs, cot = dict(INPUTS, **ARRAYS), dict(COT, **ARRAYS_COT)

    def case(read_column):
        value = Binary("mul", Load("xm", 0, (0,)), Binary("mul", Load("ym", 0, (read_column,)), Load("xt", 1, (1, 0))))
        return Case(Program("float32", (), (), (), (Store("ym", "=", value, (0,)),), arrays=True), {}, inputs, cot)

    failures = batch.check_batch([case(0), case(1)])
    old = wp.config.version in known.OLD  # Warp <= 1.12: any store over a seeded element keeps its gradient
    # the in-place update: wrong on a plain Tape, flagged or not; stock on the snapshot Tape only on <= 1.12
    in_place = [("stock", "plain"), ("zero_store", "plain")] + [("stock", "snapshot")] * old
    stores = [("stock", "plain"), ("stock", "snapshot")] * old  # the store over a seeded element, stock on <= 1.12
    want = [(case(0).program, path, "gradient") for path in in_place]
    want += [(case(1).program, path, "gradient") for path in stores]
    assert [(f.case.program, f.path, f.kind) for f in failures] == want
    assert not any(f.worse for f in failures)
    assert known.match(failures[0]) == "read-then-overwrite-2d"
    assert all(known.match(f) for f in failures[1:])  # by its labels (ym read back, ym stored): known either way
    script = tmp_path / "repro.py"
    script.write_text(repro.script(failures[0]))
    out = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=300, check=True).stdout
    assert "ym.grad" in out and "xt.grad" in out and "<-- WRONG" in out


@pytest.mark.matrix
def test_fixed_seed_campaign_over_static_and_arrays2d_finds_nothing_unknown(tmp_path):
    """wp.static constants and bounds, 2-D/3-D loads, 2-D stores, += and read-backs: one small build."""
    features = {"float32", "float64", "static", "arrays2d", "locals", "stores", "augstores", "readback"}
    features |= {"static_loops", "smooth"}
    assert_nothing_unknown(small_campaign(features, tmp_path), 12)
