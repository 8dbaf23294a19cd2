"""Binomial checkpointing of Warp rollouts: long differentiable simulations in bounded memory.

`rollout` runs T steps of a simulation, keeps at most ``snapshots`` copies of its state, and records
itself on the active ``wp.Tape`` as one entry; ``tape.backward(loss)`` then recomputes the steps it did not
keep, as a schedule of checkpoint_schedules (Revolve, multistage RAM + disk, two-level, store-all) says, and
gives the gradients of the initial state and of the parameters. Needs the ``checkpoint`` extra
(``pip install "warp_zerostore[checkpoint]"``: checkpoint-schedules, tqdm). See docs/checkpointing.md.
"""

from __future__ import annotations

from ._rollout import Rollout, rollout
from .plot import plot_schedule  # matplotlib is imported when it draws, not here
from .schedules import SCHEDULES, optimal_step_count
from .state import CheckpointError
from .summary import Event, Summary

# Printed as warp_zerostore.checkpoint.CheckpointError, its public path.
CheckpointError.__module__ = __name__

__all__ = [
    "rollout",
    "Rollout",
    "Summary",
    "Event",
    "CheckpointError",
    "SCHEDULES",
    "optimal_step_count",
    "plot_schedule",
]
