"""The PRE twin: a flagged kernel's backward for memory restored to what the launch read (`replay.PRE`).

A ``zero_store=True`` kernel's own backward is the `replay.POST` one. Where its `replay.PRE` backward differs,
it is built as a twin kernel: the same function, options and mode, in a module of its own with its own hash, so
that neither build can serve the other from Warp's kernel cache. The snapshot Tape launches the twin's adjoint in
the kernel's place, and so do the bridges' ``in_out`` modes, which hand in the pre-op values.
"""

from __future__ import annotations

import itertools

from .. import _compat
from ..options import effective_zero_store
from . import replay, replay_records

_UNSET = object()
_TWIN_COUNT = itertools.count()  # twins' module names are unique: Warp names a build folder by module name and hash


def replay_memory(kernel) -> str:
    """`replay.PRE` for a PRE twin, else `replay.POST`: what memory the kernel's generated backward expects."""
    facts = _compat.memo(kernel) if hasattr(kernel, "__dict__") else {}
    return replay.PRE if facts.get("pre_twin.is_twin") else replay.POST


def pre_backward(kernel):
    """The kernel to launch the adjoint of when memory holds, for the arrays it reads back, what the launch read
    (the snapshot Tape, a bridge handing in the pre-op values): ``kernel`` itself where its two backwards are the
    same, a twin built apart (same function, options and mode, its own module and hash) where they differ, or None
    where none can be built (a generic kernel's overload).

    Example::

        twin = pre_backward(k)  # k: a zero_store=True kernel that updates an element, then reads it
    """
    if effective_zero_store(kernel) is not True:
        return kernel
    if replay_records.build_of(kernel) is not None and not replay_records.pre_differs(kernel):
        return kernel
    if not hasattr(kernel, "__dict__"):
        return None
    facts = _compat.memo(kernel)  # the twin goes with its kernel
    twin = facts.get("pre_twin.twin", _UNSET)
    if twin is not _UNSET:
        return twin
    twin = _compat.kernel_copy_in_new_module(kernel, f"__zs_pre_{_compat.kernel_key(kernel)}_{next(_TWIN_COUNT)}")
    if twin is not None:
        _compat.memo(twin)["pre_twin.is_twin"] = True
    facts["pre_twin.twin"] = twin
    return twin


def replays_exactly(kernel, memory: str = replay.PRE) -> bool:
    """Whether ``kernel``'s backward replay reads what its forward read, its own stores included, given ``memory``
    (`replay.PRE`: as the launch read it, where its `pre_backward` then gives it exactly; `replay.POST`: as the
    forward left it): a ``zero_store=True`` kernel whose build reported no issue for that memory."""
    if effective_zero_store(kernel) is not True:
        return False
    found = replay_records.issues(kernel, memory)
    return not found


def warn_replay_issues(kernel) -> None:
    """Warn about what ``kernel``'s backward, about to run, cannot replay exactly: the issues of the memory it
    expects (`replay_memory`). Called where a backward runs (Warp's ``Tape.backward``, the bridges)."""
    if effective_zero_store(kernel) is True:
        replay_records.warn(kernel, replay_memory(kernel))
