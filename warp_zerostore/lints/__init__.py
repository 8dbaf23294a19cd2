"""Lints over a flagged kernel's Python source: constructs whose adjoint Warp itself gets wrong, stock or flagged.

They generate no code: `warp_zerostore.codegen.adjoint_lints` runs `adjoint_bugs.find` where a flagged kernel's
backward first runs, and warns (`AdjointWarning`) at each finding's line. `loop_carried` finds locals whose
value Warp's backward gets wrong around a loop with a run-time bound; `adjoint_bugs` the rest, and returns both;
`local_types` gives each local's type from the source, so that an integer is warned only where it matters.
"""

from __future__ import annotations

from .adjoint_bugs import AdjointWarning, find

__all__ = ["AdjointWarning", "find"]
