"""What a checkpointed rollout cost, and the optional progress bars of its sweeps."""

from __future__ import annotations

import dataclasses

from .. import _progress


@dataclasses.dataclass
class Summary:
    """Counts of one checkpointed rollout, updated as its forward and reverse sweeps run (``run.summary``).

    Attributes:
        schedule: The checkpointing schedule's name.
        steps: Steps of the rollout (None until an online rollout ends).
        state_bytes: One copy of the state.
        steps_run: Step evaluations so far (forward, recomputation and the taped re-runs the reverse sweep
            backpropagates through).
        steps_reversed: Steps reversed so far.
        snapshots_held: The most snapshots held at once (RAM and disk).
        ram_bytes: The most snapshot bytes held in RAM at once.
        disk_bytes: The most snapshot bytes held on disk at once.
        state_copies: Copies of the whole state made (snapshot writes, and restores into the work buffer; a
            moved snapshot read in place is not one).
        steps_snapshotted: Reversed steps recorded on a snapshotting Tape (see ``rollout(snapshot_step=...)``).
        timeline: Each schedule action as it ran (an `Event`), which
            `warp_zerostore.checkpoint.plot_schedule` draws.
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
    timeline: list = dataclasses.field(default_factory=list, repr=False)

    def __str__(self) -> str:
        return (
            f"{self.schedule}: {self.steps} steps, {self.steps_run} step evaluations, {self.steps_reversed} reversed, "
            f"{self.state_copies} state copies, {self.steps_snapshotted} reversed on a snapshotting Tape, "
            f"at most {self.snapshots_held} snapshots ({self.ram_bytes / 2**20:.1f} MiB in RAM, "
            f"{self.disk_bytes / 2**20:.1f} MiB on disk; one state is {self.state_bytes / 2**20:.1f} MiB)"
        )


@dataclasses.dataclass(frozen=True)
class Event:
    """One action of a rollout's checkpointing schedule, as it ran (an entry of `Summary.timeline`).

    Attributes:
        sweep: `"forward"` (the rollout) or `"reverse"` (the Tape's backward).
        action: `"forward"` (steps `n0` to `n1` run; in the reverse sweep, recomputed), `"reverse"` (steps
            `n1 - 1` down to `n0` reversed), `"copy"` / `"move"` (snapshot `n0` read back; a move deletes it).
        n0: The first step (the snapshot, for a copy or move).
        n1: One past the last step (`n0` for a copy or move).
        snapshot: A forward action that first stored state `n0` as a snapshot.
        storage: Where that snapshot went, or where a copy or move read from: `"ram"` or `"disk"` (else None).
        ram_held: Snapshots held in RAM after the action.
        disk_held: Snapshots held on disk after the action.
    """

    sweep: str
    action: str
    n0: int
    n1: int
    snapshot: bool = False
    storage: str | None = None
    ram_held: int = 0
    disk_held: int = 0


class Progress:
    """A tqdm bar per sweep (``progress=True``, or by default when stderr is a terminal: see
    `warp_zerostore._progress`); the bars stay on screen when a sweep ends."""

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
