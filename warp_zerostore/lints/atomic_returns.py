"""Atomics whose returned value a flagged kernel uses, ``slot = wp.atomic_add(cursor, 0, 1)``, in its body or in a
``@wp.func`` helper it calls (docs/known-issues.md, "used-atomic-return").

Warp's backward pass replays a kernel's forward body without its atomics (``skip_replay``): there the value an
atomic returned is not the forward's, and whatever the backward computes from it (an index, an operand) is wrong.
Through a helper, Warp's replay runs the helper's forward code: stock Warp applies the atomic to memory a second
time (``cursor`` advances during ``backward()``), and a flagged kernel runs the helper's log variant
(`warp_zerostore.codegen.replay`), which writes no memory but returns the value the element holds after the
forward. Either way the returned value differs from the forward's. A discarded return (``wp.atomic_add(acc, 0,
v)`` as a statement, ``acc[i] += v``) is no use.

Which helper a call reaches is resolved by the caller (`find`'s ``resolve``), from the kernel's globals; a helper
it cannot resolve is not followed (no finding: the lint guesses nothing into a report it cannot name).
"""

from __future__ import annotations

import ast
import dataclasses
from typing import Callable, Optional

from ..builtin_facts import call_name, is_element_atomic


@dataclasses.dataclass(frozen=True)
class UsedAtomicReturn:
    """The value of ``wp.<name>`` is used: at ``line`` of the kernel's source, its own atomic or the call of the
    helper ``helper`` whose body (or a helper it calls) uses one, at ``atomic_at`` (``file:line``)."""

    name: str
    line: int
    helper: str = ""
    atomic_at: str = ""

    def message(self, kernel: str, location: str) -> str:
        if self.helper:
            where = (
                f"the @wp.func '{self.helper}' called at line {self.line} uses the value wp.{self.name} returns "
                f"({self.atomic_at}); Warp's backward runs the helper's forward code again (stock Warp "
                f"applies the atomic to memory a second time; zero_store=True writes no memory but returns the value "
                f"the element holds after the forward)"
            )
        else:
            where = (
                f"the value wp.{self.name} returns at line {self.line} is used; Warp's backward replays the kernel "
                f"without its atomics, so there the value is not the forward's"
            )
        return (
            f"kernel '{kernel}' ({location}): {where}, and the gradient through what is computed from it (an index, "
            f"an operand) is wrong (docs/known-issues.md). Keep the returned value in an array the kernel writes and "
            f"a @wp.func_replay reads back (Warp's remedy), or compute the index without an atomic."
        )


def _used_atomics(function: ast.FunctionDef) -> list:
    """``(name, line)`` of each atomic call whose value is used (any call not standing alone as a statement)."""
    standalone = {id(s.value) for s in ast.walk(function) if isinstance(s, ast.Expr)}
    return [
        (call_name(n), n.lineno)
        for n in ast.walk(function)
        if isinstance(n, ast.Call) and is_element_atomic(call_name(n)) and id(n) not in standalone
    ]


#: ``resolve(call.func)``: ``(helper name, its FunctionDef, its source file, its first line, the resolver of the
#: calls in its body)`` for a ``@wp.func``, else None
Resolve = Callable[[ast.expr], Optional[tuple]]


def find(function: ast.FunctionDef, resolve: Optional[Resolve] = None) -> list:
    """The `UsedAtomicReturn`s of a kernel's ``FunctionDef``: its own, then those of the helpers it calls.
    ``resolve(call.func)`` gives ``(helper name, its FunctionDef, its source file, its first line, the resolver
    of its own calls)`` for a ``@wp.func``, or None; helpers are followed through the helpers they call, each
    once."""
    found = [UsedAtomicReturn(name, line) for name, line in _used_atomics(function)]
    if resolve is None:
        return found
    for call in (n for n in ast.walk(function) if isinstance(n, ast.Call)):
        hit = _in_helper(call.func, resolve, set())
        if hit is not None:
            helper, name, line = hit
            found.append(UsedAtomicReturn(name, call.lineno, helper, line))
    return found


def _in_helper(func: ast.expr, resolve: Resolve, seen: set):
    """``(helper, atomic, "file:line")`` of the first used atomic return a call reaches, or None."""
    resolved = resolve(func)
    if resolved is None or resolved[0] in seen:
        return None
    name, tree, filename, first, nested = resolved
    seen.add(name)
    used = _used_atomics(tree)
    if used:
        atomic, line = used[0]
        return name, atomic, f"{filename}:{first + line - 1}"
    for call in (n for n in ast.walk(tree) if isinstance(n, ast.Call)):
        hit = _in_helper(call.func, nested, seen)
        if hit is not None:
            return name, hit[1], hit[2]
    return None
