"""Lints over a flagged kernel's Python source: constructs whose adjoint Warp itself gets wrong, stock or flagged.

They generate no code: `warp_zerostore.codegen.adjoint_lints` runs `adjoint_bugs.find` where a flagged kernel's
backward first runs, and warns (`AdjointWarning`) at each finding's line. `loop_carried` finds locals whose
value Warp's backward gets wrong around a loop with a run-time bound; `atomic_returns` atomics whose returned value
is used; `adjoint_bugs` the rest, and returns them all; `local_types` gives each local's type from the source, so
that an integer is warned only where it matters. An `UpdateAfterUse` is warned only where the build did not make
the assignment exact (`codegen.local_copies`).
"""

from __future__ import annotations

from .adjoint_bugs import AdjointWarning, UpdateAfterUse, find
from .atomic_returns import UsedAtomicReturn

__all__ = ["AdjointWarning", "UpdateAfterUse", "UsedAtomicReturn", "find"]
