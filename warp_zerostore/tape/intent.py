"""Declared intent: arrays whose values at ``backward()`` are the ones the backward must read.

The adjoint method records a residual, changes its state outside the Tape (a linear solve), and lets the backward
read the new state on purpose. From the Tape's side that is a change after record, which it cannot tell from a bug
(an in-place kernel over a zero-copy alias, an untaped write-back): without a word from the user it reports the
change (``check``) or refuses it by name (``Tape(snapshot=True)``). `read_at_backward` is that word. It exempts
only changes made *outside* recorded launches: what recorded launches write is snapshotted and restored as
before, and their stale reads and overwrites are still reported.

A declaration covers the memory of the arrays it names (a view of a declared array is declared; a larger array
over it is not), on their device, while they live: for the rest of the program (a call), or within a block (a
``with`` statement).
"""

from __future__ import annotations

import weakref

import warp

from .._memory import byte_span

#: the declared arrays, held weakly: one freed is no longer declared, and its memory reused by another array is not
_DECLARED: weakref.WeakSet = weakref.WeakSet()


class Declaration:
    """What `read_at_backward` returns: in force from the call; as a context manager, withdrawn when the block
    ends."""

    def __init__(self, arrays: tuple):
        self.arrays = arrays

    def __enter__(self) -> Declaration:
        return self

    def __exit__(self, *exc_info) -> None:
        for arr in self.arrays:
            _DECLARED.discard(arr)


def read_at_backward(*arrays) -> Declaration:
    """Declare that the backward must read these arrays as they are at ``backward()``, not as recorded launches
    read them: the adjoint method's state, solved after its residual was recorded.

    A change of such an array outside recorded launches is then neither reported by ``check`` nor refused by
    ``Tape(snapshot=True)``, and the backward reads the new values, as Warp's own Tape does. Changes by recorded
    launches are unaffected (snapshotted, restored, reported as before). Without the declaration, such a change
    is reported as real (``check``) and refused by name (the snapshot Tape), whichever path read the array.

    Args:
        *arrays: The ``wp.array`` s (views of them included) whose values at ``backward()`` the backward reads.

    Returns:
        A `Declaration`: in force from the call for as long as the arrays live; used as a context manager
        (``with wp.read_at_backward(u): ...``), withdrawn when the block ends.

    Raises:
        TypeError: An argument is not a ``wp.array``.

    Example:
        ```python
        import warp_zerostore as wp

        @wp.kernel
        def residual(u: wp.array(dtype=float), k: wp.array(dtype=float), r: wp.array(dtype=float)):
            i = wp.tid()
            r[i] = k[i] * u[i] * u[i]

        u = wp.zeros(2, dtype=float, requires_grad=True)
        k = wp.array([1.0, 2.0], dtype=float, requires_grad=True)
        r = wp.zeros(2, dtype=float, requires_grad=True)
        tape = wp.Tape(snapshot=True)
        with tape:
            wp.launch(residual, dim=2, inputs=[u, k, r])
        u.assign([3.0, 4.0])  # the solve, outside the Tape
        wp.read_at_backward(u)  # the residual's backward must read the solution
        tape.backward(grads={r: wp.ones(2, dtype=float)})
        assert k.grad.numpy().tolist() == [9.0, 16.0]
        ```
    """
    for position, arr in enumerate(arrays):
        if not isinstance(arr, warp.array):
            raise TypeError(
                f"read_at_backward: argument {position} is a {type(arr).__name__}, not a wp.array; pass the arrays "
                "whose values at backward() the backward must read (a struct's arrays by their field: s.q)"
            )
    for arr in arrays:
        _DECLARED.add(arr)
    return Declaration(arrays)


def is_declared(arr) -> bool:
    """Does a declaration (`read_at_backward`) cover every byte of ``arr``, on its device?"""
    if not _DECLARED:
        return False
    span = byte_span(arr)
    for declared in list(_DECLARED):
        if declared.device != arr.device:
            continue
        covered = byte_span(declared)
        if covered[0] <= span[0] and span[1] <= covered[1] and span[0] < span[1]:
            return True
    return False
