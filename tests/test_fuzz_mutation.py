"""The fuzzer finds planted bugs within a small fixed budget (one build of a few drawn kernels each).

Mutants: a builtin replaced by a ``@wp.func`` whose ``@wp.func_grad`` is off by a factor (the oracle still
differentiates the true ``sin``), and the package's zeroing switched off in the flagged variant
(``zero_store=False``, where overwrites matter). Their negative twin: the same budget, unmutated, finds nothing.
"""

import pytest

import warp_zerostore as wp
from warp_zerostore.testing.fuzz import batch, campaign, printer

# The mutants prove the fuzzer's power, which does not depend on the Warp version: they run on the newest
# supported Warp only, to keep the matrix's time small (tests/test_fuzz.py's campaign runs on every version).
pytestmark = pytest.mark.skipif(
    not wp.config.version.startswith("1.19."),
    reason="the fuzzer's mutation tests run on the newest supported Warp (1.19) only; see tests/test_fuzz.py",
)

# float32 kernels of smooth arithmetic with stores: small kernels that build fast, and no known Warp bug.
SMOOTH = {"float32", "smooth", "stores", "locals", "atomics"}
OVERWRITES = {"float32", "smooth", "stores"}  # several stores to y[i], no read-back
BUDGET = 12  # kernels, one build

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


def test_a_func_grad_off_by_a_factor_is_found(monkeypatch):
    cases = _with_sin(campaign.draw(4 * BUDGET, 7, SMOOTH))[:BUDGET]
    assert len(cases) >= 4
    monkeypatch.setitem(printer.SAFE_FORMS, "sin", "mutant_sin({a})")
    failures = batch.check_batch(cases, prelude=WRONG_SIN)
    assert {(f.variant, f.kind) for f in failures} == {("stock", "gradient"), ("zero_store", "gradient")}


def test_the_packages_zeroing_switched_off_is_found(monkeypatch):
    cases = [c for c in campaign.draw(4 * BUDGET, 8, OVERWRITES) if printer.source(c.program, {}).count("y[i] =") > 1]
    cases = cases[:BUDGET]
    assert len(cases) >= 4
    monkeypatch.setitem(batch.VARIANTS, "zero_store", "@wpz.kernel(zero_store=False)")
    failures = batch.check_batch(cases)
    assert any(f.variant == "zero_store" and f.kind == "gradient" for f in failures)


def test_no_false_alarm_on_the_same_budget_unmutated():
    cases = _with_sin(campaign.draw(4 * BUDGET, 7, SMOOTH))[:BUDGET]
    failures = batch.check_batch(cases)
    assert [f for f in failures if f.variant == "zero_store"] == []
