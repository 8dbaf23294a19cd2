"""Overwrite safety on the Tape: hazard checks that name the bug, and snapshots for in-place updates.

`tape` holds the `Tape` and its hazards, `access` what a kernel's source reads and writes,
`read_twin` the instrumented twin that finds the elements a launch reads (before or after writing them),
`memory` the per-region tables of which launch wrote and which site read each element, `intent` the arrays a
user declared the backward must read as they are at ``backward()``.
"""

from __future__ import annotations

from .intent import read_at_backward
from .tape import KINDS, Hazard, OverwriteError, OverwriteWarning, Site, Tape, hazard_listener

__all__ = [
    "KINDS",
    "Hazard",
    "OverwriteError",
    "OverwriteWarning",
    "Site",
    "Tape",
    "hazard_listener",
    "read_at_backward",
]
