"""A program-fuzzing campaign: draw launch sequences, check them on every path in builds sized to the time left,
shrink and file new failures, and tally check mode's verdicts and the warnings collected (never printed). The
campaign's budget bounds all of it (`Budget`); what it cuts for time is said in the summary.

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

from .. import _compat
from ..testing.fuzz.budget import Budget, Stream
from ..testing.fuzz.campaign import by_class
from ..testing.fuzz.programs import grammar
from ..testing.fuzz.programs import known as program_known
from ..testing.fuzz.programs.nodes import Launch
from ..testing.fuzz.programs.shrink import constructs
from . import check, paths, repro, shrink, verdicts

#: Failures that are check mode's own (never a path's wrong value), and the measuring Tape's.
CHECK_KINDS = (
    verdicts.MISS,
    verdicts.FALSE_ALARM,
    verdicts.CHECK_DIFFERS,
    verdicts.MEASURE_MISS,
    verdicts.MEASURE_FALSE_ALARM,
    verdicts.MEASURE_DIFFERS,
)


@dataclass
class ProgramFinding:
    """A class of failures: one path, kind and verdict, filed by the constructs of its (shrunk) program; a known,
    warned or counted-apart one by its reason instead (``key``), unshrunk."""

    path: tuple
    kind: str
    constructs: tuple
    failure: object  # the (shrunk) verdicts.Failure
    count: int = 1
    repro_path: str = ""
    known: str = ""
    warned: str = ""  # what the package said, by its first words ("read before and after write")
    worse: bool = False
    key: str = ""  # for an explained finding: its known id, "warned: ...", or "check false alarm"
    also: set = field(default_factory=set)  # other paths of the same programs that failed with it (same cause)

    @property
    def explained(self) -> bool:
        """Known, a check false alarm (counted apart), or warned (never a worse-than-stock plain Tape, a miss or a
        check Tape off the plain Tape's gradients)."""
        return bool(self.key)

    @property
    def status(self) -> str:
        if self.kind == verdicts.FALSE_ALARM:
            return "check false alarm"
        if self.kind == verdicts.MISS:
            return "CHECK MISS"
        if self.kind == verdicts.MEASURE_FALSE_ALARM:
            return "MEASURE FALSE ALARM"
        if self.kind == verdicts.MEASURE_MISS:
            return "MEASURE MISS"
        if self.worse:
            return "worse, warned" if self.explained else "WORSE THAN STOCK"
        return self.known or ("warned" if self.warned else "NEW")

    @property
    def label(self) -> str:
        """The finding's class: its known id or reason, else its kind and constructs."""
        return self.key or f"{self.kind}: {', '.join(self.constructs)}"


def explanation(failure, labels) -> str:
    """Why ``failure`` is not this campaign's to shrink: its known id, a check false alarm (counted apart), or the
    package's warning (never for a plain Tape worse than stock, a check miss, a check Tape off the plain Tape's
    gradients); "" when it is to be shrunk and filed by its constructs."""
    if failure.kind == verdicts.FALSE_ALARM:
        return "check false alarm"
    if failure.kind in (verdicts.MISS, verdicts.CHECK_DIFFERS) or failure.kind in CHECK_KINDS[3:]:
        return ""
    if failure.path[1] == "rollout":  # the rollout runs the body again: what the second run meets counts too
        repeated = paths.repeated(failure.case.program, paths.ROLLOUT_STEPS)
        labels = tuple(sorted(set(labels) | set(constructs(repeated))))
    found = program_known.match(failure, labels)
    if found:
        return found
    if failure.warned and not (failure.worse and failure.tape == "plain"):
        return "warned: " + failure.warned.split(":")[0][:60]
    return ""


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
    budget: float = 0.0  # the seconds the campaign was given
    cut: str = ""  # what it cut for time (`Budget.said`), "" when nothing

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
        max_examples=count,
        database=None,
        deadline=None,
        phases=[Phase.generate],
        suppress_health_check=list(HealthCheck),
    )
    @given(grammar.programs(features))
    def collect(case):
        found.append(case)

    collect()
    return found


def matches(finding: ProgramFinding, failure, labels, reason: str = "") -> bool:
    """``failure`` counts toward ``finding``: same path, kind and verdict, and the same reason (an explained one) or
    a program holding the finding's constructs."""
    if (finding.path, finding.kind, finding.worse) != (failure.path, failure.kind, failure.worse):
        return False
    if finding.key or reason:
        return finding.key == reason
    return set(finding.constructs) <= set(labels)


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
    """Fuzz for ``minutes`` (or ``max_batches`` builds), all of it: drawing, building, checking, shrinking and
    writing one repro per distinct failure into ``out`` (`Budget` sizes each build to the time left; what it cuts
    is in ``Summary.cut``). ``progress(summary, seconds, doing)`` is told each step as it starts. Every warning is
    recorded into the summary (`Summary.warnings`), none printed."""
    quiet()
    summary = Summary(version=warp.config.version, seed=seed, budget=60.0 * minutes)
    clock = Budget(
        summary.budget, report=None if progress is None else lambda doing: progress(summary, clock.elapsed(), doing)
    )
    stream = Stream(lambda k: draw(batch_size, seed * 100003 + k, features))
    with _compat.warp_warnings_as_warnings(), warnings.catch_warnings(record=True) as stray:
        warnings.simplefilter("always")
        while not clock.expired() and summary.builds != max_batches:
            size = clock.fit(batch_size)
            if size == 0:
                break
            for case, group in _check(summary, stream, size, bridge_every, clock):
                summary.programs += 1
                summary.launches += sum(isinstance(s, Launch) for s in case.program.body)
                if group:
                    _file_group(summary, group, out, shrink_rounds, log, clock)
        summary.warnings.update(w.category.__name__ for w in stray)
    summary.seconds = clock.elapsed()
    summary.cut = clock.said()
    clock.report("done")
    return summary


def _check(summary: Summary, stream: Stream, size: int, bridge_every: int, clock: Budget) -> list:
    """One build of ``size`` programs of ``stream``, each checked until the deadline (the others cut): ``(case,
    its failures)`` for each program checked, in order (the summary counts them as it files them:
    `Summary.first`). Its cost, the draws included, sizes the next build."""
    started, done = time.monotonic(), []
    cases = stream.take(size)
    clock.report(f"building {len(cases)} programs")

    def each(case):
        done.append(case)
        clock.report(f"checking {len(done)}/{len(cases)}")

    checked = check.check_batch(cases, bridge_every=bridge_every, stop=clock.expired, each=each)
    summary.builds += 1
    summary.counts += checked.counts
    summary.runs += checked.runs
    summary.warnings += checked.warnings
    if len(done) == len(cases):
        clock.measure("batch", len(cases), time.monotonic() - started)
    clock.cut("program", "built, not checked", len(cases) - len(done))
    by_case = collections.defaultdict(list)
    for failure in checked.failures:
        by_case[id(failure.case)].append(failure)
    return [(case, by_case.get(id(case), [])) for case in done]


def quiet() -> None:
    """No module-load lines: ``quiet`` up to warp-lang 1.18, ``log_level`` from 1.19 (as the command line sets)."""
    warp.config.quiet = True
    if hasattr(warp.config, "log_level") and hasattr(warp, "LOG_WARNING"):
        warp.config.log_level = warp.LOG_WARNING


def _file_group(summary: Summary, group: list, out, rounds: int, log, clock: Budget) -> None:
    """One program's failures: each explained one counts toward (or opens) the finding of its reason, unshrunk;
    the others are shrunk once (the most telling of them) and filed by the shrunk program's constructs, the rest
    of them counted with it (the same program: most likely the same cause)."""
    labels = constructs(group[0].case.program)
    pending = []
    for failure in group:
        reason = explanation(failure, labels)
        finding = next((f for f in summary.findings if matches(f, failure, labels, reason)), None)
        if finding is not None:
            finding.count += 1
        elif reason:
            _file(summary, failure, out, labels, reason)
        else:
            pending.append(failure)
    if not pending:
        return
    primary = min(pending, key=_priority)
    clock.report("shrinking")
    small = shrink.shrink(primary, rounds=rounds, log=log, budget=clock) if rounds else primary
    finding = _file(summary, small, out, constructs(small.case.program), "")
    finding.also |= {f"{f.path[0]} on {f.path[1]} ({f.kind})" for f in pending if f is not primary}


def _file(summary: Summary, failure, out, labels, reason: str) -> ProgramFinding:
    """The finding ``failure`` opens (or counts toward, when one of its constructs and verdict exists)."""
    for finding in summary.findings:
        if matches(finding, failure, labels, reason) and (reason or finding.constructs == labels):
            finding.count += 1
            return finding
    finding = ProgramFinding(
        failure.path,
        failure.kind,
        labels,
        failure,
        known=program_known.match(failure, labels),
        warned=failure.warned,
        worse=failure.worse,
        key=reason,
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
    return finding


def table(summary: Summary) -> str:
    """The findings as a text table, then the counts: programs, rates, check mode's verdicts, warnings collected."""
    rows = [("path", "kind", "count", "status", "constructs (shrunk; for a known one, its first program's)", "repro")]
    for f in summary.findings:
        path = f"{f.path[0]} on {f.path[1]}"
        what = ", ".join(f.constructs) if not f.key else f"{f.key}" + (f" [{f.warned[:80]}]" if f.warned else "")
        if f.also:
            what += f" (with: {'; '.join(sorted(f.also))})"
        rows.append((path, f.kind, str(f.count), f.status, what, f.repro_path or "-"))
    widths = [max(len(r[k]) for r in rows) for k in range(len(rows[0]))]
    lines = ["  ".join(cell.ljust(w) for cell, w in zip(row, widths)).rstrip() for row in rows]
    lines.insert(1, "-" * len(lines[0]))
    rate = 60.0 * summary.programs / summary.seconds if summary.seconds else 0.0
    launches = summary.launches / summary.programs if summary.programs else 0.0
    budget = f" of a {summary.budget:.0f} s budget" if summary.budget else ""
    lines.append(
        f"warp-lang {summary.version}, seed {summary.seed}: {summary.programs} programs ({launches:.1f} launches on "
        f"average) in {summary.builds} builds, {summary.seconds:.0f} s{budget} ({rate:.0f} programs/min); "
        f"{len(summary.findings)} distinct failures, {len(summary.new)} neither known, warned nor counted apart"
    )
    lines.append(f"failures by class: {by_class(summary.findings, lambda f: f.key or f.status)}")
    lines.append(
        f"worse than stock: {len(summary.worse)} distinct ({sum(f.count for f in summary.worse)} failures); check "
        f"mode: {summary.counts['miss']} misses, {summary.counts['false alarm']} false alarms, "
        f"{summary.counts['on purpose']} reports with real=False (on purpose)"
    )
    lines.append(
        f"measuring Tape: {summary.counts['measure miss']} misses ({summary.counts['measure miss, not a check miss']} "
        f"where the check Tape reported one), {summary.counts['measure false alarm']} false "
        f"alarms (a stale read or mutation labelled real by its effect where the plain Tape is right), "
        f"{summary.counts['measure no effect']} value hazards measured without effect, "
        f"{summary.counts['measure not measured, right']} not measured (left real) where the plain Tape is right"
    )
    bridges = ", ".join(f"{b} {summary.runs[f'zero_store/{b}']}" for b in paths.BRIDGES)
    lines.append(
        f"paths: 6 Tape paths and 2 measuring Tape paths per program; bridges run (one program in 4 each, where "
        f"they apply): {bridges}"
    )
    if summary.warnings:
        said = ", ".join(f"{name} {n}" for name, n in summary.warnings.most_common())
        lines.append(f"warnings collected (not printed): {said}")
    if summary.cut:
        lines.append(f"cut for time: {summary.cut}")
    return "\n".join(lines)


def as_json(summary: Summary) -> dict:
    """The summary as JSON-able data (what `matrix` merges across Warp versions)."""
    return {
        "version": summary.version,
        "seed": summary.seed,
        "programs": summary.programs,
        "launches": summary.launches,
        "seconds": round(summary.seconds, 1),
        "budget_seconds": round(summary.budget, 1),
        "cut_for_time": summary.cut,
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
                "warned": bool(f.warned),
                "known": f.known,
                "constructs": list(f.constructs),
                "count": f.count,
                "repro": f.repro_path,
            }
            for f in summary.findings
        ],
    }


__all__ = ["ProgramFinding", "Summary", "as_json", "draw", "run", "table"]
