"""Code generation of flagged kernels: Warp hooks, the store-adjoint table, the replay log and the header loader."""

from __future__ import annotations

from .adjoint_lints import warn_backward
from .hooks import install
from .native import HeaderNotFoundError
from .pre_twin import pre_backward, replays_exactly, warn_replay_issues
from .replay import ReplayWarning

__all__ = [
    "HeaderNotFoundError",
    "ReplayWarning",
    "install",
    "pre_backward",
    "replays_exactly",
    "warn_backward",
    "warn_replay_issues",
]
