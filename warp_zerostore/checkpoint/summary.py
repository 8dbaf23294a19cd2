"""What a checkpointed rollout cost, and the optional progress bars of its sweeps."""

from __future__ import annotations

import dataclasses

from .. import _progress


@dataclasses.dataclass
class Summary:
    """Counts of one checkpointed rollout, updated as its forward and reverse sweeps run.

    ``steps``: steps of the rollout; ``steps_run``: step evaluations so far (forward, recomputation and the taped
    re-runs the reverse sweep backpropagates through); ``steps_reversed``; ``snapshots_held``: the most snapshots
    held at once (RAM and disk); ``ram_bytes`` / ``disk_bytes``: the most snapshot bytes held in RAM / on disk at
    once; ``state_bytes``: one copy of the state; ``state_copies``: copies of the whole state made (snapshot
    writes, and restores into the work buffer; a moved snapshot read in place is not one); ``schedule``: the
    checkpointing schedule's name; ``steps_snapshotted``: reversed steps recorded on a snapshotting Tape (see
    ``rollout(snapshot_step=...)``).
    """

    schedule: str
    steps: int | None
    state_bytes: int
    steps_run: int = 0
    steps_reversed: int = 0
    snapshots_held: int = 0
    ram_bytes: int = 0
    disk_bytes: int = 0
    state_copies: int = 0
    steps_snapshotted: int = 0

    def __str__(self) -> str:
        return (
            f"{self.schedule}: {self.steps} steps, {self.steps_run} step evaluations, {self.steps_reversed} reversed, "
            f"{self.state_copies} state copies, {self.steps_snapshotted} reversed on a snapshotting Tape, "
            f"at most {self.snapshots_held} snapshots ({self.ram_bytes / 2**20:.1f} MiB in RAM, "
            f"{self.disk_bytes / 2**20:.1f} MiB on disk; one state is {self.state_bytes / 2**20:.1f} MiB)"
        )


class Progress:
    """A tqdm bar per sweep (``progress=True``, or by default when stderr is a terminal: see
    :mod:`warp_zerostore._progress`); the bars stay on screen when a sweep ends."""

    def __init__(self, enabled: bool | None, total: int | None):
        self.requested = enabled
        self.total = total
        self.bar = None

    def start(self, description: str) -> None:
        self.close()
        self.bar = _progress.bar(self.total, description, "step", requested=self.requested)

    def update(self, n: int = 1) -> None:
        if self.bar is not None:
            self.bar.update(n)

    def close(self) -> None:
        if self.bar is not None:
            self.bar.close()
            self.bar = None
