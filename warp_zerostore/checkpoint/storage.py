"""Where snapshots of the state live: device copies in RAM, or ``.npy`` files in a directory the user names.

A snapshot is one copy of every state array, keyed by the step it was taken before. Both stores count their
bytes (current and peak) for the rollout's summary.
"""

from __future__ import annotations

import os
import shutil
import tempfile
import weakref

import numpy as np
import warp


def _copy_into(dest, src) -> None:
    warp.copy(dest, src)


class RamStorage:
    """Snapshots as Warp arrays on the state's device (no gradient buffers).

    A deleted snapshot's arrays are kept for the next write (Revolve writes and drops snapshots all through
    the reverse sweep): no allocation, and no fresh pages to fault in, after the first ``s`` writes.
    """

    def __init__(self):
        self.snapshots: dict = {}  # step -> [wp.array]
        self.spare: list = []  # [[wp.array]] of deleted snapshots, reused by write()
        self.bytes = 0  # held by snapshots, spare arrays included (they stay allocated)
        self.peak_bytes = 0
        self.peak_count = 0

    def write(self, step: int, arrays) -> None:
        copies, fresh = self._take(step, arrays)
        if not fresh:  # fresh arrays are copies already
            for dest, src in zip(copies, arrays):
                _copy_into(dest, src)

    def claim(self, step: int, like) -> list:
        """Snapshot ``step``'s arrays, for the caller to fill (a step writes its output there: a snapshot taken
        without a copy); a deleted snapshot's arrays are reused as by `write`. New arrays start as copies of
        ``like`` (the work buffer), so an array the step never writes holds what it holds in every buffer."""
        return self._take(step, like)[0]

    def _take(self, step: int, like) -> tuple:
        """Arrays for snapshot ``step`` (a deleted snapshot's, or new copies of ``like``), and whether new."""
        self.delete(step)
        arrays = self.spare.pop() if self.spare else None
        fresh = arrays is None
        if fresh:
            arrays = [warp.clone(a, requires_grad=False) for a in like]
            self.bytes += sum(a.capacity for a in arrays)
        self.snapshots[step] = arrays
        self.peak_bytes = max(self.peak_bytes, self.bytes)
        self.peak_count = max(self.peak_count, len(self.snapshots))
        return arrays, fresh

    def read(self, step: int, arrays) -> None:
        for dest, src in zip(arrays, self.snapshots[step]):
            _copy_into(dest, src)

    def holds(self, step: int, arrays) -> bool:
        """Whether snapshot ``step`` is these very arrays."""
        return self.snapshots.get(step) is arrays

    def borrow(self, step: int, like) -> list:
        """The snapshot's own arrays (shaped like ``like``), to be read in place of a copy; valid until deleted."""
        return self.snapshots[step]

    def delete(self, step: int) -> None:
        copies = self.snapshots.pop(step, None)
        if copies is not None:
            self.spare.append(copies)

    def close(self) -> None:
        self.snapshots.clear()
        self.spare.clear()
        self.bytes = 0


class DiskStorage:
    """Snapshots as ``.npy`` files in a private folder made inside ``directory`` and removed by `close`.

    A file is written under a temporary name and renamed when complete, so a step or a write that fails
    halfway leaves no half-written snapshot that could be read back.
    """

    def __init__(self, directory):
        if directory is None:
            raise ValueError(
                "rollout(): snapshots on disk need directory=...: a folder for the .npy files (a private subfolder "
                "is made inside it and removed afterwards)"
            )
        os.makedirs(directory, exist_ok=True)
        self.folder = tempfile.mkdtemp(prefix="warp_zerostore_checkpoint_", dir=directory)
        # A rollout never reversed nor closed still leaves nothing behind once collected (or at exit).
        self._remove = weakref.finalize(self, shutil.rmtree, self.folder, True)
        self.snapshots: dict = {}  # step -> [path]
        self.sizes: dict = {}  # step -> bytes of array data
        self.bytes = 0
        self.peak_bytes = 0
        self.peak_count = 0

    def write(self, step: int, arrays) -> None:
        self.delete(step)
        paths = []
        try:
            for i, arr in enumerate(arrays):
                path = os.path.join(self.folder, f"step{step:09d}_array{i}.npy")
                partial = path + ".partial"
                with open(partial, "wb") as f:
                    np.save(f, arr.numpy())
                os.replace(partial, path)
                paths.append(path)
        except BaseException:
            for path in paths:
                os.remove(path)
            raise
        self.snapshots[step] = paths
        self.sizes[step] = sum(a.capacity for a in arrays)
        self.bytes += self.sizes[step]
        self.peak_bytes = max(self.peak_bytes, self.bytes)
        self.peak_count = max(self.peak_count, len(self.snapshots))

    def read(self, step: int, arrays) -> None:
        for dest, src in zip(arrays, self.borrow(step, like=arrays)):
            _copy_into(dest, src)

    def holds(self, step: int, arrays) -> bool:
        return False  # a snapshot on disk is a file, never arrays in memory

    def borrow(self, step: int, like) -> list:
        """The snapshot loaded into new arrays shaped, typed and placed like ``like``."""
        return [
            warp.array(np.load(path), dtype=dest.dtype, shape=dest.shape, device=dest.device)
            for dest, path in zip(like, self.snapshots[step])
        ]

    def delete(self, step: int) -> None:
        paths = self.snapshots.pop(step, None)
        self.bytes -= self.sizes.pop(step, 0)
        for path in paths or ():
            os.remove(path)

    def close(self) -> None:
        self.snapshots.clear()
        self.sizes.clear()
        self.bytes = 0
        self._remove()
