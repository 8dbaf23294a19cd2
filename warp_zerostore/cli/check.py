"""``python -m warp_zerostore check SCRIPT.py [args]`` / ``check -m MODULE [args]``: run a program with every
Tape checking, and report each distinct hazard once.

Every Tape the program creates, through ``import warp_zerostore`` or plain ``import warp``, is a
`warp_zerostore.Tape` with ``check="warn"`` (unless the program passes ``check=`` itself); the report
groups the distinct hazards of the whole run (a hazard found by many Tapes is listed once, with the count of
Tapes) by kind, kernel and array, with source lines. The program runs as ``python SCRIPT.py`` / ``python -m
MODULE`` would run it (the script's folder, or the current folder, first on ``sys.path``). Exit status: 1 if a
real hazard was found, else 3 if launches could not be checked (recorded under graph capture), else the
program's own status (0 when it ran to the end).
"""

from __future__ import annotations

import os
import runpy
import sys
import traceback
import warnings

from .. import _compat, config
from ..tape import tape as tape_safety

#: Exit status when nothing real was found but some launches could not be checked.
UNCHECKED_STATUS = 3


class HazardCollector:
    """Each distinct hazard of a run once (by `Hazard.key`), with how many Tapes found it."""

    def __init__(self):
        self.hazards: list = []
        self.tapes: dict = {}  # key -> number of Tapes that found it

    def __call__(self, hazard) -> None:
        key = hazard.key()
        if key not in self.tapes:
            self.hazards.append(hazard)
            self.tapes[key] = 0
        self.tapes[key] += 1


def _summary(hazards: list) -> str:
    real = [h for h in hazards if h.real and h.kind != tape_safety.CAPTURED]
    unchecked = [h for h in hazards if h.kind == tape_safety.CAPTURED]
    notes = [h for h in hazards if not h.real]
    line = f"warp_zerostore check: {len(real)} hazard(s)"
    if notes:
        line += f", {len(notes)} note(s)"
    if unchecked:
        line += (
            f"; {len(unchecked)} launch site(s) NOT CHECKED (recorded under graph capture: "
            "run without wp.ScopedCapture to check them)"
        )
    return line


def format_report(hazards: list, tapes: dict | None = None) -> str:
    """The hazards, grouped by kind, then by writing kernel and argument; safe overwrites listed as notes."""
    lines = [_summary(hazards)]
    for kind in tape_safety.KINDS:
        for is_real in (True, False):
            group = [h for h in hazards if h.kind == kind and h.real is is_real]
            if not group:
                continue
            lines.append("")
            lines.append(
                f"== {kind}{'' if is_real else ' (safe: the later writer zeroes its store adjoints)'}: {len(group)}"
            )
            by_site: dict = {}
            for h in group:
                site = h.reader if kind == tape_safety.MUTATED else h.writer
                by_site.setdefault((site.kernel, site.argument), []).append(h)
            for (kernel, argument), items in by_site.items():
                lines.append(f"  kernel '{kernel}'" + (f", array '{argument}':" if argument else ":"))
                for h in items:
                    count = (tapes or {}).get(h.key(), 1)
                    lines.append(f"    - {h.message()}" + (f" (found by {count} Tapes)" if count > 1 else ""))
    return "\n".join(lines)


def _run_program(target: str, args: list, as_module: bool) -> int:
    """Run the program as ``python`` would; returns its status (2 if it raised)."""
    saved_path = list(sys.path)
    sys.argv = [target, *args]
    sys.path.insert(0, os.getcwd() if as_module else os.path.dirname(os.path.abspath(target)))
    try:
        if as_module:
            runpy.run_module(target, run_name="__main__", alter_sys=True)
        else:
            runpy.run_path(target, run_name="__main__")
    except SystemExit as exit_:
        return exit_.code if isinstance(exit_.code, int) else (0 if exit_.code is None else 1)
    except Exception:  # noqa: BLE001 - report what was found before the program failed
        traceback.print_exc()
        return 2
    finally:
        sys.path[:] = saved_path
    return 0


def run(target: str, args: list, as_module: bool = False) -> int:
    """Run a script (or, with ``as_module``, ``python -m target``) with checking Tapes; print the report."""
    saved_argv, saved_check = sys.argv, config.check
    collector = HazardCollector()
    if config.check == "off":
        config.check = "warn"
    try:
        with _compat.tape_class_replaced(tape_safety.Tape), tape_safety.hazard_listener(collector):
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", tape_safety.OverwriteWarning)  # the report lists them once
                status = _run_program(target, args, as_module)
    finally:
        sys.argv = saved_argv
        config.check = saved_check
    print(format_report(collector.hazards, collector.tapes))
    if any(h.real and h.kind != tape_safety.CAPTURED for h in collector.hazards):
        return 1
    if any(h.kind == tape_safety.CAPTURED for h in collector.hazards) and status == 0:
        return UNCHECKED_STATUS
    return status
