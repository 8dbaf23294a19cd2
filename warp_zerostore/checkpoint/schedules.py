"""Which checkpoint_schedules schedule a rollout executes: the names a user picks, mapped to its classes.

checkpoint_schedules (the Firedrake project's Revolve, multistage and two-level schedules) decides what to
store and what to recompute; `executor` only carries out its actions on Warp arrays.
"""

from __future__ import annotations

from typing import Literal

from .state import CheckpointError

ScheduleName = Literal["binomial", "multistage", "two_level", "store_all"]
SCHEDULES: tuple[ScheduleName, ...] = ("binomial", "multistage", "two_level", "store_all")


def _schedules_module():
    try:
        import checkpoint_schedules
    except ImportError as e:  # pragma: no cover - it comes with the checkpoint (and test) extra
        raise ImportError(
            "warp_zerostore.checkpoint needs checkpoint_schedules: pip install 'warp_zerostore[checkpoint]'"
        ) from e
    return checkpoint_schedules


def make_schedule(name: str, steps, snapshots: int, disk_snapshots: int, period):
    """The checkpoint_schedules schedule for ``name`` (see `warp_zerostore.checkpoint.rollout`)."""
    cs = _schedules_module()
    if name not in SCHEDULES:
        raise CheckpointError(f"rollout(schedule={name!r}): choose one of {', '.join(map(repr, SCHEDULES))}")
    if name in ("binomial", "multistage") and steps is None:
        raise CheckpointError(
            f"rollout(schedule={name!r}) is offline: it needs steps=N. For a rollout whose length is known only as it "
            "runs (until=...), use schedule='two_level' or 'store_all'"
        )
    if name == "binomial":
        return cs.MultistageCheckpointSchedule(steps, min(snapshots, steps - 1), 0)
    if name == "multistage":
        ram = min(snapshots, steps - 1)
        disk = min(disk_snapshots, steps - 1 - ram)
        return cs.MultistageCheckpointSchedule(steps, ram, disk)
    if name == "two_level":
        if period is None or period < 1:
            raise CheckpointError(
                "rollout(schedule='two_level') needs period=P >= 1: a snapshot goes to disk every P steps, and each "
                "period is reversed with a binomial schedule of `snapshots` snapshots in RAM"
            )
        return cs.TwoLevelCheckpointSchedule(period, snapshots, binomial_storage=cs.StorageType.RAM)
    return cs.SingleMemoryStorageSchedule()


def optimal_step_count(steps: int, snapshots: int) -> int:
    """Revolve's minimal number of step evaluations to reverse ``steps`` steps with ``snapshots`` snapshots.

    Args:
        steps: Steps of the rollout.
        snapshots: Snapshots held at most.

    Returns:
        The forward step evaluations (first pass and recomputations) of the optimal schedule.

    Example:
        ```python
        from warp_zerostore.checkpoint import optimal_step_count
        assert optimal_step_count(1000, 10) == 4636
        ```
    """
    return _schedules_module().optimal_steps_binomial(steps, max(1, min(snapshots, steps - 1)) if steps > 1 else 0)
