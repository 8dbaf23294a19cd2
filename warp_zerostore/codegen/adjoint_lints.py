"""The `AdjointWarning`: constructs whose adjoint Warp itself gets wrong (`warp_zerostore.lints`), in a
``zero_store=True`` kernel's source, warned where its backward first runs.

Where a gradient actually flows: Warp's ``Tape.backward`` (hooked in `hooks`, which the package's Tape calls) and the
PyTorch and JAX bridges call `warn_backward` for each kernel whose adjoint is about to run, once per kernel source
and process, at each finding's line. A kernel that no backward runs (warp.sparse's and warp.fem's assembly kernels
under ``config.zero_store = True``) has no wrong gradient to warn about, so it is never warned; and a build loaded
from Warp's cache is warned like a fresh one (the lints read the source, not generated code). The lints know each
local's type from the source (`lints.local_types`): an integer or bool local is warned only where its value
chooses elements or code (an index, a branch), never as a value.

A hand-launched adjoint (``wp.launch(..., adjoint=True)``) is not warned: `messages` gives the findings there.
"""

from __future__ import annotations

import logging
import warnings

from .. import _compat, lints
from ..lints import local_types
from ..options import effective_zero_store
from .pre_twin import warn_replay_issues

_log = logging.getLogger(__name__)

_WARNED: set = set()  # (kernel key, source location) warned in this process


def messages(kernel) -> list:
    """``[(message, filename, line)]`` of the `AdjointWarning` s a ``zero_store=True`` kernel's backward gets
    (empty for other kernels, and for kernels built without a backward)."""
    if effective_zero_store(kernel) is not True or not _compat.kernel_has_backward(kernel):
        return []
    try:
        found = lints.find(_compat.kernel_tree(kernel), local_types.Typing(kernel))
    except (AttributeError, StopIteration, SyntaxError) as error:  # no source tree: nothing to look at
        _log.debug("kernel %s: no source tree to check for Warp's wrong adjoints (%s)", kernel, error)
        return []
    location = _compat.kernel_source_location(kernel)
    filename, first = _compat.kernel_source_line(kernel)
    if first is None:  # no line in the file: lines of the kernel's own text, under a name that says so
        filename, first = f"<kernel '{_compat.kernel_key(kernel)}' built from source text, {filename}>", 1
    return [(f.message(_compat.kernel_key(kernel), location), filename, first + f.line - 1) for f in found]


def warn(kernel) -> None:
    """Warn the `AdjointWarning` s of ``kernel``'s backward, about to run, once per kernel source and process."""
    if effective_zero_store(kernel) is not True:
        return
    key = (_compat.kernel_key(kernel), _compat.kernel_source_location(kernel))
    if key in _WARNED:
        return
    _WARNED.add(key)
    for message, filename, line in messages(kernel):
        warnings.warn_explicit(lints.AdjointWarning(message), lints.AdjointWarning, filename, line)


def warn_backward(kernel) -> None:
    """Everything the package warns about a kernel whose backward is about to run: what its replay cannot replay
    exactly (`ReplayWarning`) and what Warp's own adjoint gets wrong (`AdjointWarning`)."""
    warn_replay_issues(kernel)
    warn(kernel)


def forget_warnings() -> None:
    """Warn again about every kernel (tests)."""
    _WARNED.clear()
