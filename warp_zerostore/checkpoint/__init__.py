"""Binomial checkpointing of Warp rollouts: long differentiable simulations in bounded memory (issue 12).

:func:`rollout` runs T steps of a simulation, keeps at most ``snapshots`` copies of its state, and records
itself on the active ``wp.Tape`` as one entry; ``tape.backward(loss)`` then recomputes the steps it did not
keep, as a schedule of checkpoint_schedules (Revolve, multistage RAM + disk, two-level, store-all) says, and
gives the gradients of the initial state and of the parameters. Needs the ``checkpoint`` extra
(``pip install "warp_zerostore[checkpoint]"``: checkpoint-schedules, tqdm). See docs/checkpointing.md.
"""

from __future__ import annotations

from .rollout import Rollout, rollout
from .schedules import SCHEDULES, optimal_step_count
from .state import CheckpointError
from .summary import Summary

__all__ = ["rollout", "Rollout", "Summary", "CheckpointError", "SCHEDULES", "optimal_step_count"]
