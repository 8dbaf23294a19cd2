"""The verdicts on one drawn program, from its paths' `Result`s and the reference.

* **wrong** (per path): a forward value or a gradient off the reference (``fuzz.oracle.mismatch``'s tolerance),
  or an error that is not a refusal by name of a mutation the program has (`programs.oracle` rule 5).
* **worse than stock**: a package path wrong where stock Warp on a plain Tape is right. Always this package's
  defect. The check Tape's gradients must also be bitwise the plain Tape's (`CHECK_DIFFERS` otherwise).
* **check mode's own**, per variant: a **miss** (wrong on a plain Tape, right on the snapshot Tape or refused by
  name there, and the check Tape reports no real hazard); a **false alarm** (a real hazard reported where the plain
  Tape's gradient is right); the hazards reported on purpose with ``real=False`` are counted apart.
* **the measuring Tape's own** (`judge_measure`), per variant: its gradients must be bitwise the plain Tape's
  (`MEASURE_DIFFERS` otherwise, worse than stock); a **measure miss** (as a check miss: no real claim left where
  the plain Tape is wrong and the snapshot Tape right or refused by name); a **measure false alarm** (a stale read
  or mutation labelled real by its measured effect where the plain Tape's gradient is right). Counted: value
  hazards measured without effect, and those not measured (left real) where the plain Tape is right.
"""

from __future__ import annotations

import collections
from dataclasses import dataclass, field

import numpy as np

from ..testing.fuzz import oracle as kernel_oracle
from .paths import STOCK
from .runs import VALUE_CLAIMS

#: The kind of a failure: the forward values, the gradients, an error (a crash), the check Tape's gradients not
#: the plain Tape's, a check miss, a check false alarm.
FORWARD, GRADIENT, CRASH, BUILD = "forward", "gradient", "crash", "build"
CHECK_DIFFERS, MISS, FALSE_ALARM = "check differs", "check miss", "check false alarm"
MEASURE_DIFFERS, MEASURE_MISS, MEASURE_FALSE_ALARM = "measure differs", "measure miss", "measure false alarm"
#: What a refusal by name of a mutation after record says (`tape.OverwriteError` of the snapshot Tape).
REFUSAL = "mutated after record"


@dataclass
class Failure:
    """One failure of one drawn program on one path (``(variant, tape or bridge)``)."""

    case: object
    path: tuple
    kind: str
    worst: float = float("inf")
    array: str = ""
    detail: str = ""
    worse: bool = False  # a package path wrong where stock on a plain Tape is right
    warned: str = ""  # a warning the package gave on this path (any time of its run)
    got: dict = field(default_factory=dict)  # what the path gave, by array
    expected: dict = field(default_factory=dict)  # the reference's, by array
    stock: dict = field(default_factory=dict)  # stock on a plain Tape's, by array (for worse than stock)

    @property
    def variant(self) -> str:
        return self.path[0]

    @property
    def tape(self) -> str:
        return self.path[1]

    def describe(self) -> str:
        return f"{self.variant} on {self.tape}"


#: Warnings that say the package knows a result may be off (by name): the Tape's and the replay's.
PACKAGE_WARNINGS = ("OverwriteWarning", "ReplayWarning", "AdjointWarning")


def package_warning(result) -> str:
    return next((m for c, m in result.warnings if c in PACKAGE_WARNINGS), "")


def refused(result, reference) -> bool:
    """An error naming the mutation after record the program has (the snapshot Tape's ``OverwriteError``, a
    rollout's ``CheckpointError``): a refusal by name, right where the program has one (`programs.oracle` rule 5);
    and a rollout's refusal of a copy inside a step over what the step read."""
    named = REFUSAL in result.error or result.error_type == "CheckpointError"
    # a rollout refuses, by name, a step whose wp.copy overwrites what a launch of the step read (its Tape
    # snapshots launches, not copies): right wherever it says so, the read being the kernel's own
    copy_in_step = result.error_type == "CheckpointError" and "with wp.copy after kernel" in result.error
    return bool(result.error) and ((reference.mutated and named) or copy_in_step)


def compare(case, result, reference) -> tuple | None:
    """``(kind, worst, array, got, expected)`` of ``result`` against the reference, or None when right."""
    if result.error:
        return None if refused(result, reference) else (CRASH, float("inf"), "", {}, {})
    dtype = case.program.dtype
    for kind, got, want in ((FORWARD, result.outputs, reference.outputs), (GRADIENT, result.grads, reference.grads)):
        scores = {}
        for name, expected in want.items():
            actual = got[name]
            if kind == GRADIENT:
                mask = reference.compared[name]
                if not mask.any():
                    continue
                actual, expected = actual[mask], expected[mask]
                rounding = reference.rounding[name][mask]
            else:
                rounding = 0.0
            scores[name] = kernel_oracle.mismatch(actual, expected, dtype, rounding)
        if scores:
            name = max(scores, key=scores.get)
            if scores[name] > 1.0:
                return kind, scores[name], name, got, want
    return None


def judge(case, results: dict, reference) -> tuple:
    """The failures of one program (`Failure`s) and its check-mode counts ``{"miss": n, "false alarm": n,
    "on purpose": n}`` (per variant, over its check Tape)."""
    failures = []
    stock = results.get(STOCK)
    stock_right = stock is not None and compare(case, stock, reference) is None
    for path, result in results.items():
        found = compare(case, result, reference)
        if found is None:
            continue
        kind, worst, array, got, want = found
        failure = Failure(case, path, kind, worst, array, result.error, got=got, expected=want)
        failure.warned = package_warning(result)
        if path != STOCK and stock_right:
            failure.worse, failure.stock = True, {**stock.outputs, **stock.grads}
        failures.append(failure)
    counts = {"miss": 0, "false alarm": 0, "on purpose": 0}
    for variant in ("stock", "zero_store"):
        plain, snapshot, check = (results.get((variant, t)) for t in ("plain", "snapshot", "check"))
        if plain is None or check is None:
            continue
        if plain.ran and check.ran and not _same_gradients(plain, check):
            failure = Failure(case, (variant, "check"), CHECK_DIFFERS, detail="the check Tape's gradients differ")
            failure.worse, failure.got, failure.expected = True, check.grads, plain.grads
            failures.append(failure)
        plain_wrong = compare(case, plain, reference) is not None
        snapshot_right = snapshot is not None and compare(case, snapshot, reference) is None
        claims = check.real_claims()
        counts["on purpose"] += len(check.on_purpose())
        if plain_wrong and snapshot_right and not claims:
            counts["miss"] += 1
            failures.append(Failure(case, (variant, "check"), MISS, detail="wrong on a plain Tape, not reported"))
        if claims and not plain_wrong:
            counts["false alarm"] += 1
            failure = Failure(case, (variant, "check"), FALSE_ALARM, detail=claims[0][2][:300])
            failures.append(failure)
    return failures, counts


def judge_measure(case, results: dict, measured: dict, reference) -> tuple:
    """The measuring Tape's failures and counts for one program: ``measured`` holds its paths' `Result` s, ``results``
    the Tape paths' (its plain and snapshot Tapes)."""
    failures = []
    counts = collections.Counter(
        {"measure miss": 0, "measure false alarm": 0, "measure no effect": 0, "measure not measured, right": 0}
    )
    for variant in ("stock", "zero_store"):
        plain, snapshot, path = (
            results.get((variant, "plain")),
            results.get((variant, "snapshot")),
            (variant, "measure"),
        )
        result = measured.get(path)
        if plain is None or result is None:
            continue
        if plain.ran and result.ran and not _same_gradients(plain, result):
            failure = Failure(case, path, MEASURE_DIFFERS, detail="the measuring Tape's gradients differ")
            failure.worse, failure.got, failure.expected = True, result.grads, plain.grads
            failures.append(failure)
        if not result.ran:
            continue
        plain_wrong = compare(case, plain, reference) is not None
        snapshot_right = snapshot is not None and compare(case, snapshot, reference) is None
        counts["measure no effect"] += sum(1 for h in result.hazards if h[3:4] == ("no effect",))
        if plain_wrong and snapshot_right and not result.real_claims():
            counts["measure miss"] += 1
            checked = results.get((variant, "check"))
            if checked is not None and checked.real_claims():  # the check Tape had it: lost in the measuring
                counts["measure miss, not a check miss"] += 1
            failures.append(Failure(case, path, MEASURE_MISS, detail="wrong on a plain Tape, no real report left"))
        if not plain_wrong:
            for h in result.real_claims():
                if h[0] in VALUE_CLAIMS and h[3:4] == ("not measured",):
                    counts["measure not measured, right"] += 1
                    why = h[2].rsplit("Not measured: ", 1)[-1][:48]
                    counts[f"measure not measured, right: {why}"] += 1
            claims = result.measured_claims()
            if claims and _effect_compared(case, result, reference):
                counts["measure false alarm"] += 1
                failures.append(Failure(case, path, MEASURE_FALSE_ALARM, detail=claims[0][2][:300]))
            elif claims:  # its effect lies in elements the oracle does not compare (rule 4): true, not judged
                counts["measure effect where the oracle does not compare"] += 1
    return failures, counts


def _effect_compared(case, result, reference) -> bool:
    """Does a measuring pass's gradient differ from the plain one's, beyond the oracle's tolerance, on an element the
    oracle compares? (Where it does not, the effect is measured but the plain gradient is not judged there.)"""
    plain = result.measured.get("plain", {})
    for name, grads in result.measured.items():
        if name == "plain":
            continue
        for array, values in grads.items():
            mask = reference.compared.get(array)
            if mask is None or array not in plain or not mask.any():
                continue
            if kernel_oracle.mismatch(values[mask], plain[array][mask], case.program.dtype) > 1.0:
                return True
    return not result.measured  # no passes recorded: judged by its label alone


def _same_gradients(plain, check) -> bool:
    return all(np.array_equal(plain.grads[n], check.grads[n], equal_nan=True) for n in plain.grads)


__all__ = [
    "BUILD",
    "CHECK_DIFFERS",
    "CRASH",
    "FALSE_ALARM",
    "FORWARD",
    "Failure",
    "GRADIENT",
    "MEASURE_DIFFERS",
    "MEASURE_FALSE_ALARM",
    "MEASURE_MISS",
    "MISS",
    "compare",
    "judge",
    "judge_measure",
    "refused",
]
