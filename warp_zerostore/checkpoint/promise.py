"""Holding a double-buffered step to ``rollout(writes_input=False)``: it never writes the state it reads.

With that promise the executor reads snapshots in place and lets a step write its output straight into a
snapshot, so a step that wrote into its input state would overwrite a snapshot, and the gradients would be
silently wrong. Two checks catch a broken promise and raise `state.CheckpointError` (a third, that a
step writes into the output arrays it is given rather than rebinding them, guards the snapshot it writes):

* step 0, the first time it runs: the input state's bytes before and after the step, which catches any write
  that changes a value, however it is made (a kernel, ``zero_()``, ``fill_()``, ``wp.copy``, a NumPy view);
* every reversed step: the kernel launches on its local Tape, read by
  `launches.writers`. A launch that stores or accumulates into an argument (or
  passes it somewhere the analysis does not follow) overlapping an input state array breaks the promise.
"""

from __future__ import annotations

import numpy as np

from .launches import writers
from .state import CheckpointError

_FIX = (
    "Drop writes_input=False (snapshots are then copied, and a step may write its input), or, if the step only "
    "uses that array as scratch (as Newton's solvers use particle_f), leave it out of the state with fields=[...]"
)


def _bytes(array) -> np.ndarray:
    """The array's elements as raw bytes, on the host (a view for CPU arrays)."""
    return np.ascontiguousarray(array.numpy()).view(np.uint8)


def values(arrays) -> list:
    """Host copies of ``arrays``' bytes, to compare after the step."""
    return [_bytes(a).copy() for a in arrays]


def check_unchanged(before: list, arrays, labels, n: int, tape=None) -> None:
    """Raise unless ``arrays`` hold the bytes ``before`` recorded (the input state of step ``n``); ``tape``, the
    step's launches, names the kernel that wrote a changed array."""
    for i, (old, arr, label) in enumerate(zip(before, arrays, labels)):
        if not np.array_equal(old, _bytes(arr)):
            kernels = [] if tape is None else [u for u, k in writers(tape, arrays) if k == i]
            by = (
                f"kernel '{kernels[0].kernel}' (argument '{kernels[0].parameter}')"
                if kernels
                else "no kernel launch of the step (zero_(), fill_(), wp.copy or a NumPy write)"
            )
            raise CheckpointError(
                f"rollout(writes_input=False): step {n} changed {label}, an array of its input state (written by "
                f"{by}), but with that promise snapshots are read and written in place and a step writing its input "
                f"would corrupt them. {_FIX}"
            )


def check_written_in_place(found, given, labels, n: int) -> None:
    """Raise if step ``n`` rebound an array of its output state (``found``) instead of writing into the one it
    was given (``given``: a snapshot's, which would then miss the step's output)."""
    for now, arr, label in zip(found, given, labels):
        if now is not arr:
            out_label = label.replace("state", "out", 1)
            raise CheckpointError(
                f"rollout(writes_input=False): step {n} rebound {out_label} to another array instead of writing into "
                "the one it was given; with that promise the output arrays may be a snapshot's, which would miss "
                "the step's result. Write into state_out's arrays (wp.copy(state_out.x, ...) or a kernel), or drop "
                "writes_input=False"
            )


def check_launches(tape, arrays, labels, n: int) -> None:
    """Raise if a kernel launch on ``tape`` (step ``n``, reversed) writes into one of ``arrays`` (its input).
    ``record_func`` entries (``wp.copy``, custom adjoints) are not read: the value check at step 0 covers copies."""
    for use, i in writers(tape, arrays):
        raise CheckpointError(
            f"rollout(writes_input=False): step {n} launched kernel '{use.kernel}', which writes (or may write) its "
            f"argument '{use.parameter}', and that is {labels[i]} of the input state; with that promise snapshots are "
            f"read and written in place, so this step corrupts them. {_FIX}"
        )
