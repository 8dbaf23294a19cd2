"""A construct whose adjoint Warp itself gets wrong, found in a flagged kernel's source (a kernel fuzzer finding
outside this package's store rewrite and replay log: docs/known-issues.md).

Warp keeps a local vector or matrix in one C++ variable that a component assignment mutates in place, and its
backward pass first replays the whole forward body: an earlier statement whose adjoint reads the variable then
sees its final value, not the one it used. So ``v = ...; y = wp.dot(v, v); v[0] = c`` (or ``v[0] += ...``,
``v.x = ...``, ``s.a = ...`` on a struct) gives a wrong gradient in stock Warp. Only whole uses whose adjoint
reads the value count: an argument of a call (not a constructor, cast, ``atomic_add`` or ``select``) or an
operand of a product. A component read (``v[0] * v[0]``) copies the value first and stays right, and so does a
sum (``v + w``), whose adjoint reads no value (both checked against central differences in tests/test_fuzz.py).
A flagged kernel's code generation gives most of these assignments Warp's copy form
(`warp_zerostore.codegen.local_copies`), which makes them exact; `UpdateAfterUse` is a candidate, and
`warp_zerostore.codegen.hashing` warns about those of its lines the build did not make exact. Each says why it may
not be: inside a loop Warp does not unroll, a component of a field (``s.v.x``), or a type the copy form does not
cover.

Loops with ``break``/``continue``, which Warp does not unroll: its backward replays each iteration's forward code,
jump included, so a jump skips the adjoints of the statements before it in that iteration (``while ...: y[i] +=
x[i] * x[i]; if c: continue`` loses that iteration's gradient). A ``for`` loop's backward moreover runs every
iteration of its ``range`` in reverse, those after a ``break`` too, and stops at the first one (in reverse) whose
replay breaks: any ``break`` in a run-time ``for`` loop is wrong in general. A ``continue`` or a ``while``'s
``break`` that comes first in its iteration is right (``if k == 0: continue``), and so are statements that only
count (``w = w + 1``); Warp 1.13 and later unroll a constant-bound loop with ``continue`` but no ``break``,
which is then right too. (Each checked against central differences, tests/test_lints_adjoint_bugs.py.)

A ternary ``a if c else b``, whose gradient Warp <= 1.16 gets wrong where a side is an array element, is not found
here: flagged kernels get Warp 1.17's code for it (`warp_zerostore.codegen.backports`).

The fuzzer's other finding of this kind, a local assigned in a loop with a run-time bound and then read by an
adjoint that needs its value, is found by `loop_carried`; `find` returns both.
"""

from __future__ import annotations

import ast
import dataclasses

from ..builtin_facts import LINEAR, call_name
from . import atomic_returns, loop_carried

__all__ = ["AdjointWarning", "UpdateAfterUse", "JumpFinding", "find"]


class AdjointWarning(UserWarning):
    """A flagged kernel uses a construct whose adjoint Warp itself gets wrong (docs/known-issues.md)."""


@dataclasses.dataclass(frozen=True)
class UpdateAfterUse:
    """A candidate: warned only where the build did not make the assignment exact (`codegen.local_copies`)."""

    name: str  # the local vector, matrix or struct
    line: int  # its component assignment, in the kernel's source (1 = the source's first line)
    use_line: int  # the earlier whole use whose adjoint reads the final value
    field: bool = False  # a field of a struct local (s.a = ...), not a component (v[0] = ...)
    loop_line: int = 0  # the loop Warp does not unroll that holds the assignment (0: none)
    nested: bool = False  # a component of a field or of a component (s.v.x = ..., m[0][1] = ...)
    helper: str = ""  # in this @wp.func helper, called at ``line`` (its own lines: ``helper_at``, file:line)
    helper_at: str = ""

    def message(self, kernel: str, location: str) -> str:
        if self.helper:
            what = "field of the local struct" if self.field else "component of the local"
            return (
                f"kernel '{kernel}' ({location}): in the @wp.func '{self.helper}' called at line {self.line}, a "
                f"{what} '{self.name}' is assigned ({self.helper_at}) after '{self.name}' was used whole; Warp's "
                f"backward replays the assignment first, so that use's adjoint reads the new value and the gradient "
                f"is wrong. A helper keeps Warp's code (unflagged kernels share it), so zero_store=True does not make "
                f"it exact (docs/known-issues.md). Assign on a copy, or before the use."
            )
        if self.loop_line:
            why = f"it is inside the loop at line {self.loop_line}, which Warp does not unroll"
        elif self.nested:
            why = "it assigns a part of a field or of a component, which the copy form does not reach"
        else:
            why = "the local's type is not one the copy form covers (a vector, quaternion, matrix, transform or struct)"
        exact = (
            f"zero_store=True gives such an assignment Warp's copy form, which makes it exact, but not this one: "
            f"{why} (docs/known-issues.md)"
        )
        if self.field:
            return (
                f"kernel '{kernel}' ({location}): a field of the local struct '{self.name}' is assigned at line "
                f"{self.line} after '{self.name}' was used whole at line {self.use_line}; Warp's backward replays "
                f"the assignment first, so that use's adjoint reads the new value and the gradient is wrong. "
                f"{exact}. Assign the field before using '{self.name}', or keep the new value in a separate local "
                f"or a new struct."
            )
        return (
            f"kernel '{kernel}' ({location}): a component of the local '{self.name}' is assigned at line "
            f"{self.line} after '{self.name}' was used whole at line {self.use_line}; Warp's backward replays the "
            f"assignment first, so that use's adjoint reads the new value and the gradient is wrong. {exact}. "
            f"Assign the component on a copy (w = wp.vec3({self.name}), or the matrix type), or before using "
            f"'{self.name}'."
        )


@dataclasses.dataclass(frozen=True)
class JumpFinding:
    name: str  # "break" or "continue"
    line: int  # the jump, in the kernel's source
    use_line: int  # the first statement before it in its iteration whose adjoint it skips (0: a for loop's break)

    def message(self, kernel: str, location: str) -> str:
        if not self.use_line:  # a break in a for loop
            why = (
                f"the 'break' at line {self.line} ends a for loop whose backward Warp runs over every iteration of "
                f"its range in reverse, replaying the break: iterations after it get adjoints and those before it "
                f"may not"
            )
        else:
            why = (
                f"the '{self.name}' at line {self.line} comes after line {self.use_line} in the same loop iteration; "
                f"Warp's backward replays the jump too and skips the adjoints of the statements before it"
            )
        return (
            f"kernel '{kernel}' ({location}): {why}, so the gradient is wrong (stock Warp and zero_store alike; "
            f"docs/known-issues.md). Test the condition first in the iteration of a while loop, or set a flag and "
            f"guard the rest of the body with it instead of jumping."
        )


def _value_uses(node: ast.AST) -> list:
    """``(name, line)`` of each name read whole where its value enters an adjoint: an argument of a call (other
    than the linear ones) or an operand of a product."""
    out = []
    for parent in ast.walk(node):
        operands = []
        if isinstance(parent, ast.Call) and call_name(parent) not in LINEAR:
            operands = list(parent.args) + [k.value for k in parent.keywords]
        elif isinstance(parent, ast.BinOp) and isinstance(parent.op, loop_carried.PRODUCTS):
            operands = [parent.left, parent.right]
        elif isinstance(parent, ast.AugAssign) and isinstance(parent.op, loop_carried.PRODUCTS):
            operands = [parent.value]
        out += [(o.id, o.lineno) for o in operands if isinstance(o, ast.Name)]
    return out


def _statements(body: list) -> list:
    """Every statement, in source order (a compound statement before the ones inside it)."""
    out = []
    for stmt in body:
        out.append(stmt)
        for field in ("body", "orelse"):
            out += _statements(getattr(stmt, field, None) or [])
    return out


def find(tree: ast.AST, typing=None, resolve=None) -> list:
    """The `UpdateAfterUse`s and `JumpFinding`s in a kernel's ``ast.Module`` (as Warp parsed it), `loop_carried`'s
    (``typing``: the kernel's types from its source, `local_types.Typing`), and `atomic_returns`' (``resolve``: how
    a call names a ``@wp.func``, `atomic_returns.find`)."""
    function = next(n for n in ast.walk(tree) if isinstance(n, ast.FunctionDef))
    found = _component_findings(function) + _jump_findings(function) + loop_carried.find(function, typing)
    found += atomic_returns.find(function, resolve) + _helper_component_findings(function, resolve)
    return sorted(found, key=lambda f: (f.line, f.name))


def _is_field(target) -> bool:
    """``s.a = ...`` on a struct local (``v.x``..``v.w`` are a vector's components)."""
    return isinstance(target, ast.Attribute) and target.attr not in ("x", "y", "z", "w")


def _root(target) -> tuple:
    """``(name, depth)`` of the local a component or field assignment changes: ``v`` of ``v[0]`` (depth 1), ``s`` of
    ``s.v.x`` (depth 2); ``(None, 0)`` for anything else."""
    depth = 0
    while isinstance(target, (ast.Subscript, ast.Attribute)):
        target, depth = target.value, depth + 1
    return (target.id, depth) if isinstance(target, ast.Name) and depth else (None, 0)


def _dynamic_loop_lines(function: ast.FunctionDef) -> dict:
    """``{statement line: line of the innermost loop Warp does not unroll that holds it}``."""
    out = {}
    for loop in ast.walk(function):
        if isinstance(loop, (ast.For, ast.While)) and loop_carried.is_dynamic(loop):
            for stmt in _statements(loop.body):
                out[stmt.lineno] = max(out.get(stmt.lineno, 0), loop.lineno)
    return out


def _component_findings(function: ast.FunctionDef) -> list:
    """A component or field of a local assigned after the local was used whole; array arguments are never locals."""
    arguments = {a.arg for a in function.args.args}
    in_loop = _dynamic_loop_lines(function)
    found, used = [], {}  # local -> line of its first whole, value-reading use
    for stmt in _statements(function.body):
        if isinstance(stmt, (ast.Assign, ast.AugAssign)):
            for target in stmt.targets if isinstance(stmt, ast.Assign) else [stmt.target]:
                name, depth = _root(target)
                if name is not None and name not in arguments and name in used:
                    found.append(
                        UpdateAfterUse(
                            name,
                            stmt.lineno,
                            used[name],
                            _is_field(target) and depth == 1,
                            in_loop.get(stmt.lineno, 0),
                            depth > 1,
                        )
                    )
        # a compound statement's own expressions only: its body's statements come next in the list
        parts = (
            [stmt.iter]
            if isinstance(stmt, ast.For)
            else [stmt.test]
            if isinstance(stmt, (ast.While, ast.If))
            else [stmt]
        )
        for part in parts:
            for name, line in _value_uses(part):
                used.setdefault(name, line)
    return list(set(found))


def _helper_component_findings(function: ast.FunctionDef, resolve) -> list:
    """`_component_findings` of the ``@wp.func`` helpers a kernel calls (followed through the helpers they call,
    each once), each at the kernel's call: a helper keeps Warp's code, so none is exact."""
    found: list = []
    seen: set = set()

    def visit(tree, call_line: int, resolver) -> None:
        for call in (n for n in ast.walk(tree) if isinstance(n, ast.Call)):
            resolved = resolver(call.func) if resolver is not None else None
            if resolved is None or resolved[0] in seen:
                continue
            name, definition, filename, first, nested = resolved
            seen.add(name)
            line = call_line or call.lineno
            for f in _component_findings(definition):
                at = f"{filename}:{first + f.line - 1}"
                found.append(dataclasses.replace(f, line=line, use_line=0, helper=name, helper_at=at))
            visit(definition, line, nested)

    visit(function, 0, resolve)
    return found


def _jump_findings(function: ast.FunctionDef) -> list:
    """Each ``break`` of a ``for`` loop Warp does not unroll, and each other jump reached after a statement (other
    than a counter's step) of its iteration."""
    found = []
    for loop in ast.walk(function):
        if isinstance(loop, (ast.For, ast.While)) and loop_carried.is_dynamic(loop):
            for jump, before in loop_carried.own_jumps(loop.body):
                kind = type(jump).__name__.lower()
                effects = [s for s in before for s in _simple_statements(s) if not _is_counter_step(s)]
                if kind == "break" and isinstance(loop, ast.For):
                    found.append(JumpFinding(kind, jump.lineno, 0))
                elif effects:
                    found.append(JumpFinding(kind, jump.lineno, effects[0].lineno))
    return found


def _simple_statements(stmt: ast.stmt) -> list:
    if isinstance(stmt, (ast.If, ast.For, ast.While)):
        return [s for part in (stmt.body, stmt.orelse) for child in part for s in _simple_statements(child)]
    return [] if isinstance(stmt, (ast.Break, ast.Continue, ast.Pass)) else [stmt]


def _is_counter_step(stmt: ast.stmt) -> bool:
    """``w = w + 1``, ``w += 1``, ``w = int(...)``: integer bookkeeping, no adjoint to lose."""
    if isinstance(stmt, ast.AugAssign):
        return _is_int(stmt.value)
    if isinstance(stmt, ast.Assign) and len(stmt.targets) == 1 and isinstance(stmt.targets[0], ast.Name):
        value = stmt.value
        if isinstance(value, ast.Call) and call_name(value) == "int":
            return True
        return (
            isinstance(value, ast.BinOp)
            and isinstance(value.op, (ast.Add, ast.Sub))
            and isinstance(value.left, ast.Name)
            and value.left.id == stmt.targets[0].id
            and _is_int(value.right)
        )
    return False


def _is_int(node: ast.AST) -> bool:
    return isinstance(node, ast.Constant) and type(node.value) is int
