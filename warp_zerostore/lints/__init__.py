"""Lints over a flagged kernel's Python source: constructs whose adjoint Warp itself gets wrong, stock or flagged.

They generate no code: `warp_zerostore.codegen.hashing` runs `adjoint_bugs.find` when a flagged kernel is hashed
to be built or loaded, and warns (`AdjointWarning`) at each finding's line. `loop_carried` finds locals whose
value Warp's backward gets wrong around a loop with a run-time bound; `atomic_returns` atomics whose returned value
is used; `adjoint_bugs` the rest, and returns them all.
An `UpdateAfterUse` is warned only where the build did not make the assignment exact (`codegen.local_copies`).
"""

from __future__ import annotations

from .adjoint_bugs import AdjointWarning, UpdateAfterUse, find
from .atomic_returns import UsedAtomicReturn

__all__ = ["AdjointWarning", "UpdateAfterUse", "UsedAtomicReturn", "find"]
