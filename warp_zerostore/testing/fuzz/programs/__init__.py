"""Drawn launch sequences: a program grammar over the kernel grammar, its printer and its reference.

* `nodes` — arrays, kernels, launches, copies and constant writes; `grammar` — hypothesis strategies (`programs`);
* `oracle` — NumPy float64, launch by launch, central differences of the whole program, with its rules written
  down; `printer` — the kernels and the host steps as Warp source; `shrink` — one-step simplifications.

Running a program on every path of the package (Tapes, bridges, a checkpointed rollout) needs the Tape and the
bridges, so it lives in a room above them: `warp_zerostore.differential`.
"""

from .grammar import DEFAULT_PROGRAM_FEATURES, PROGRAM_FEATURES, ProgramCase, programs

__all__ = ["DEFAULT_PROGRAM_FEATURES", "PROGRAM_FEATURES", "ProgramCase", "programs"]
