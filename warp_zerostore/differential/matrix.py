"""A program campaign on every Warp version: one interpreter per version (the venvs ``make test-matrix`` builds, or
any ``--python`` list), one at a time, each writing its summary as JSON; then one table of them all.

The table has a row per Warp version and finding class (a known id, or the kind and constructs of a shrunk
program), and counts per row the failures of stock kernels, of flagged ones (``zero_store=True`` on any Tape or
bridge), those the package warned about by name, and check mode's misses.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys

from .verdicts import BUILD, CRASH, FORWARD, GRADIENT, MISS

WRONG = (FORWARD, GRADIENT, CRASH, BUILD)
COLUMNS = ("wrong stock", "wrong flagged", "warned", "missed by check")


def run_versions(pythons, arguments: list, out: str, log=print) -> list:
    """Run ``python -m warp_zerostore fuzz --programs <arguments>`` under each interpreter of ``pythons``, one
    after the other, each with its repros under ``out/<n>/``; the summaries (`campaign.as_json`), in order."""
    summaries = []
    for n, python in enumerate(pythons):
        folder = os.path.join(out, f"{n:02d}")
        os.makedirs(folder, exist_ok=True)
        summary_file = os.path.join(folder, "summary.json")
        command = [python, "-m", "warp_zerostore", "fuzz", "--programs", *arguments]
        command += ["--out", folder, "--summary-file", summary_file, "--quiet"]
        log(f"fuzz --programs under {python} ...")
        done = subprocess.run(command, capture_output=True, text=True)
        if not os.path.exists(summary_file):
            tail = (done.stdout + done.stderr).strip().splitlines()[-5:]
            summaries.append({"version": f"? ({python})", "error": " | ".join(tail), "findings": []})
            continue
        with open(summary_file) as f:
            summaries.append(json.load(f))
        log(f"  warp-lang {summaries[-1]['version']}: {summaries[-1]['programs']} programs")
    return summaries


def rows(summaries) -> list:
    """``(version, class, {column: count})`` for every version and finding class."""
    found = []
    for summary in summaries:
        classes: dict = {}
        for finding in summary.get("findings", []):
            name = finding["class"]
            if finding["worse_than_stock"]:
                name = f"WORSE THAN STOCK: {name}"
            counts = classes.setdefault(name, dict.fromkeys(COLUMNS, 0))
            variant = finding["path"][0]
            if finding["kind"] in WRONG:
                counts["wrong stock" if variant == "stock" else "wrong flagged"] += finding["count"]
            if finding["warned"]:
                counts["warned"] += finding["count"]
            if finding["kind"] == MISS:
                counts["missed by check"] += finding["count"]
        for name, counts in sorted(classes.items()):
            found.append((summary["version"], name, counts))
        if summary.get("error"):
            found.append((summary["version"], f"did not run: {summary['error']}", dict.fromkeys(COLUMNS, 0)))
    return found


def table(summaries) -> str:
    """The one summary table: version x finding class x (wrong stock, wrong flagged, warned, missed by check)."""
    header = ("warp-lang", "finding class", *COLUMNS)
    lines = [header] + [(v, c, *(str(n[k]) for k in COLUMNS)) for v, c, n in rows(summaries)]
    widths = [max(len(r[k]) for r in lines) for k in range(len(header))]
    text = ["  ".join(cell.ljust(w) for cell, w in zip(row, widths)).rstrip() for row in lines]
    text.insert(1, "-" * len(text[0]))
    for s in summaries:
        if "programs" in s:
            counts = s.get("counts", {})
            text.append(
                f"warp-lang {s['version']}: {s['programs']} programs in {s['seconds']:.0f} s; check mode: "
                f"{counts.get('miss', 0)} misses, {counts.get('false alarm', 0)} false alarms, "
                f"{counts.get('on purpose', 0)} reports with real=False"
            )
    return "\n".join(text)


def this_python() -> str:
    return sys.executable


__all__ = ["COLUMNS", "rows", "run_versions", "table"]
