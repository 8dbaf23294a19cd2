"""Arrays made with ``retain_grad=True`` that a recorded launch stores over after an earlier one wrote them: the
gradient double count, found from the recorded launches alone (a Tape that does not check: plain or snapshot).

``retain_grad=True`` (Warp >= 1.13) keeps an array's gradient for the user to read: no store adjoint zeroes it,
stock Warp's nor ``zero_store=True``'s. Where a later launch stores over what an earlier one wrote, the earlier
launch's adjoint then gets the gradient of the overwritten values on top of what the later store passes on, and its
inputs' gradients are counted twice; no flag and no snapshot mends that (the remedy is the user's: a separate array
for the value inspected, or ``retain_grad`` only on an array written once). A checking Tape finds it element by
element (an overwrite with cause ``"retain_grad"``); a Tape that does not check finds it here at ``backward()``,
array by array: the later launch's source stores into the array (`access`) and an earlier launch's writes into memory
it spans. A guess by array used only to report (two launches that write disjoint elements of one array are named
too); an array written once is never named.
"""

from __future__ import annotations

import dataclasses

import warp

from .. import _compat
from .._memory import byte_span
from ..access import argument_access


@dataclasses.dataclass(frozen=True)
class StoredOver:
    """A ``retain_grad`` array stored over: entry ``later`` of the Tape (its argument ``later_label``) stores into
    memory that entry ``earlier`` (argument ``earlier_label``) wrote."""

    earlier: int
    earlier_label: str
    later: int
    later_label: str


def stored_over(entries: list) -> list:
    """The `StoredOver` s of a Tape's recorded entries (`_compat.tape_entries`), each pair of launches and arguments
    once. Costs nothing where Warp has no ``retain_grad`` (before 1.13), and one attribute read per array argument
    otherwise."""
    if not _compat.HAS_RETAIN_GRAD:
        return []
    found, seen = [], set()
    written: list = []  # (device, start, end, entry index, label) of writes into retain_grad arrays so far
    for index, entry in enumerate(entries):
        if not _compat.is_kernel_launch(entry):
            continue
        kernel = _compat.launch_kernel(entry)
        access = None
        for label, value in _compat.recorded_arguments(entry):
            if not isinstance(value, warp.array) or not _compat.retains_grad(value) or not value.size:
                continue
            if not _compat.carries_gradient(value):
                continue
            if access is None:
                access = argument_access(kernel)
            use = access.get(label)
            if use is None or not use.writes:
                continue
            device, (start, end) = str(value.device), byte_span(value)
            if use.stores and _compat.kernel_has_backward(kernel):
                for other_device, other_start, other_end, earlier, earlier_label in written:
                    if other_device == device and other_start < end and start < other_end:
                        pair = (_site(entries[earlier], earlier_label), _site(entry, label))
                        if pair not in seen:
                            seen.add(pair)
                            found.append(StoredOver(earlier, earlier_label, index, label))
            written.append((device, start, end, index, label))
    return found


def _site(entry, label: str) -> tuple:
    return (_compat.launch_kernel(entry).key, label, _compat.launch_caller(entry))


__all__ = ["StoredOver", "stored_over"]
