"""What a launch changed, observed: an array's bytes after a launch against the copy the snapshot Tape took before it.

The source analysis (`access`) is exact where it can follow a kernel, and says "may write" where it cannot (an
array passed to a builtin it does not know, to a helper without source). A snapshot Tape must not turn that guess
into a restore at ``backward()``: a restore of an array the launch did not change would hand the launch's adjoint
values from before a later change outside the Tape: a guess would change a gradient. So for such a launch the Tape asks the one question the guess decided: did the launch change any byte
of the array? It holds the bytes from before the launch (the snapshot's device copy), so the answer is observed,
not guessed.

Observed bytes decide only that: whether a "may write" launch's snapshot is kept (restored at ``backward()``, and
excusing a later change of the array from the mutation refusal). They never decide an overwrite or a read between
writes: a kernel that stores the value already there, or writes an element and restores it within the launch,
still has the wrong gradient those name, and the read twin's write marks (made whatever the value stored) decide
them.

Cost: on the CPU a comparison of host views (no copy of a contiguous array); on a GPU one compare kernel over
32-bit words (or bytes) of the two device arrays and a 4-byte read back, no host copy.
"""

from __future__ import annotations

import numpy as np
import warp

from .. import _compat


@warp.kernel(enable_backward=False)
def _differ_words(
    a: warp.array(dtype=warp.uint32), b: warp.array(dtype=warp.uint32), found: warp.array(dtype=warp.int32)
):
    i = warp.tid()
    if a[i] != b[i]:
        found[0] = 1


@warp.kernel(enable_backward=False)
def _differ_bytes(
    a: warp.array(dtype=warp.uint8), b: warp.array(dtype=warp.uint8), found: warp.array(dtype=warp.int32)
):
    i = warp.tid()
    if a[i] != b[i]:
        found[0] = 1


#: up to this many bytes, two host copies compared as bytes are quicker than a word-wise comparison
_SMALL = 4096


def unchanged(saved, arr) -> bool:
    """Does ``arr`` hold every byte ``saved`` (a contiguous copy of it, on its device) holds?

    Example:
        ```python
        import warp_zerostore as wp
        from warp_zerostore.tape.observe import unchanged

        a = wp.array([1.0, 2.0], dtype=float)
        saved = wp.clone(a)
        assert unchanged(saved, a)
        a.fill_(2.0)
        assert not unchanged(saved, a)
        ```
    """
    if arr.size == 0:
        return True
    if arr.device.is_cpu:
        return _host_unchanged(saved, arr)
    return device_unchanged(saved, arr)


def _host_unchanged(saved, arr) -> bool:
    nbytes = arr.size * _compat.dtype_size_bytes(arr.dtype)
    before, after = _compat.cpu_view(saved), _compat.cpu_view(arr)  # the CPU's memory, in place
    if nbytes <= _SMALL or not after.flags.c_contiguous:
        return before.tobytes() == after.tobytes()
    word = np.uint64 if nbytes % 8 == 0 else np.uint8  # one compare per word, no copy
    return np.array_equal(before.reshape(-1).view(word), after.reshape(-1).view(word))


def device_unchanged(saved, arr) -> bool:
    """`unchanged` as a GPU answers it: one compare kernel over 32-bit words (bytes where the size is not a multiple
    of 4) of the two arrays on their device, and a 4-byte read back (runs on any device: the tests run it on the
    CPU)."""
    if arr.size == 0:
        return True
    nbytes = arr.size * _compat.dtype_size_bytes(arr.dtype)
    with _compat.no_active_tape():
        now = arr if arr.is_contiguous else warp.clone(arr, requires_grad=False)
        if nbytes % 4 == 0:
            kernel, dtype, count = _differ_words, warp.uint32, nbytes // 4
        else:
            kernel, dtype, count = _differ_bytes, warp.uint8, nbytes
        a = warp.array(ptr=saved.ptr, dtype=dtype, shape=(count,), device=arr.device)
        b = warp.array(ptr=now.ptr, dtype=dtype, shape=(count,), device=arr.device)
        found = warp.zeros(1, dtype=warp.int32, device=arr.device)
        warp.launch(kernel, dim=count, inputs=[a, b, found], device=arr.device)
        return int(found.numpy()[0]) == 0
