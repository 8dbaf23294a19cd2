"""A fuzzing campaign: draw batches of kernels, check each batch in one build, shrink and file new failures.

Failures are deduplicated by what triggers them: a failure whose constructs include those of a finding of the
same variant, Tape, kind and verdict already filed counts toward it unshrunk; any other is shrunk, and filed
under its shrunk constructs (``shrink.constructs``) with a standalone repro script.

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
    kernels: int = 0
    builds: int = 0
    seconds: float = 0.0
    findings: list = field(default_factory=list)

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
    return (
        (finding.variant, finding.tape) == failure.path
        and finding.kind == failure.kind
        and finding.worse == failure.worse
        and set(finding.constructs) <= set(shrink.constructs(failure.case.program))
    )


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
    """Fuzz for ``minutes`` (or ``max_batches``); write one repro per distinct failure into ``out``."""
    warp.config.quiet = True  # a line per module build would drown the progress bar
    summary = Summary()
    start = time.monotonic()
    deadline = start + 60.0 * minutes
    index = 0
    while time.monotonic() < deadline and (max_batches is None or index < max_batches):
        cases = draw(batch_size, seed * 100003 + index, features)
        index += 1
        failures = batch.check_batch(cases, device)
        summary.kernels += len(cases)
        summary.builds += 1
        for group in _by_case(failures):
            if all(any(matches(f, failure) for f in summary.findings) for failure in group):
                for failure in group:
                    next(f for f in summary.findings if matches(f, failure)).count += 1
                continue
            primary = min(group, key=lambda f: (not f.worse, _SHRINK_ORDER[f.path], f.kind != "gradient"))
            for small in shrink.shrink(primary, rounds=shrink_rounds, device=device, log=log):
                _file(summary, small, out)
        if progress is not None:
            progress(summary, time.monotonic() - start)
    summary.seconds = time.monotonic() - start
    return summary


def _by_case(failures) -> list:
    groups = {}
    for failure in failures:
        groups.setdefault(id(failure.case), []).append(failure)
    return list(groups.values())


def _file(summary: Summary, failure, out) -> None:
    """Count ``failure`` toward the finding of its shrunk constructs, or file a new one with its repro."""
    labels = shrink.constructs(failure.case.program)
    key = (failure.variant, failure.tape, failure.kind, failure.worse, labels)
    for finding in summary.findings:
        if (finding.variant, finding.tape, finding.kind, finding.worse, finding.constructs) == key:
            finding.count += 1
            return
    finding = KernelFinding(
        failure.variant,
        failure.kind,
        labels,
        failure,
        known=known.match(failure),
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
    """The findings as a text table."""
    rows = [("variant", "tape", "kind", "count", "worse", "status", "constructs", "repro")]
    for f in summary.findings:
        worse = "WORSE" if f.worse else "-"
        rows.append(
            (f.variant, f.tape, f.kind, str(f.count), worse, f.status, ", ".join(f.constructs), f.repro_path or "-")
        )
    widths = [max(len(r[k]) for r in rows) for k in range(len(rows[0]))]
    lines = ["  ".join(cell.ljust(w) for cell, w in zip(row, widths)).rstrip() for row in rows]
    lines.insert(1, "-" * len(lines[0]))
    rate = 60.0 * summary.kernels / summary.seconds if summary.seconds else 0.0
    lines.append(
        f"{summary.kernels} kernels in {summary.builds} builds, {summary.seconds:.0f} s ({rate:.0f} kernels/min); "
        f"{len(summary.findings)} distinct failures, {len(summary.new)} neither known nor warned"
    )
    excused = sum(f.explained for f in summary.worse)
    lines.append(
        f"worse than stock (a package path wrong where stock on a plain Tape is right): {len(summary.worse)} "
        f"distinct ({sum(f.count for f in summary.worse)} failures), {excused} of them warned by the package "
        "(snapshot Tape)"
    )
    return "\n".join(lines)
