"""What one step's recorded launches read and write, from the kernels' sources: the questions the executor asks.

Warp's backward replays each launch against memory as it is at ``backward()`` time. Within one step reversed
on a plain Tape that is right unless a launch writes memory that the same or an earlier launch of the step
reads: that launch's backward then re-reads the new values (Newton's Featherstone ``eval_rigid_tau`` reads
``body_f_ext``, then overwrites it). `read_then_written` finds such pairs; the executor then reverses
the step on a snapshotting Tape. `writers` finds the launches that write given arrays (a broken
``writes_input=False`` promise, a step that overwrites its own input state).

Both read `warp_zerostore.access.argument_access` and `struct_field_access` (conservative: an argument passed
where the analysis does not follow counts as read and written; arrays held in a ``@wp.struct`` argument are
followed, named by their path, ``s.q``) and compare byte spans, so views and aliases count. This is the one place
that decides whether a step needs a snapshotting Tape; a checking Tape's stale reads are element-precise, so each
is among these. Only kernel launches are read: ``record_func`` entries (``wp.copy``, custom adjoints) are not;
`read_before` answers for a copy the executor saw (see `warp_zerostore.copy_adjoint.gradients_kept`).
"""

from __future__ import annotations

import dataclasses
from typing import NamedTuple

import warp

from .. import _compat
from .._memory import byte_span, overlap
from ..access import ArgumentAccess, argument_access, struct_field_access


class Use(NamedTuple):
    """One array argument of one recorded kernel launch (a tuple: the executor reads every reversed step)."""

    launch: int  # index of the launch among the Tape's entries
    kernel: str
    parameter: str
    array: object
    span: tuple
    access: ArgumentAccess
    replayed: bool  # the kernel has a backward: Warp's backward re-reads what it read (enable_backward=False: never)


def uses(tape) -> list:
    """Per recorded kernel launch of ``tape``, in order, the `Use` of each array argument its kernel uses."""
    found = []
    for index, entry in enumerate(_compat.tape_entries(tape)):
        if not _compat.is_kernel_launch(entry):
            continue
        kernel = _compat.launch_kernel(entry)
        access = argument_access(kernel)
        key = _compat.kernel_key(kernel)
        replayed = _compat.kernel_has_backward(kernel)
        arguments = _compat.recorded_arguments(entry)
        launch = [
            Use(index, key, parameter, value, byte_span(value), access[parameter], replayed)
            for parameter, value in arguments
            if isinstance(value, warp.array) and parameter in access and value.size
        ]
        for label, (position, path, field_access) in struct_field_access(kernel).items():
            value = arguments[position][1] if position < len(arguments) else None
            for name in path:
                value = getattr(value, name, None)
            if isinstance(value, warp.array) and value.size:
                launch.append(Use(index, key, label, value, byte_span(value), field_access, replayed))
        found.append(launch)
    return found


def _same_memory(a: Use, b: Use) -> bool:
    return a.array is b.array or overlap(a.span, b.span)


@dataclasses.dataclass(frozen=True)
class ReadThenWritten:
    """A launch (``writer``) writes memory that ``reader``, the same launch or an earlier one, reads."""

    reader: Use
    writer: Use

    def describe(self) -> str:
        if self.reader.launch == self.writer.launch:
            read = (
                "which the same launch reads"
                if self.reader.parameter == self.writer.parameter
                else f"which the same launch reads as '{self.reader.parameter}'"
            )
        else:
            read = f"which kernel '{self.reader.kernel}' (argument '{self.reader.parameter}') reads earlier in the step"
        return f"kernel '{self.writer.kernel}' writes its argument '{self.writer.parameter}', {read}"


def read_then_written(tape) -> list:
    """Every (reader, writer) pair of ``tape``'s kernel launches where the writer changes memory the reader,
    launched no later, reads: what a plain Tape reverses wrong, and ``Tape(snapshot=True)`` right. Each writer
    argument once, with its first reader. A kernel built with ``enable_backward=False`` is never a reader: its
    backward never runs.

    Example:
        ```python
        import warp_zerostore as wp
        from warp_zerostore.checkpoint.launches import read_then_written

        @wp.kernel
        def square_in_place(x: wp.array(dtype=float)):
            x[wp.tid()] = x[wp.tid()] * x[wp.tid()]

        x = wp.array([3.0], dtype=float, requires_grad=True)
        tape = wp.Tape()
        with tape:
            wp.launch(square_in_place, dim=1, inputs=[x])
        [found] = read_then_written(tape)
        assert found.describe() == "kernel 'square_in_place' writes its argument 'x', which the same launch reads"
        ```
    """
    found, reads = [], []
    for launch in uses(tape):
        reads.extend(u for u in launch if u.access.reads and u.replayed)
        for use in launch:
            if use.access.writes:
                reader = next((r for r in reads if _same_memory(r, use)), None)
                if reader is not None:
                    found.append(ReadThenWritten(reader, use))
    return found


def writers(tape, arrays) -> list:
    """``(Use, index into arrays)`` for each kernel launch argument of ``tape`` that writes (or may write) memory
    of one of ``arrays``, in launch order."""
    spans = [byte_span(a) for a in arrays]
    found = []
    for launch in uses(tape):
        for use in launch:
            if not use.access.writes:
                continue
            for i, (arr, span) in enumerate(zip(arrays, spans)):
                if use.array is arr or (arr.size and overlap(use.span, span)):
                    found.append((use, i))
    return found


def read_before(tape, array, entries: int) -> Use | None:
    """The first kernel launch among ``tape``'s first ``entries`` entries whose backward re-reads memory of ``array``: a
    ``wp.copy`` into ``array`` recorded after it changes what that launch's backward re-reads, and a Tape
    snapshots launches, not copies."""
    span = byte_span(array)
    for launch in uses(tape):
        for use in launch:
            if (
                use.launch < entries
                and use.access.reads
                and use.replayed
                and (use.array is array or overlap(use.span, span))
            ):
                return use
    return None
