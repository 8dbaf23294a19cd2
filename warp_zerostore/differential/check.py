"""Check a batch of drawn programs on every path: one build for all of them, then each program's paths, judged.

The six Tape paths run for every program; the bridge paths (`paths.BRIDGES`) each on one program in
``bridge_every`` (torch on programs 0, 4, 8, ..., JAX on 1, 5, ..., the rollout on 2, 6, ... for 4) where they
apply. Build-time warnings are recorded, never printed; every warning of a run too (`paths.Result.warnings`).
"""

from __future__ import annotations

import collections
import shutil
import tempfile
import warnings
from dataclasses import dataclass, field

from .. import _compat
from ..testing.fuzz import batch as kernel_batch
from ..testing.fuzz.programs import oracle
from . import batch, paths, verdicts


@dataclass
class Checked:
    """What a batch gave: its failures, check mode's counts, how often each path ran, the warnings recorded (by
    category), and the programs checked."""

    failures: list = field(default_factory=list)
    counts: collections.Counter = field(default_factory=collections.Counter)
    runs: collections.Counter = field(default_factory=collections.Counter)
    warnings: collections.Counter = field(default_factory=collections.Counter)
    programs: int = 0

    def add(self, other: Checked) -> None:
        self.failures += other.failures
        self.counts += other.counts
        self.runs += other.runs
        self.warnings += other.warnings
        self.programs += other.programs


@dataclass(frozen=True)
class _Plan:
    """What `check_batch` runs each program on (`check_program`'s arguments), and its ``stop`` and ``each``."""

    bridge_every: int
    tape_paths: tuple
    bridges: object
    stop: object
    each: object
    measure: bool = True


def check_batch(
    cases,
    *,
    bridge_every: int = 4,
    parts: int | None = None,
    tape_paths=paths.TAPE_PATHS,
    bridges=None,
    stop=None,
    each=None,
    measure: bool = True,
) -> Checked:
    """Build ``cases`` (bisecting a failed build) and check each on ``tape_paths`` and its sampled bridge path
    (``bridges``: run these bridges on every program instead), and (``measure``) on the measuring Tape's paths.
    ``each(case)`` is called after a program is checked; once ``stop()`` is true, the programs not checked yet are
    left so (a campaign's deadline)."""
    cases = list(cases)
    parts = max(1, min(parts or kernel_batch.parallel_builds(), len(cases) // kernel_batch.MIN_PART or 1))
    workdir = tempfile.mkdtemp(prefix="warp_zerostore_programs_")
    plan = _Plan(bridge_every, tuple(tape_paths), bridges, stop, each, measure)
    try:
        with _compat.warp_warnings_as_warnings():  # Warp's own warnings recorded with the rest, never printed
            return _check_chunks(cases, parts, workdir, plan)
    finally:
        shutil.rmtree(workdir, ignore_errors=True)


def _check_chunks(cases, parts, workdir, plan: _Plan) -> Checked:
    checked = Checked()
    chunks = batch.chunks_of(cases, parts)
    with warnings.catch_warnings(record=True) as built:
        warnings.simplefilter("always")
        modules = batch.build(chunks, workdir)
    checked.warnings.update(w.category.__name__ for w in built)
    for (chunk, indices, backward), module in zip(chunks, modules):
        if isinstance(module, Exception):
            checked.add(_bisect(chunk, indices, backward, workdir, plan))
        else:
            checked.add(_check_built(module, chunk, indices, built, plan))
    return checked


def _check_built(module, cases, indices, built, plan: _Plan) -> Checked:
    """Each program of a built module, until ``plan.stop()``; ``built``: the warnings its build gave."""
    checked = Checked()
    for j, case in zip(indices, cases):
        if plan.stop is not None and plan.stop():
            break
        said = [str(w.message) for w in built if f"'p{j}_k" in str(w.message)]
        checked.add(
            check_program(module, j, case, plan.bridge_every, plan.tape_paths, said, plan.bridges, plan.measure)
        )
        if plan.each is not None:
            plan.each(case)
    return checked


def _bisect(cases, indices, backward, workdir, plan: _Plan) -> Checked:
    checked = Checked()
    if not cases or (plan.stop is not None and plan.stop()):
        return checked
    with warnings.catch_warnings(record=True) as built:
        warnings.simplefilter("always")
        (module,) = batch.build([(cases, indices, backward)], workdir)
    if not isinstance(module, Exception):
        return _check_built(module, cases, indices, built, plan)
    if len(cases) == 1:
        detail = batch.short(module)
        checked.programs = 1
        checked.failures = [verdicts.Failure(cases[0], p, verdicts.BUILD, detail=detail) for p in plan.tape_paths]
        if plan.each is not None:
            plan.each(cases[0])
        return checked
    half = len(cases) // 2
    checked.add(_bisect(cases[:half], indices[:half], backward, workdir, plan))
    checked.add(_bisect(cases[half:], indices[half:], backward, workdir, plan))
    return checked


def check_program(
    module, j: int, case, bridge_every: int = 4, tape_paths=paths.TAPE_PATHS, said=(), bridges=None, measure=True
) -> Checked:
    """Program ``p{j}`` of ``module`` on every Tape path and, where sampled and applicable, one bridge path
    (``bridges``: these, instead of the sampled one); with ``measure``, on the measuring Tape's paths too."""
    checked = Checked(programs=1)
    try:
        reference = oracle.reference(case.program, case.thresholds, case.data, case.cotangents)
    except oracle.Kinked:  # never by construction; reported, never a bug of Warp
        checked.counts["kinked"] += 1
        return checked
    results = {}
    for variant, tape in tape_paths:
        results[(variant, tape)] = paths.run_tape(module, j, case, variant, tape)
        checked.runs[f"{variant}/{tape}"] += 1
    failures, counts = verdicts.judge(case, results, reference)
    if measure:
        measured = {}
        for variant, tape in paths.MEASURE_PATHS:
            measured[(variant, tape)] = paths.run_tape(module, j, case, variant, tape)
            checked.runs[f"{variant}/{tape}"] += 1
        more, measure_counts = verdicts.judge_measure(case, results, measured, reference)
        failures += more
        counts.update(measure_counts)
        results.update(measured)  # their warnings are collected with the rest
    if bridges is None:
        sampled = bridge_every and j % bridge_every < len(paths.BRIDGES)
        bridges = (paths.BRIDGES[j % bridge_every],) if sampled else ()
    for bridge in bridges:
        if paths.applies(case.program, bridge):
            checked.counts[f"{bridge}: not applicable"] += 1
        else:
            failures += _bridge(module, j, case, bridge, results, reference, checked)
    for result in results.values():
        checked.warnings.update(c for c, _ in result.warnings)
    for failure in failures:
        if not failure.warned and said:
            failure.warned = said[0][:300]
    checked.failures = failures
    checked.counts.update(counts)
    return checked


def _bridge(module, j, case, bridge, results, reference, checked) -> list:
    """The failures of the bridge path ``bridge`` (judged against stock on a plain Tape of the same program; for a
    rollout of `paths.ROLLOUT_STEPS` steps, against the body repeated as often)."""
    stock = results[paths.STOCK]
    if bridge == "rollout":
        program = paths.repeated(case.program, paths.ROLLOUT_STEPS)
        try:
            reference = oracle.reference(program, case.thresholds, case.data, case.cotangents)
        except oracle.Kinked:  # a kink met only by the second step: not a program the grammar vouches for
            checked.counts["rollout kinked"] += 1
            return []
        if reference.retain_conflict:  # the second step stores over a retain_grad array the first one used
            checked.counts["rollout: retain_grad stored over"] += 1
            return []
        stock = paths.run_tape(module, j, case, "stock", "plain", repeat=paths.ROLLOUT_STEPS)
    result = paths.run_bridge(module, j, case, bridge)
    checked.runs[f"zero_store/{bridge}"] += 1
    checked.warnings.update(c for c, _ in result.warnings)
    failures, _ = verdicts.judge(case, {paths.STOCK: stock, ("zero_store", bridge): result}, reference)
    return [f for f in failures if f.path != paths.STOCK]


__all__ = ["Checked", "check_batch", "check_program"]
