"""Holding a double-buffered step to ``rollout(writes_input=False)``: it never writes the state it reads.

With that promise the executor reads snapshots in place and lets a step write its output straight into a
snapshot, so a step that wrote into its input state would overwrite a snapshot, and the gradients would be
silently wrong. Two checks catch a broken promise and raise :class:`~.state.CheckpointError` (a third, that a
step writes into the output arrays it is given rather than rebinding them, guards the snapshot it writes):

* step 0, the first time it runs: the input state's bytes before and after the step, which catches any write
  that changes a value, however it is made (a kernel, ``zero_()``, ``fill_()``, ``wp.copy``, a NumPy view);
* every reversed step: the kernel launches on its local Tape, read by
  :func:`~warp_zerostore.access.argument_access`. A launch that stores or accumulates into an argument (or
  passes it somewhere the analysis does not follow) overlapping an input state array breaks the promise.
"""

from __future__ import annotations

import numpy as np
import warp

from .. import _compat
from .._memory import byte_span, overlap
from ..access import argument_access
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


def check_unchanged(before: list, arrays, labels, n: int) -> None:
    """Raise unless ``arrays`` hold the bytes ``before`` recorded (the input state of step ``n``)."""
    for old, arr, label in zip(before, arrays, labels):
        if not np.array_equal(old, _bytes(arr)):
            raise CheckpointError(
                f"rollout(writes_input=False): step {n} changed {label}, an array of its input state, but with that "
                f"promise snapshots are read and written in place and a step writing its input would corrupt them. "
                f"{_FIX}"
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
    """Raise if a kernel launch on ``tape`` (step ``n``, reversed) writes into one of ``arrays`` (its input)."""
    spans = [byte_span(a) for a in arrays]
    for entry in _compat.tape_entries(tape):
        if not _compat.is_kernel_launch(entry):
            continue  # record_func entries (wp.copy, custom adjoints): the value check at step 0 covers copies
        kernel = _compat.launch_kernel(entry)
        access = argument_access(kernel)
        for parameter, value in _compat.recorded_arguments(entry):
            use = access.get(parameter)
            if use is None or not use.writes or not isinstance(value, warp.array):
                continue
            span = byte_span(value)
            for arr, arr_span, label in zip(arrays, spans, labels):
                if value is arr or overlap(span, arr_span):
                    raise CheckpointError(
                        f"rollout(writes_input=False): step {n} launched kernel '{_compat.kernel_key(kernel)}', "
                        f"which writes (or may write) its argument '{parameter}', and that is {label} of the input "
                        f"state; with that promise snapshots are read and written in place, so this step corrupts "
                        f"them. {_FIX}"
                    )
