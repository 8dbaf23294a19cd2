"""The fuzzer finds planted bugs within a small fixed budget (one build of a few drawn kernels each).

Mutants: a builtin replaced by a ``@wp.func`` whose ``@wp.func_grad`` is off by a factor (the oracle still
differentiates the true ``sin``), Warp's own adjoint of the builtin ``tanh`` patched wrong in the generated C++
(tests/helpers/builtin_mutant.py), and the package's zeroing switched off in the flagged variant
(``zero_store=False``, where overwrites matter). Their negative twins: the same budget, unmutated, finds nothing.
"""

import re

import pytest
from helpers import builtin_mutant

import warp_zerostore as wp
from warp_zerostore.testing.fuzz import batch, campaign, known, printer

# The mutants prove the fuzzer's power, which does not depend on the Warp version: most run on the newest
# supported Warp only, to keep the matrix's time small (tests/test_fuzz.py's campaign runs on every version).
# The builtin mutant runs on every version: it patches each version's own generated code.
newest_only = pytest.mark.skipif(
    not wp.config.version.startswith("1.19."),
    reason="the fuzzer's mutation tests run on the newest supported Warp (1.19) only; see tests/test_fuzz.py",
)

# float32 kernels of smooth arithmetic with stores: small kernels that build fast, and no known Warp bug.
SMOOTH = {"float32", "smooth", "stores", "locals", "atomics"}
OVERWRITES = {"float32", "smooth", "stores"}  # several stores to y[i], no read-back
BUDGET = 12  # kernels, one build
# tanh (also inside the safe form exp(tanh(a))) with atomic adds and locals: no overwrite, so no known issue on
# any version; 8 kernels, one build.
BUILTIN, BUILTIN_BUDGET = {"float32", "smooth", "locals", "atomics"}, 8
TANH_OF_INPUTS = re.compile(r"wp\.tanh\((?!wp\.float32\([^()]*\)\))")

WRONG_SIN = """
@wp.func
def mutant_sin(a: wp.float32):
    return wp.sin(a)


@wp.func_grad(mutant_sin)
def adj_mutant_sin(a: wp.float32, adj_ret: wp.float32):
    wp.adjoint[a] += 1.5 * wp.cos(a) * adj_ret  # off by a factor 1.5
"""


def _with_sin(cases):
    return [c for c in cases if "sin" in printer.source(c.program, c.thresholds)]


@newest_only
def test_a_func_grad_off_by_a_factor_is_found(monkeypatch):
    cases = _with_sin(campaign.draw(4 * BUDGET, 7, SMOOTH))[:BUDGET]
    assert len(cases) >= 4
    monkeypatch.setitem(printer.SAFE_FORMS, "sin", "mutant_sin({a})")
    failures = batch.check_batch(cases, prelude=WRONG_SIN)
    assert {(f.variant, f.kind) for f in failures} == {("stock", "gradient"), ("zero_store", "gradient")}


@newest_only
def test_the_packages_zeroing_switched_off_is_found(monkeypatch):
    cases = [c for c in campaign.draw(4 * BUDGET, 8, OVERWRITES) if printer.source(c.program, {}).count("y[i] =") > 1]
    cases = cases[:BUDGET]
    assert len(cases) >= 4
    monkeypatch.setitem(batch.VARIANTS, "zero_store", "@wpz.kernel(zero_store=False)")
    failures = batch.check_batch(cases)
    assert any(f.variant == "zero_store" and f.kind == "gradient" for f in failures)


@newest_only
def test_no_false_alarm_on_the_same_budget_unmutated():
    cases = _with_sin(campaign.draw(4 * BUDGET, 7, SMOOTH))[:BUDGET]
    failures = batch.check_batch(cases)
    assert [f for f in failures if f.variant == "zero_store"] == []


def _with_tanh():
    """Drawn kernels that take tanh of something other than a constant."""
    cases = campaign.draw(8 * BUILTIN_BUDGET, 9, BUILTIN)
    cases = [c for c in cases if TANH_OF_INPUTS.search(printer.source(c.program, c.thresholds))][:BUILTIN_BUDGET]
    assert len(cases) >= 4
    return cases


def test_a_builtin_adjoint_patched_wrong_is_found():
    cases = _with_tanh()
    with builtin_mutant.wrong_adjoint("tanh", 1.5):
        failures = batch.check_batch(cases, prelude=builtin_mutant.salt("tanh", 1.5))
    assert {(f.variant, f.kind) for f in failures} == {("stock", "gradient"), ("zero_store", "gradient")}
    assert not any(known.match(f) for f in failures)


def test_no_false_alarm_on_the_builtin_budget_unmutated():
    assert batch.check_batch(_with_tanh()) == []


# Feature "builtins2": Warp's own adjoints of wp.pow, wp.atan2 and wp.asin patched wrong are caught in kernels that
# apply them to inputs (float32, no overwrite: no known issue on any version); unmutated, the same kernels pass.
BUILTINS2 = {"float32", "smooth", "locals", "atomics", "builtins2"}
BUILTINS2_OPS = ("pow", "atan2", "asin")


def _with_builtin2(name):
    # the call in an atomic add, with an input after it on the line (a call whose value is only assigned to a
    # local may be dead: overwritten before any output uses it)
    into_output = re.compile(rf"wp\.atomic_add\(acc, [^\n]*wp\.{name}\([^\n]*x\[")
    cases = list({c: None for c in campaign.draw(150, 11, BUILTINS2) if into_output.search(c.source())})
    assert len(cases) >= 2
    return cases[:6]


@pytest.mark.parametrize("name", BUILTINS2_OPS)
def test_a_builtins2_adjoint_patched_wrong_is_found(name):
    cases = _with_builtin2(name)
    with builtin_mutant.wrong_adjoint(name, 1.5):
        failures = batch.check_batch(cases, prelude=builtin_mutant.salt(name, 1.5))
    assert {(f.variant, f.kind) for f in failures} == {("stock", "gradient"), ("zero_store", "gradient")}
    assert not any(known.match(f) for f in failures)


def test_no_false_alarm_on_the_builtins2_budget_unmutated():
    cases = list({c: None for name in BUILTINS2_OPS for c in _with_builtin2(name)})
    assert batch.check_batch(cases) == []


# Helpers with a hand-written @wp.func_grad, whose adjoint the printer derives from the helper's body: right as
# printed (no failure), and caught when every derivative is planted off by a factor 1.5 (printer.FUNC_GRAD_FORM).
FUNC_GRAD = {"float32", "func_grad", "smooth", "stores", "locals"}
WRONG_FUNC_GRAD = "    wp.adjoint[{p}] += {t}(1.5) * {d} * adj_ret"


def _with_func_grad():
    cases = [c for c in campaign.draw(2 * BUDGET, 10, FUNC_GRAD) if any(h.grad for h in c.program.helpers)]
    assert len(cases) >= BUDGET
    return cases[:BUDGET]


@newest_only
def test_a_helpers_func_grad_off_by_a_factor_is_found(monkeypatch):
    cases = _with_func_grad()
    monkeypatch.setattr(printer, "FUNC_GRAD_FORM", WRONG_FUNC_GRAD)
    assert "wp.float32(1.5) * " in batch.module_source(cases)
    failures = batch.check_batch(cases)
    assert {(f.variant, f.kind) for f in failures} == {("stock", "gradient"), ("zero_store", "gradient")}
    assert len(failures) >= 4  # two cases or more, each in both variants


@newest_only
def test_a_helpers_func_grad_as_derived_is_right():
    cases = _with_func_grad()
    assert "@wp.func_grad(" in batch.module_source(cases)
    assert batch.check_batch(cases) == []


# Helpers with a @wp.func_replay, which prints the helper's body again: right as printed (no failure), and caught
# where the replayed value feeds an adjoint when the replay is planted off by a factor 1.5 (printer.FUNC_REPLAY_FORM).
FUNC_REPLAY = {"float32", "func_replay", "smooth", "stores", "locals"}
WRONG_FUNC_REPLAY = "    return {t}(1.5) * {value}"


def _with_func_replay():
    cases = [c for c in campaign.draw(2 * BUDGET, 11, FUNC_REPLAY) if any(h.replay for h in c.program.helpers)]
    cases = cases[:BUDGET]
    assert len(cases) >= 4
    return cases


def test_a_helpers_func_replay_off_by_a_factor_is_found(monkeypatch):
    cases = _with_func_replay()
    monkeypatch.setattr(printer, "FUNC_REPLAY_FORM", WRONG_FUNC_REPLAY)
    assert "    return wp.float32(1.5) * " in batch.module_source(cases)
    failures = batch.check_batch(cases)
    assert failures and {f.kind for f in failures} == {"gradient"}
    assert {f.variant for f in failures} == {"stock", "zero_store"}


@newest_only
def test_a_helpers_func_replay_as_printed_is_right():
    cases = _with_func_replay()
    assert "@wp.func_replay(" in batch.module_source(cases)
    assert batch.check_batch(cases) == []
