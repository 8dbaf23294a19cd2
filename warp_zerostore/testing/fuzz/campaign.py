"""A fuzzing campaign: draw kernels, check them in builds sized to the time left, shrink and file new failures.

The campaign's budget bounds all of it (`budget.Budget`); what it cuts for time is said in the summary. Failures
are deduplicated by what triggers them, per variant, Tape, kind and verdict: a known failure (`known`) is filed
under its known id, unshrunk (the known table names its trigger, known-issues.md its repro), and every later one
of that id counts toward it; a failure whose constructs include those of a finding already filed counts toward
it unshrunk; any other is shrunk, and filed under its shrunk constructs (``shrink.constructs``) with a standalone
repro script.

Verdicts: a failure **worse than stock** (`batch.Failure.worse`: a package path wrong where stock Warp on a
plain Tape is right) is this package's defect, never known; a package warning excuses it on the snapshot Tape
only (counted apart), never on a plain Tape, which must give what stock gives. Any other failure is known
(`known`), warned about by the package, or new.
"""

from __future__ import annotations

import os
import time
from dataclasses import dataclass, field

import warp
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import seed as hypothesis_seed

from . import batch, known, repro, shrink
from .budget import Budget, Stream
from .grammar import kernels


@dataclass
class KernelFinding:
    variant: str
    kind: str
    constructs: tuple
    failure: object  # the shrunk batch.Failure
    count: int = 1
    repro_path: str = ""
    known: str = ""  # the known-issue id it matches, or ""
    warned: bool = False  # the package warned about this kernel (ReplayWarning, AdjointWarning): not a silent failure
    tape: str = "plain"  # the Tape it failed on: "plain" or "snapshot"
    worse: bool = False  # worse than stock: wrong where stock Warp on a plain Tape is right

    @property
    def explained(self) -> bool:
        """Known, or warned about by the package; a warning never excuses a plain Tape worse than stock."""
        return bool(self.known) or (self.warned and not (self.worse and self.tape == "plain"))

    @property
    def status(self) -> str:
        if self.worse:
            return "worse, warned" if self.explained else "WORSE THAN STOCK"
        return self.known or ("warned" if self.warned else "NEW")


@dataclass
class Summary:
    kernels: int = 0  # checked, on every path
    builds: int = 0
    seconds: float = 0.0
    findings: list = field(default_factory=list)
    budget: float = 0.0  # the seconds the campaign was given
    cut: str = ""  # what it cut for time (`budget.Budget.said`), "" when nothing

    @property
    def new(self) -> list:
        """Findings neither known nor excused by a package warning (worse-than-stock ones among them)."""
        return [f for f in self.findings if not f.explained]

    @property
    def worse(self) -> list:
        """Findings worse than stock, excused or not: this package's defects."""
        return [f for f in self.findings if f.worse]


def draw(count: int, seed: int, features=None, **options) -> list:
    """``count`` cases drawn by hypothesis from `kernels`, reproducibly for a given ``seed``."""
    cases = []

    @hypothesis_seed(seed)
    @settings(
        max_examples=count,
        database=None,
        deadline=None,
        phases=[Phase.generate],
        suppress_health_check=list(HealthCheck),
    )
    @given(kernels(features, **options))
    def collect(case):
        cases.append(case)

    collect()
    return cases


def matches(finding: KernelFinding, failure) -> bool:
    """``failure`` counts toward ``finding``: same path, kind and verdict, and the same known issue (a known
    finding is filed by its id) or a kernel holding the finding's (shrunk) constructs."""
    if (finding.variant, finding.tape, finding.kind, finding.worse) != (*failure.path, failure.kind, failure.worse):
        return False
    if finding.known:
        return known.match(failure) == finding.known
    return set(finding.constructs) <= set(shrink.constructs(failure.case.program))


#: Which failure of a case is shrunk (the others come with it): worse than stock first, then the package's
#: remedy, then the other package paths, stock last; gradients before other kinds.
_SHRINK_ORDER = {path: k for k, path in enumerate((("zero_store", "snapshot"), *batch.PACKAGE_PATHS, batch.STOCK_PATH))}


def run(
    *,
    minutes: float = 1.0,
    seed: int = 0,
    features=None,
    out: str | None = None,
    batch_size: int = 64,
    max_batches: int | None = None,
    shrink_rounds: int = 12,
    device: str = "cpu",
    progress=None,
    log=None,
) -> Summary:
    """Fuzz for ``minutes`` (or ``max_batches`` builds), all of it: drawing, building, checking, shrinking and
    writing one repro per distinct failure into ``out`` (`budget.Budget` sizes each build to the time left; what
    it cuts is in ``Summary.cut``). ``progress(summary, seconds, doing)`` is told each step as it starts."""
    warp.config.quiet = True  # a line per module build would drown the progress bar
    summary = Summary(budget=60.0 * minutes)
    clock = Budget(
        summary.budget, report=None if progress is None else lambda doing: progress(summary, clock.elapsed(), doing)
    )
    stream = Stream(lambda k: draw(batch_size, seed * 100003 + k, features))
    while not clock.expired() and summary.builds != max_batches:
        size = clock.fit(batch_size)
        if size == 0:
            break
        failures = _check(summary, stream, size, device, clock)
        for group in _by_case(failures):
            _file_group(summary, group, out, shrink_rounds, device, log, clock)
    summary.seconds = clock.elapsed()
    summary.cut = clock.said()
    clock.report("done")
    return summary


def _check(summary: Summary, stream: Stream, size: int, device: str, clock: Budget) -> list:
    """One build of ``size`` cases of ``stream``, each checked until the deadline (the others cut); its failures.
    Its cost, the draws included, sizes the next build."""
    started, checked = time.monotonic(), 0
    cases = stream.take(size)
    clock.report(f"building {len(cases)} kernels")

    def each(case):
        nonlocal checked
        checked += 1
        summary.kernels += 1
        clock.report(f"checking {checked}/{len(cases)}")

    failures = batch.check_batch(cases, device, stop=clock.expired, each=each)
    summary.builds += 1
    if checked == len(cases):
        clock.measure("batch", len(cases), time.monotonic() - started)
    clock.cut("kernel", "built, not checked", len(cases) - checked)
    return failures


def _file_group(summary: Summary, group: list, out, rounds: int, device: str, log, clock: Budget) -> None:
    """One case's failures: each that matches a finding counts toward it; a known one opens its known finding,
    unshrunk (the known table has its repro); the others are shrunk once (the most telling of them) and the
    shrunk case's failures on their paths are filed."""
    pending = []
    for failure in group:
        finding = next((f for f in summary.findings if matches(f, failure)), None)
        if finding is not None:
            finding.count += 1
        elif known.match(failure):
            _file(summary, failure, out)
        else:
            pending.append(failure)
    if not pending:
        return
    primary = min(pending, key=lambda f: (not f.worse, _SHRINK_ORDER[f.path], f.kind != "gradient"))
    clock.report("shrinking")
    wanted = {(f.path, f.kind) for f in pending}
    for small in shrink.shrink(primary, rounds=rounds, device=device, log=log, budget=clock):
        if (small.path, small.kind) in wanted:
            _file(summary, small, out)


def _by_case(failures) -> list:
    groups = {}
    for failure in failures:
        groups.setdefault(id(failure.case), []).append(failure)
    return list(groups.values())


def _file(summary: Summary, failure, out) -> None:
    """Count ``failure`` toward the finding of its known id or of its (shrunk) constructs, or file a new one with
    its repro."""
    labels, known_id = shrink.constructs(failure.case.program), known.match(failure)
    key = (failure.variant, failure.tape, failure.kind, failure.worse)
    for finding in summary.findings:
        same = finding.known == known_id if known_id else (not finding.known and finding.constructs == labels)
        if (finding.variant, finding.tape, finding.kind, finding.worse) == key and same:
            finding.count += 1
            return
    finding = KernelFinding(
        failure.variant,
        failure.kind,
        known.trigger(known_id) if known_id else labels,
        failure,
        known=known_id,
        warned=bool(failure.warned),
        tape=failure.tape,
        worse=failure.worse,
    )
    if out is not None:
        os.makedirs(out, exist_ok=True)
        worse = "_worse" if failure.worse else ""
        name = f"{len(summary.findings):03d}_{failure.variant}_{failure.tape}_{failure.kind}{worse}.py"
        finding.repro_path = os.path.join(out, name)
        with open(finding.repro_path, "w") as f:
            f.write(repro.script(failure))
    summary.findings.append(finding)


def table(summary: Summary) -> str:
    """The findings as a text table, then the figures: kernels, per minute, failures by class, what was cut."""
    header = ("variant", "tape", "kind", "count", "worse", "status", "constructs (shrunk; a known one's: its trigger)")
    rows = [(*header, "repro")]
    for f in summary.findings:
        worse = "WORSE" if f.worse else "-"
        rows.append(
            (f.variant, f.tape, f.kind, str(f.count), worse, f.status, ", ".join(f.constructs), f.repro_path or "-")
        )
    widths = [max(len(r[k]) for r in rows) for k in range(len(rows[0]))]
    lines = ["  ".join(cell.ljust(w) for cell, w in zip(row, widths)).rstrip() for row in rows]
    lines.insert(1, "-" * len(lines[0]))
    rate = 60.0 * summary.kernels / summary.seconds if summary.seconds else 0.0
    budget = f" of a {summary.budget:.0f} s budget" if summary.budget else ""
    lines.append(
        f"{summary.kernels} kernels in {summary.builds} builds, {summary.seconds:.0f} s{budget} ({rate:.0f} "
        f"kernels/min); {len(summary.findings)} distinct failures, {len(summary.new)} neither known nor warned"
    )
    lines.append(f"failures by class: {by_class(summary.findings)}")
    excused = sum(f.explained for f in summary.worse)
    lines.append(
        f"worse than stock (a package path wrong where stock on a plain Tape is right): {len(summary.worse)} "
        f"distinct ({sum(f.count for f in summary.worse)} failures), {excused} of them warned by the package "
        "(snapshot Tape)"
    )
    if summary.cut:
        lines.append(f"cut for time: {summary.cut}")
    return "\n".join(lines)


def by_class(findings, name=lambda f: f.status) -> str:
    """Failures counted by class (``name(finding)``; a kernel finding's status: its known id, NEW, warned, ...),
    the unknown first: ``NEW 3, helper-store-readback 12 (known)``; "none" when there are none."""
    counts, known_names = {}, set()
    for f in findings:
        counts[name(f)] = counts.get(name(f), 0) + f.count
        if f.known:
            known_names.add(name(f))
    ordered = sorted(counts, key=lambda c: (c in known_names, c))
    return ", ".join(f"{c} {counts[c]}" + (" (known)" if c in known_names else "") for c in ordered) or "none"
