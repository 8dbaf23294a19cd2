"""``python -m warp_zerostore check SCRIPT.py [args]`` / ``check -m MODULE [args]``: run a program with every
Tape checking, and report each distinct hazard once.

Every Tape the program creates, through ``import warp_zerostore`` or plain ``import warp``, is a
`warp_zerostore.Tape` with ``check="warn"`` (unless the program passes ``check=`` itself); the report
groups the distinct hazards of the whole run (a hazard found by many Tapes is listed once, with the count of
Tapes) by kind, kernel and array, with source lines. The program runs as ``python SCRIPT.py`` / ``python -m
MODULE`` would run it (the script's folder, or the current folder, first on ``sys.path``). Exit status
(`warp_zerostore.cli.status.ExitStatus`): 1 if a real hazard was found (whatever the program did); else
4 if the script or module does not exist, 5 if the program raised, 6 if it exited with a non-zero status of its
own (printed in the report); else 3 if launches could not be checked (recorded under graph capture); else 0.

With ``--measure``, every Tape without snapshots also measures (``config.measure``: `warp_zerostore.tape.measure`):
at ``backward()`` each hazard's report says how much it changes this run's gradients, and a stale read or mutation
that changes none is listed as a note ("no effect on this run's gradients"), not as a hazard.
"""

from __future__ import annotations

import argparse
import importlib.util
import os
import runpy
import sys
import traceback
import warnings

from .. import _compat, config
from ..tape.tape import KINDS, MUTATED, OVERWRITE, STALE_READ, UNCHECKED, OverwriteWarning, Tape, hazard_listener
from .status import EPILOG, ExitStatus


class HazardCollector:
    """Each distinct hazard of a run once (by `Hazard.key`), with how many Tapes found it."""

    def __init__(self):
        self.hazards: list = []
        self.tapes: dict = {}  # key -> number of Tapes that found it
        self._listed: dict = {}  # site key -> position in hazards

    def __call__(self, hazard) -> None:
        position = self._listed.get(hazard.site_key())
        if hazard.measured is not None and position is not None:
            # a measuring Tape's measurement of a hazard listed (by it, or by another Tape): the measured one is
            # listed, a real measurement before one without effect
            listed = self.hazards[position]
            if listed.measured is None or (hazard.real and not listed.real):
                self.tapes[hazard.key()] = self.tapes.pop(listed.key(), 1)
                self.hazards[position] = hazard
            return
        key = hazard.key()
        if key not in self.tapes:
            self._listed.setdefault(hazard.site_key(), len(self.hazards))
            self.hazards.append(hazard)
            self.tapes[key] = 0
        self.tapes[key] += 1


def _summary(hazards: list) -> str:
    real = [h for h in hazards if h.real and h.kind not in UNCHECKED]
    unchecked = [h for h in hazards if h.kind in UNCHECKED]
    notes = [h for h in hazards if not h.real]
    line = f"warp_zerostore check: {len(real)} hazard(s)"
    if notes:
        line += f", {len(notes)} note(s)"
    if unchecked:
        line += (
            f"; {len(unchecked)} launch site(s) NOT CHECKED (recorded under graph capture, or passing arrays "
            "inside a @wp.struct: see each report)"
        )
    return line


#: why a hazard the Tape labels not real is safe, by kind and cause (`Hazard.cause`); each group of notes is headed
#: by its own reason, and a (kind, cause) not listed here is named as it is (`safe_reason`)
SAFE_REASONS = {
    (OVERWRITE, ""): "the later writer zeroes its store adjoints",
    (STALE_READ, ""): "the reader's backward reads no value it loaded: each is used linearly",
}


def safe_reason(hazard) -> str:
    """Why ``hazard`` (``real=False``) is safe, as its group's heading says it."""
    if getattr(hazard.measured, "status", "") == "no effect":  # a measuring Tape's (--measure) label
        return "measured: no effect on this run's gradients"
    reason = SAFE_REASONS.get((hazard.kind, hazard.cause))
    return reason if reason is not None else f"labelled not real, cause {hazard.cause or 'none given'!r}"


def format_report(hazards: list, tapes: dict | None = None) -> str:
    """The hazards, grouped by kind, then by writing kernel and argument; hazards that are not real listed as
    notes, each group headed by the reason that applies to it (`safe_reason`)."""
    lines = [_summary(hazards)]
    for kind in KINDS:
        for is_real in (True, False):
            of_kind = [h for h in hazards if h.kind == kind and h.real is is_real]
            reasons = [""] if is_real else list(dict.fromkeys(safe_reason(h) for h in of_kind))
            for reason in reasons:
                group = [h for h in of_kind if is_real or safe_reason(h) == reason]
                if group:
                    lines += ["", f"== {kind}{f' (safe: {reason})' if reason else ''}: {len(group)}"]
                    lines += _by_site(kind, group, tapes)
    return "\n".join(lines)


def _by_site(kind: str, group: list, tapes: dict | None) -> list:
    """One group's hazards under the kernel and argument each is about."""
    lines = []
    by_site: dict = {}
    for h in group:
        site = h.reader if kind == MUTATED else h.writer
        by_site.setdefault((site.kernel, site.argument), []).append(h)
    for (kernel, argument), items in by_site.items():
        lines.append(f"  kernel '{kernel}'" + (f", array '{argument}':" if argument else ":"))
        for h in items:
            count = (tapes or {}).get(h.key(), 1)
            lines.append(f"    - {h.message()}" + (f" (found by {count} Tapes)" if count > 1 else ""))
    return lines


def add_parser(subparsers) -> None:
    check = subparsers.add_parser(
        "check",
        help="run a program with every Tape checking for overwrite hazards; exit 1 if any was found",
        description="Run SCRIPT.py (or, with -m, a module) as python would, with every Tape it creates checking "
        "for overwrite hazards, and report each distinct hazard once.",
        epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    check.add_argument("-m", dest="module", action="store_true", help="run the target as a module (python -m)")
    check.add_argument(
        "--measure",
        action="store_true",
        help="also measure, at each backward(), how much each hazard changes the gradients (extra backward passes "
        "with the recorded values put back): a stale read or mutation with no effect on this run becomes a note",
    )
    check.add_argument("script", help="the script (or, with -m, the module) to run")
    check.add_argument("script_args", nargs=argparse.REMAINDER, help="arguments passed to the program")
    check.set_defaults(handler=_command)


def _command(args, parser) -> int:
    return run(args.script, args.script_args, as_module=args.module, measure=args.measure)


def _missing(target: str, as_module: bool) -> str | None:
    """Why the program cannot be run (one line), or None."""
    if not as_module:
        return None if os.path.isfile(target) else f"script not found: {target}"
    sys.path.insert(0, os.getcwd())
    try:
        found = importlib.util.find_spec(target) is not None
    except (ImportError, ValueError) as error:
        return f"module not found: {target} ({error})"
    finally:
        del sys.path[0]
    return None if found else f"module not found: {target}"


def _print_program_traceback(error: BaseException) -> None:
    """The program's traceback, without the frames of runpy and of this command."""
    tb = error.__traceback__
    ours = {os.path.abspath(__file__), os.path.abspath(runpy.__file__)}

    def is_ours(filename: str) -> bool:
        return filename == "<frozen runpy>" or os.path.abspath(filename) in ours

    while tb is not None and is_ours(tb.tb_frame.f_code.co_filename):
        tb = tb.tb_next
    traceback.print_exception(type(error), error, tb)


def _run_program(target: str, args: list, as_module: bool) -> tuple:
    """Run the program as ``python`` would: ``(ExitStatus, the program's own status)``."""
    saved_path = list(sys.path)
    sys.argv = [target, *args]
    sys.path.insert(0, os.getcwd() if as_module else os.path.dirname(os.path.abspath(target)))
    try:
        if as_module:
            runpy.run_module(target, run_name="__main__", alter_sys=True)
        else:
            runpy.run_path(target, run_name="__main__")
    except SystemExit as exit_:
        code = exit_.code
        if code is None or code == 0:
            return ExitStatus.OK, 0
        if not isinstance(code, int):
            print(code, file=sys.stderr)  # as python does with sys.exit("message")
            code = 1
        return ExitStatus.PROGRAM_FAILED, code
    except Exception as error:  # noqa: BLE001 - report what was found before the program failed
        _print_program_traceback(error)
        return ExitStatus.PROGRAM_RAISED, None
    finally:
        sys.path[:] = saved_path
    return ExitStatus.OK, 0


def run(target: str, args: list, as_module: bool = False, measure: bool = False) -> int:
    """Run a script (or, with ``as_module``, ``python -m target``) with checking Tapes (``measure``: measuring too);
    print the report and return the exit status (`warp_zerostore.cli.status.ExitStatus`)."""
    why = _missing(target, as_module)
    if why is not None:
        print(f"warp_zerostore check: error: {why}", file=sys.stderr)
        return ExitStatus.NOT_FOUND
    saved_argv, saved_check, saved_measure = sys.argv, config.check, config.measure
    collector = HazardCollector()
    if config.check == "off":
        config.check = "warn"
    config.measure = measure or saved_measure
    try:
        with _compat.tape_class_replaced(Tape), hazard_listener(collector):
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", OverwriteWarning)  # the report lists them once
                outcome, own_status = _run_program(target, args, as_module)
    finally:
        sys.argv = saved_argv
        config.check = saved_check
        config.measure = saved_measure
    print(format_report(collector.hazards, collector.tapes))
    if outcome is ExitStatus.PROGRAM_RAISED:
        print("warp_zerostore check: the program raised an exception (traceback above); hazards found up to there")
    elif outcome is ExitStatus.PROGRAM_FAILED:
        print(f"warp_zerostore check: the program exited with status {own_status}")
    if any(h.real and h.kind not in UNCHECKED for h in collector.hazards):
        return ExitStatus.HAZARDS
    if outcome is not ExitStatus.OK:
        return outcome
    if any(h.kind in UNCHECKED for h in collector.hazards):
        return ExitStatus.UNCHECKED
    return ExitStatus.OK
