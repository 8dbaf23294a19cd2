"""``python -m warp_zerostore check SCRIPT.py [args]``: run a script with every Tape checking, report hazards.

Every Tape the script creates, through ``import warp_zerostore`` or plain ``import warp``, is a
:class:`warp_zerostore.Tape` with ``check="warn"`` (unless the script passes ``check=`` itself); the report
groups the distinct hazards by kind, kernel and array, with source lines. Exit status: 1 if a real hazard was
found, else the script's own status (0 when it ran to the end).
"""

from __future__ import annotations

import runpy
import sys
import traceback
import warnings

from .. import _compat, config
from ..tape import tape as tape_safety


def format_report(hazards: list) -> str:
    """The hazards, grouped by kind, then by writing kernel and argument; safe overwrites listed as notes."""
    real = [h for h in hazards if h.real]
    lines = [f"warp_zerostore check: {len(real)} hazard(s)" + (f", {len(hazards) - len(real)} note(s)" if len(hazards) > len(real) else "")]
    for kind in tape_safety.KINDS:
        for is_real in (True, False):
            group = [h for h in hazards if h.kind == kind and h.real is is_real]
            if not group:
                continue
            lines.append("")
            lines.append(f"== {kind}{'' if is_real else ' (safe: the later writer zeroes its store adjoints)'}: {len(group)}")
            by_site: dict = {}
            for h in group:
                site = h.reader if kind == tape_safety.MUTATED else h.writer
                by_site.setdefault((site.kernel, site.argument), []).append(h)
            for (kernel, argument), items in by_site.items():
                lines.append(f"  kernel '{kernel}', array '{argument}':")
                for h in items:
                    lines.append(f"    - {h.message()}")
    return "\n".join(lines)


def run(script: str, args: list) -> int:
    saved_argv, saved_check, saved_sink = sys.argv, config.check, tape_safety._sink
    hazards: list = []
    status = 0
    sys.argv = [script, *args]
    if config.check == "off":
        config.check = "warn"
    tape_safety._sink = hazards
    try:
        with _compat.tape_class_replaced(tape_safety.Tape), warnings.catch_warnings():
            warnings.simplefilter("ignore", tape_safety.OverwriteWarning)  # the report lists them once
            try:
                runpy.run_path(script, run_name="__main__")
            except SystemExit as exit_:
                status = exit_.code if isinstance(exit_.code, int) else (0 if exit_.code is None else 1)
            except Exception:  # noqa: BLE001 - report what was found before the script failed
                traceback.print_exc()
                status = 2
    finally:
        sys.argv, tape_safety._sink = saved_argv, saved_sink
        config.check = saved_check
    print(format_report(hazards))
    if any(h.real for h in hazards):
        return 1
    return status
