"""The `AdjointWarning`: constructs whose adjoint Warp itself gets wrong (`warp_zerostore.lints`), in a
``zero_store=True`` kernel's source, warned where its backward first runs.

Where a gradient actually flows: Warp's ``Tape.backward`` (hooked in `hooks`, which the package's Tape calls) and the
PyTorch and JAX bridges call `warn_backward` for each kernel whose adjoint is about to run, once per kernel source
and process, at each finding's line. A kernel that no backward runs (warp.sparse's and warp.fem's assembly kernels
under ``config.zero_store = True``) has no wrong gradient to warn about, so it is never warned; and a build loaded
from Warp's cache is warned like a fresh one (the lints read the source, not generated code). The lints know each
local's type from the source (`lints.local_types`): an integer or bool local is warned only where its value
chooses elements or code (an index, a branch), never as a value. A component or field of a local assigned after
a use (`lints.UpdateAfterUse`) in the kernel's own body is warned only where its build did not make the assignment
exact (`local_copies`; the lines kept in the build's record, `replay_records.exact_lines`); in a helper it keeps
Warp's code, so it is always warned.

A hand-launched adjoint (``wp.launch(..., adjoint=True)``) is not warned: `messages` gives the findings there.
"""

from __future__ import annotations

import ast
import logging
import warnings

from .. import _compat, lints
from ..lints import local_types
from ..options import effective_zero_store
from . import replay_records
from .pre_twin import warn_replay_issues

_log = logging.getLogger(__name__)

_WARNED: set = set()  # (kernel key, source location) warned in this process


def messages(kernel) -> list:
    """``[(message, filename, line)]`` of the `AdjointWarning` s a ``zero_store=True`` kernel's backward gets
    (empty for other kernels, and for kernels built without a backward)."""
    if effective_zero_store(kernel) is not True or not _compat.kernel_has_backward(kernel):
        return []
    try:
        found = lints.find(_compat.kernel_tree(kernel), local_types.Typing(kernel), _helper_resolver(kernel))
    except (AttributeError, StopIteration, SyntaxError) as error:  # no source tree: nothing to look at
        _log.debug("kernel %s: no source tree to check for Warp's wrong adjoints (%s)", kernel, error)
        return []
    exact = replay_records.exact_lines(kernel) or set()  # unknown build: warned as if no line were exact
    found = [f for f in found if not (isinstance(f, lints.UpdateAfterUse) and not f.helper and f.line in exact)]
    location = _compat.kernel_source_location(kernel)
    filename, first = _compat.kernel_source_line(kernel)
    if first is None:  # no line in the file: lines of the kernel's own text, under a name that says so
        filename, first = f"<kernel '{_compat.kernel_key(kernel)}' built from source text, {filename}>", 1
    return [(f.message(_compat.kernel_key(kernel), location), filename, first + f.line - 1) for f in found]


def _helper_resolver(kernel):
    """How the lints find the ``@wp.func`` a call of the kernel names (``h(...)``, ``module.h(...)``): its name, its
    parsed source, file and first line, from the globals of the function that calls it; None for anything else."""

    def resolve(func, namespace=None):
        namespace = _compat.kernel_function(kernel).__globals__ if namespace is None else namespace
        path = []
        while isinstance(func, ast.Attribute):
            path.append(func.attr)
            func = func.value
        if not isinstance(func, ast.Name) or func.id not in namespace:
            return None
        obj = namespace[func.id]
        for attr in reversed(path):
            obj = getattr(obj, attr, None)
        helper = _compat.user_function(obj)
        overloads = _compat.function_overloads(helper) if helper is not None else []
        if len(overloads) != 1 or _compat.has_custom_replay(helper):
            # not a helper; several overloads (which one a call picks is decided by types at build); or a helper
            # whose @wp.func_replay the backward runs instead (Warp's remedy for a used atomic return)
            return None
        function = _compat.function_python(overloads[0])
        try:
            tree = ast.parse(_compat.function_source(function))
            filename, first = _compat.function_location(function)
        except (OSError, TypeError, SyntaxError):
            return None
        definition = next(n for n in ast.walk(tree) if isinstance(n, ast.FunctionDef))
        nested = lambda f: resolve(f, function.__globals__)  # noqa: E731 - a helper's calls: its own globals
        return function.__qualname__, definition, filename, first, nested

    return resolve


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
