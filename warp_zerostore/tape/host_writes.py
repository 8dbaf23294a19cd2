"""Whole-array writes made from the host inside a recording snapshot Tape: ``zero_``, ``fill_``, ``assign`` and a
``wp.copy`` Warp does not record (the source or the destination has no gradient).

Warp's Tape records none of them, so a plain Tape's backward reads what the last one left (a contact buffer reset
every substep reads as the last substep's), and a snapshot Tape would see the change as a mutation and refuse
the program. A snapshot Tape records each as the write it is: a constant write over its destination (or over a
window of it, for a copy with offsets). Its Tape entry (`Undo`), run in ``backward()`` where the write sits in
the sequence, puts back the destination's content from before the write (for the adjoints of the launches before
it that read that memory) and zeroes the gradient of what it overwrote (nothing flows from after the write into
what was there before: the adjoint of a constant store), except on a ``retain_grad`` array.

A copy Warp records (both arrays have gradients) is left as it was: its adjoint is Warp's (or
`copy_adjoint`'s), and a change of memory a recorded launch read stays a mutation, refused by name.
Indexed and fabric arrays are not recorded either.
"""

from __future__ import annotations

import dataclasses

import warp

from .. import _compat

#: the calls recorded, by the name the hook reports (`_compat.HOST_WRITES`)
KINDS = ("zero_", "fill_", "assign", "copy")


@dataclasses.dataclass(frozen=True)
class HostWrite:
    """One call's write: the array it writes, and the elements (row-major ``(offset, count)``; None: all of them)."""

    kind: str
    dest: warp.array
    window: tuple | None = None


def described(kind: str, args: tuple, kwargs: dict) -> HostWrite | None:
    """The write a hooked call makes, or None where the Tape does not record it (not a plain ``wp.array``)."""
    if kind == "copy":
        try:
            bound = _compat.copy_arguments(args, kwargs)
        except TypeError:
            return None  # Warp's own error, raised by the call itself
        dest, src = bound["dest"], bound["src"]
        if type(dest) is not warp.array or not isinstance(src, warp.array):
            return None
        offset, count = int(bound["dest_offset"]), int(bound["count"]) or src.size
        window = None if offset == 0 and count >= dest.size else (offset, count)
        return HostWrite(kind, dest, window)
    dest = args[0] if args else None
    if type(dest) is not warp.array:
        return None
    return HostWrite(kind, dest)


def elements(arr, window: tuple | None):
    """The elements ``window`` names, as a view of ``arr`` (``arr`` itself for None); None where no view can say
    them (a window into a non-contiguous array of several dimensions, which ``wp.copy`` refuses too)."""
    if window is None:
        return arr
    offset, count = window
    if arr.is_contiguous:
        return arr.flatten()[offset : offset + count]
    if arr.ndim == 1:
        return arr[offset : offset + count]
    return None


class Undo:
    """The Tape entry of a recorded host write, called by ``backward()`` in reverse order like a launch's adjoint:
    the destination's content from before the write comes back, and the gradient of what it overwrote is zero."""

    def __init__(self, dest, saved, grad):
        self.dest = dest
        self.saved = saved  # device copy of ``dest`` from before the write, or None (no earlier launch read it)
        self.grad = grad  # the view of ``dest.grad`` the write overwrote, or None (kept)

    def __call__(self):
        with _compat.no_active_tape():
            if self.saved is not None:
                _compat.copy_on_device(self.dest, self.saved)
            if self.grad is not None:
                self.grad.zero_()


__all__ = ["KINDS", "HostWrite", "Undo", "described", "elements"]
