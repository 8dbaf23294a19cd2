"""The runner's results as a Markdown table with the details under it, and as JSON."""

from __future__ import annotations

import collections
import dataclasses
import json

from .runner import ExampleResult, ModeRun, Summary


def _ratio(run: ModeRun, stock: ModeRun | None) -> str:
    if stock is None or stock.seconds <= 0 or run.status != "ran":
        return ""
    return f" ×{run.seconds / stock.seconds:.2f}"


def _reports(run: ModeRun) -> str:
    parts = []
    if run.mode in ("check", "snapshot"):
        parts.append(f"{len(run.real_hazards)} real, {len(run.notes)} notes")
    counted = collections.Counter(w["category"] for w in run.warnings)
    if counted:
        parts.append(", ".join(f"{n} {category}" for category, n in sorted(counted.items())))
    if run.mode == "check":
        parts.append(f"exit {run.exit_status}")
    return "; ".join(parts)


def cell(run: ModeRun | None, stock: ModeRun | None, noise: list = ()) -> str:
    """One mode of one example, in a few words (``noise``: what two stock runs disagree on)."""
    if run is None:
        return "—"
    if run.verdict == "stock":
        text = f"{run.backwards} backward{'s' if run.backwards != 1 else ''}, {run.gradients[1]} gradients"
        if noise:
            text += f"; {len(noise)} arrays or outputs differ between two stock runs (not compared)"
    elif run.verdict == "bitwise":
        text = f"bitwise{_ratio(run, stock)}"
    elif run.verdict == "differs":
        text = f"**differs** from backward {run.first_difference} ({run.gradients[1] - run.gradients[0]} of {run.gradients[1]})"
        if run.largest_difference:
            text += f", rel. L2 {run.largest_difference[0]:.3g}"
    elif run.verdict == "right where stock is off":
        text = f"differs from stock, agrees with central differences where stock does not{_ratio(run, stock)}"
    elif run.verdict == "refused":
        text = "refused (OverwriteError)"
    else:
        text = f"**{run.status}**: {run.error[:80]}"
    if run.verdict in ("bitwise", "differs") and not run.values_equal:
        text += ", forward values differ"
    if run.verdict in ("bitwise", "differs") and not run.stdout_equal:
        text += ", printed output differs"
    reports = _reports(run)
    return text + (f"; {reports}" if reports else "")


def _central(result: ExampleResult) -> str:
    central = result.central
    if not central:
        return "—"
    if central["status"] == "not available":
        return "n/a"
    counted = collections.Counter(e["verdict"] for e in central["elements"])
    parameters = "" if central.get("parameters") != "unknown" else "; which inputs are parameters unknown"
    return f"{central['status']} ({', '.join(f'{n} {v}' for v, n in sorted(counted.items()))}{parameters})"


def table(summary: Summary) -> str:
    """The Markdown table: one row per example, one column per mode, central differences of stock."""
    modes = [m for m in summary.modes if m != "stock"]
    head = ["example", "stock", "central differences", *modes]
    lines = ["| " + " | ".join(head) + " |", "|" + " --- |" * len(head)]
    for result in summary.results:
        name = f"`{result.example.name}`"
        if result.skip and "stock" not in result.runs:
            lines.append(f"| {name} | skipped: {result.skip} |" + " |" * (len(head) - 2))
            continue
        stock = result.runs.get("stock")
        row = [
            name,
            cell(stock, None, result.noise),
            _central(result),
            *(cell(result.runs.get(m), stock) for m in modes),
        ]
        lines.append("| " + " | ".join(row) + " |")
    return "\n".join(lines)


def details(summary: Summary) -> str:
    """Under the table: what each report and warning was, where, and the central differences."""
    lines = []
    for result in summary.results:
        block = []
        if result.skip and not result.runs:
            block.append(f"- skipped: {result.skip}")
        for run in result.runs.values():
            for h in run.hazards:
                block.append(f"- {run.mode}: {_hazard_line(h)}")
            by_category: dict = {}
            for w in run.warnings:
                by_category.setdefault(w["category"], []).append(w)
            for category, found in sorted(by_category.items()):
                places = sorted({w["where"] for w in found})
                block.append(
                    f"- {run.mode}: {len(found)} distinct {category} at {', '.join(places[:4])}"
                    f"{' ...' if len(places) > 4 else ''}; the first: {found[0]['message'][:200]}"
                )
            if run.error and run.verdict != "stock":
                block.append(f"- {run.mode}: {run.error[:300]}")
        for element in result.central.get("elements", []):
            block.append(
                f"- central differences: {element['label']}[{element['element']}]: backward {element['backward']:.6g}, "
                f"central {element['central']:.6g} ({element['verdict']})"
            )
        if result.central.get("status") == "not available":
            block.append(f"- central differences not available: {result.central['reason']}")
        if block:
            lines += ["", f"### {result.example.name}", "", *block]
    return "\n".join(lines)


def _hazard_line(h: dict) -> str:
    """One hazard: its kind, whether real, and the sites it names."""
    parts = []
    for role in ("writer", "reader", "earlier"):
        site = h.get(role)
        if site:
            argument = f" argument '{site['argument']}'" if site["argument"] else ""
            parts.append(f"{role} kernel '{site['kernel']}'{argument} at {site['location']}")
    cause = f" ({h['cause']})" if h.get("cause") else ""
    tapes = f", found by {h['tapes']} Tapes" if h.get("tapes", 1) > 1 else ""
    return f"{h['kind']}{cause}, {'real' if h['real'] else 'not real'}: {'; '.join(parts)}{tapes}"


def to_json(summary: Summary) -> str:
    """Everything, as JSON."""

    def one(result: ExampleResult) -> dict:
        return {
            "example": dataclasses.asdict(result.example),
            "skip": result.skip,
            "noise": result.noise,
            "central_differences": result.central,
            "runs": {mode: dataclasses.asdict(run) for mode, run in result.runs.items()},
        }

    return json.dumps(
        {
            "warp_version": summary.warp_version,
            "modes": list(summary.modes),
            "seconds": summary.seconds,
            "failed": summary.failed,
            "results": [one(r) for r in summary.results],
        },
        indent=1,
    )
