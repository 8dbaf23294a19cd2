"""Overwrite safety on the Tape: hazard checks that name the bug, and snapshots for in-place updates.

`tape` holds the `Tape` and its hazards, `access` what a kernel's source reads and writes,
`read_twin` the instrumented twin that finds the elements a launch reads (before or after writing them),
`memory` the per-region tables of which launch wrote and which site read each element.
"""

from __future__ import annotations

from .tape import KINDS, Hazard, OverwriteError, OverwriteWarning, Site, Tape, hazard_listener

__all__ = ["KINDS", "Hazard", "OverwriteError", "OverwriteWarning", "Site", "Tape", "hazard_listener"]
