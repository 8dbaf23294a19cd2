"""A program-fuzzing campaign: draw batches of launch sequences, check each batch in one build on every path, shrink
and file new failures, and tally check mode's verdicts and the warnings collected (never printed).

A failure is filed by what its shrunk program contains (``programs.shrink.constructs``), per path, kind and
verdict; one whose constructs hold those of a finding already filed counts toward it unshrunk. Statuses: a known
upstream failure (`programs.known`), warned (the package named it while the path ran), a check false alarm
(counted, a precision matter of check mode), or NEW; worse than stock, a check miss and a check Tape whose gradients
differ from the plain Tape's are this package's defects, never known.
"""

from __future__ import annotations

import collections
import os
import time
import warnings
from dataclasses import dataclass, field

import warp
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import seed as hypothesis_seed

from ..testing.fuzz.programs import grammar
from ..testing.fuzz.programs import known as program_known
from ..testing.fuzz.programs.nodes import Launch
from ..testing.fuzz.programs.shrink import constructs
from . import check, paths, repro, shrink, verdicts

#: Failures that are check mode's own (never a path's wrong value).
CHECK_KINDS = (verdicts.MISS, verdicts.FALSE_ALARM, verdicts.CHECK_DIFFERS)


@dataclass
class Finding:
    path: tuple
    kind: str
    constructs: tuple
    failure: object  # the shrunk verdicts.Failure
    count: int = 1
    repro_path: str = ""
    known: str = ""
    warned: bool = False
    worse: bool = False

    @property
    def explained(self) -> bool:
        """Known, a check false alarm (counted apart), or warned (never a worse-than-stock plain Tape, a miss or a
        check Tape off the plain Tape's gradients)."""
        if self.kind == verdicts.FALSE_ALARM:
            return True
        if self.kind in (verdicts.MISS, verdicts.CHECK_DIFFERS):
            return False
        return bool(self.known) or (self.warned and not (self.worse and self.path[1] == "plain"))

    @property
    def status(self) -> str:
        if self.kind == verdicts.FALSE_ALARM:
            return "check false alarm"
        if self.kind == verdicts.MISS:
            return "CHECK MISS"
        if self.worse:
            return "worse, warned" if self.explained else "WORSE THAN STOCK"
        return self.known or ("warned" if self.warned else "NEW")

    @property
    def label(self) -> str:
        """The finding's class: its known id, else its kind and constructs."""
        return self.known or f"{self.kind}: {', '.join(self.constructs)}"


@dataclass
class Summary:
    programs: int = 0
    launches: int = 0
    builds: int = 0
    seconds: float = 0.0
    findings: list = field(default_factory=list)
    counts: collections.Counter = field(default_factory=collections.Counter)
    runs: collections.Counter = field(default_factory=collections.Counter)
    warnings: collections.Counter = field(default_factory=collections.Counter)
    first: dict = field(default_factory=dict)  # finding label -> programs drawn until its first failure
    version: str = ""
    seed: int = 0

    @property
    def new(self) -> list:
        return [f for f in self.findings if not f.explained]

    @property
    def worse(self) -> list:
        return [f for f in self.findings if f.worse]


def draw(count: int, seed: int, features=None) -> list:
    """``count`` programs drawn by hypothesis from `grammar.programs`, reproducibly for a given ``seed``."""
    found = []

    @hypothesis_seed(seed)
    @settings(
        max_examples=count, database=None, deadline=None, phases=[Phase.generate], suppress_health_check=list(HealthCheck)
    )
    @given(grammar.programs(features))
    def collect(case):
        found.append(case)

    collect()
    return found


def matches(finding: Finding, failure, labels) -> bool:
    return (
        finding.path == failure.path
        and finding.kind == failure.kind
        and finding.worse == failure.worse
        and set(finding.constructs) <= set(labels)
    )


#: Which failure of a program is shrunk: worse than stock first, then check's own, then the package's paths.
def _priority(failure) -> tuple:
    return (not failure.worse, failure.kind != verdicts.MISS, failure.path == paths.STOCK, failure.kind != "gradient")


def run(
    *,
    minutes: float = 1.0,
    seed: int = 0,
    features=None,
    out: str | None = None,
    batch_size: int = 32,
    max_batches: int | None = None,
    shrink_rounds: int = 8,
    bridge_every: int = 4,
    progress=None,
    log=None,
) -> Summary:
    """Fuzz for ``minutes`` (or ``max_batches``); one repro per distinct failure into ``out``. Every warning is
    recorded into the summary (`Summary.warnings`), none printed."""
    warp.config.quiet = True
    summary = Summary(version=warp.config.version, seed=seed)
    start = time.monotonic()
    deadline = start + 60.0 * minutes
    index = 0
    with warnings.catch_warnings(record=True) as stray:
        warnings.simplefilter("always")
        while time.monotonic() < deadline and (max_batches is None or index < max_batches):
            cases = draw(batch_size, seed * 100003 + index, features)
            checked = check.check_batch(cases, bridge_every=bridge_every)
            summary.builds += 1
            summary.counts += checked.counts
            summary.runs += checked.runs
            summary.warnings += checked.warnings
            by_case = collections.defaultdict(list)
            for failure in checked.failures:
                by_case[id(failure.case)].append(failure)
            for j, case in enumerate(cases):
                summary.programs += 1
                summary.launches += sum(isinstance(s, Launch) for s in case.program.body)
                group = by_case.get(id(case), [])
                if group:
                    _file_group(summary, group, out, shrink_rounds, log)
            index += 1
            if progress is not None:
                progress(summary, time.monotonic() - start)
        summary.warnings.update(w.category.__name__ for w in stray)
    summary.seconds = time.monotonic() - start
    return summary


def _file_group(summary: Summary, group: list, out, rounds: int, log) -> None:
    labels = constructs(group[0].case.program)
    if all(any(matches(f, failure, labels) for f in summary.findings) for failure in group):
        for failure in group:
            next(f for f in summary.findings if matches(f, failure, labels)).count += 1
        return
    primary = min(group, key=_priority)
    small = shrink.shrink(primary, rounds=rounds, log=log) if rounds else primary
    _file(summary, small, out)
    for failure in group:
        if failure is not primary and not any(matches(f, failure, labels) for f in summary.findings):
            _file(summary, failure, out)


def _file(summary: Summary, failure, out) -> None:
    labels = constructs(failure.case.program)
    key = (failure.path, failure.kind, failure.worse, labels)
    for finding in summary.findings:
        if (finding.path, finding.kind, finding.worse, finding.constructs) == key:
            finding.count += 1
            return
    finding = Finding(
        failure.path,
        failure.kind,
        labels,
        failure,
        known=program_known.match(failure, labels),
        warned=bool(failure.warned),
        worse=failure.worse,
    )
    summary.first.setdefault(finding.label, summary.programs)
    if out is not None:
        os.makedirs(out, exist_ok=True)
        worse = "_worse" if failure.worse else ""
        kind = failure.kind.replace(" ", "_")
        name = f"{len(summary.findings):03d}_{failure.path[0]}_{failure.path[1]}_{kind}{worse}.py"
        finding.repro_path = os.path.join(out, name)
        with open(finding.repro_path, "w") as f:
            f.write(repro.script(failure, ", ".join(labels)))
    summary.findings.append(finding)


def table(summary: Summary) -> str:
    """The findings as a text table, then the counts: programs, rates, check mode's verdicts, warnings collected."""
    rows = [("path", "kind", "count", "status", "constructs", "repro")]
    for f in summary.findings:
        path = f"{f.path[0]} on {f.path[1]}"
        rows.append((path, f.kind, str(f.count), f.status, ", ".join(f.constructs), f.repro_path or "-"))
    widths = [max(len(r[k]) for r in rows) for k in range(len(rows[0]))]
    lines = ["  ".join(cell.ljust(w) for cell, w in zip(row, widths)).rstrip() for row in rows]
    lines.insert(1, "-" * len(lines[0]))
    rate = 60.0 * summary.programs / summary.seconds if summary.seconds else 0.0
    launches = summary.launches / summary.programs if summary.programs else 0.0
    lines.append(
        f"warp-lang {summary.version}, seed {summary.seed}: {summary.programs} programs ({launches:.1f} launches on "
        f"average) in {summary.builds} builds, {summary.seconds:.0f} s ({rate:.0f} programs/min); "
        f"{len(summary.findings)} distinct failures, {len(summary.new)} neither known, warned nor counted apart"
    )
    lines.append(
        f"worse than stock: {len(summary.worse)} distinct ({sum(f.count for f in summary.worse)} failures); check "
        f"mode: {summary.counts['miss']} misses, {summary.counts['false alarm']} false alarms, "
        f"{summary.counts['on purpose']} reports with real=False (on purpose)"
    )
    bridges = ", ".join(f"{b} {summary.runs[f'zero_store/{b}']}" for b in paths.BRIDGES)
    lines.append(f"paths: 6 Tape paths per program; bridges run (one program in 4 each, where they apply): {bridges}")
    if summary.warnings:
        said = ", ".join(f"{name} {n}" for name, n in summary.warnings.most_common())
        lines.append(f"warnings collected (not printed): {said}")
    return "\n".join(lines)


def as_json(summary: Summary) -> dict:
    """The summary as JSON-able data (what `matrix` merges across Warp versions)."""
    return {
        "version": summary.version,
        "seed": summary.seed,
        "programs": summary.programs,
        "launches": summary.launches,
        "seconds": round(summary.seconds, 1),
        "counts": dict(summary.counts),
        "runs": dict(summary.runs),
        "warnings": dict(summary.warnings),
        "first": summary.first,
        "findings": [
            {
                "path": list(f.path),
                "kind": f.kind,
                "class": f.label,
                "status": f.status,
                "worse_than_stock": f.worse,
                "warned": f.warned,
                "known": f.known,
                "constructs": list(f.constructs),
                "count": f.count,
                "repro": f.repro_path,
            }
            for f in summary.findings
        ],
    }


__all__ = ["Finding", "Summary", "as_json", "draw", "run", "table"]
