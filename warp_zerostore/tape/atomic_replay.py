"""Atomics whose returned value a recorded kernel uses, as the Tape names them (hazard kind ``"atomic replay"``).

``slot = wp.atomic_add(cursor, 0, 1); active[slot] = r``: Warp's backward runs a kernel's forward code again to
rebuild its locals, without the kernel's own atomics (``skip_replay``), so there the value an atomic returned is not
the forward's and whatever is computed from it (an index, an operand) gets a wrong gradient. Through a
``@wp.func`` helper the atomic is in the helper's forward code, which the backward runs whole: stock Warp applies
the atomic to memory again (``cursor`` advances during ``backward()`` and the forward state changes), and a
``zero_store=True`` kernel's replay runs the helper's log variant, which writes no memory but returns the value the
element holds after the forward. A discarded return (``wp.atomic_add(acc, 0, v)`` as a statement, ``acc[i] +=
v``) is no use and never named.

Which atomics: `warp_zerostore.lints.atomic_returns` reads the kernel's source and the helpers it calls (resolved
from the kernel's names, each to the depth the lint follows); a helper it cannot resolve is not followed, nor one
with a ``@wp.func_replay`` (Warp's remedy: the backward runs the replay function, which reads the values back). A
fact from the source, used only to report: it changes no gradient.
"""

from __future__ import annotations

import ast
import dataclasses

from .. import _compat
from ..access import called
from ..builtin_facts import call_name, is_element_atomic
from ..lints import atomic_returns
from ..options import effective_zero_store


@dataclasses.dataclass(frozen=True)
class UsedAtomic:
    """One atomic whose returned value a kernel uses: in its body, or in the ``@wp.func`` ``helper`` it calls.

    Attributes:
        atomic: The builtin (``"atomic_add"``).
        array: The array as the atomic's call names it (``"cursor"``).
        at: ``file:line`` of the atomic.
        helper: The helper that holds it ("" in the kernel's body).
        called_at: ``file:line`` of the kernel's call of ``helper``.
    """

    atomic: str
    array: str
    at: str
    helper: str = ""
    called_at: str = ""


def used_atomics(kernel) -> tuple:
    """The `UsedAtomic` s of ``kernel`` (its body's, then its helpers'), worked out once per kernel and kept on it
    (`_compat.memo`: gone with the kernel)."""
    facts = _compat.memo(kernel)
    found = facts.get("atomic_replay.used")
    if found is None:
        found = facts["atomic_replay.used"] = _find(kernel)
    return found


def reruns(kernel) -> bool:
    """Does the kernel's backward apply a helper's atomic to memory again? Stock Warp's does (it runs the helper's
    forward code); a ``zero_store=True`` kernel's replay runs a variant that writes no memory."""
    return effective_zero_store(kernel) is not True


def _find(kernel) -> tuple:
    try:
        tree = _compat.kernel_tree(kernel)
        function = next(n for n in ast.walk(tree) if isinstance(n, ast.FunctionDef))
    except (AttributeError, StopIteration):  # no source tree (a kernel made without Python source): nothing named
        return ()
    filename, first = _compat.kernel_source_line(kernel)
    if first is None:  # a kernel built from source text (warp.fem's overloads): lines of that text, named so
        filename, first = f"<kernel '{_compat.kernel_key(kernel)}' built from source text, {filename}>", 1
    helpers: dict = {}  # helper name -> (its FunctionDef, file, first line), as resolved
    resolve = _resolver(_compat.function_namespace(_compat.kernel_function(kernel)), helpers)
    found = []
    for finding in atomic_returns.find(function, resolve):
        line = int(first) + finding.line - 1
        if not finding.helper:
            array = _target(function, finding.line)
            found.append(UsedAtomic(finding.name, array, f"{filename}:{line}"))
            continue
        definition, helper_file, helper_first = helpers[finding.helper]
        atomic_line = int(finding.atomic_at.rsplit(":", 1)[1])
        array = _target(definition, atomic_line - helper_first + 1)
        found.append(UsedAtomic(finding.name, array, finding.atomic_at, finding.helper, f"{filename}:{line}"))
    return tuple(found)


def _resolver(namespace: dict, helpers: dict):
    """The lint's ``resolve``: a call's ``@wp.func`` as ``(name, FunctionDef, file, first line, resolver of its own
    calls)``, from ``namespace``; None for builtins and anything without source."""

    def resolve(func: ast.expr):
        function = _compat.user_function(called(ast.Call(func=func, args=[], keywords=[]), namespace))
        if function is None or _compat.has_custom_replay(function):
            return None  # a builtin, or a helper whose @wp.func_replay the backward runs instead (Warp's remedy)
        python = _compat.function_python(function)
        try:
            definition = next(
                n for n in ast.walk(ast.parse(_compat.function_source(python))) if isinstance(n, ast.FunctionDef)
            )
            filename, first = _compat.function_location(python)
        except (OSError, TypeError, SyntaxError, StopIteration):
            return None
        name = python.__qualname__
        helpers[name] = (definition, filename, first)
        return name, definition, filename, first, _resolver(_compat.function_namespace(python), helpers)

    return resolve


def _target(function: ast.FunctionDef, line: int) -> str:
    """The array an atomic at ``line`` (of ``function``'s source) writes, as its call names it."""
    for node in ast.walk(function):
        if isinstance(node, ast.Call) and node.lineno == line and is_element_atomic(call_name(node)) and node.args:
            return ast.unparse(node.args[0])
    return "?"


__all__ = ["UsedAtomic", "reruns", "used_atomics"]
