"""Which state gradients one step's backward provably leaves all zero, so the next reversal need not zero them.

Double-buffered, the buffer a reversed step writes is the buffer the step before it reads: its ``.grad`` held
the adjoint of the step's output, and must start the next reversal at zero. A step that stores every element
of such an array, with a store adjoint that zeroes what it consumes, leaves it zero already; zeroing it again
costs a pass over the state per reversed step. The proof is conservative: one launch of the step touches the
array (nothing else of its Tape overlaps its memory), that launch's kernel stores it in full without reading it
(`warp_zerostore.access.fully_stored`, launched over its shape), and the kernel's store adjoint zeroes
(``zero_store=True``, or unflagged on a Warp that zeroes on a Tape); arrays with ``retain_grad`` never count.
"""

from __future__ import annotations

import warp

from .. import _compat
from .._memory import byte_span, overlap
from ..access import fully_stored
from ..options import store_adjoints_zero


def left_zero(tape, arrays) -> set:
    """``id``\\ s of those of ``arrays`` whose ``.grad`` the backward of ``tape`` (one step) leaves all zero."""
    entries = _compat.tape_entries(tape)
    if not entries or not all(_compat.is_kernel_launch(e) for e in entries):
        return set()  # a record_func entry (a copy, a custom adjoint) may write any gradient
    uses = []  # (entry, parameter label, value, its byte span) for every array argument
    for entry in entries:
        for label, value in _compat.recorded_arguments(entry):
            if _compat.is_struct_instance(value):
                return set()  # arrays inside structs: not followed
            if isinstance(value, warp.array):
                uses.append((entry, label, value, byte_span(value)))
    found = set()
    for array in arrays:
        if _compat.retains_grad(array):
            continue
        span = byte_span(array)
        touching = [u for u in uses if u[2] is array or overlap(u[3], span)]
        if len(touching) != 1 or touching[0][2] is not array:
            continue
        entry, label, _, _ = touching[0]
        kernel = _compat.launch_kernel(entry)
        ndim = fully_stored(kernel).get(label)
        if ndim == array.ndim and _compat.launch_dim(entry) == tuple(array.shape) and store_adjoints_zero(kernel):
            found.add(id(array))
    return found
