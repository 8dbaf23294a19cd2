"""A construct whose adjoint Warp itself gets wrong, found in a flagged kernel's source (a kernel fuzzer finding
outside this package's store rewrite and replay log: docs/known-issues.md).

Warp keeps a local vector or matrix in one C++ variable that a component assignment mutates in place, and its
backward pass first replays the whole forward body: an earlier statement whose adjoint reads the variable then
sees its final value, not the one it used. So ``v = ...; y = wp.dot(v, v); v[0] = c`` (or ``v[0] += ...``,
``v.x = ...``) gives a wrong gradient, in stock Warp and with ``zero_store`` alike. Only whole uses whose adjoint
reads the value count: an argument of a call (not a constructor, cast, ``atomic_add`` or ``select``) or an
operand of a product. A component read (``v[0] * v[0]``) copies the value first and stays right, and so does a
sum (``v + w``), whose adjoint reads no value (both checked against central differences in tests/test_fuzz.py).

The fuzzer's other finding of this kind, a local assigned in a loop with a run-time bound and then read by an
adjoint that needs its value, is found by `loop_carried`; `find` returns both.
"""

from __future__ import annotations

import ast
import dataclasses

from . import loop_carried

__all__ = ["AdjointWarning", "Finding", "find"]


class AdjointWarning(UserWarning):
    """A flagged kernel uses a construct whose adjoint Warp itself gets wrong (docs/known-issues.md)."""


@dataclasses.dataclass(frozen=True)
class Finding:
    name: str  # the local vector or matrix
    line: int  # its component assignment, in the kernel's source (1 = the source's first line)
    use_line: int  # the earlier whole use whose adjoint reads the final value

    def message(self, kernel: str, location: str) -> str:
        return (
            f"kernel '{kernel}' ({location}): a component of the local '{self.name}' is assigned at line "
            f"{self.line} after '{self.name}' was used whole at line {self.use_line}; Warp's backward replays the "
            f"assignment first, so that use's adjoint reads the new value and the gradient is wrong (stock Warp "
            f"and zero_store alike; docs/known-issues.md). Assign the component on a copy (w = wp.vec3({self.name}), "
            f"or the matrix type), or before using '{self.name}'."
        )


# Calls whose adjoint does not read the value of an argument passed whole.
_LINEAR_CALLS = frozenset(
    {"vec2", "vec3", "vec4", "vector", "mat22", "mat33", "mat44", "matrix", "quat", "transform", "copy"}
    | {"vec2f", "vec3f", "vec4f", "vec2d", "vec3d", "vec4d", "float16", "float32", "float64", "neg", "add", "sub"}
    | {"atomic_add", "atomic_sub", "select", "where"}
)
_PRODUCTS = (ast.Mult, ast.Div, ast.Pow, ast.MatMult, ast.Mod, ast.FloorDiv)


def _call_name(node: ast.Call) -> str:
    func = node.func
    return func.attr if isinstance(func, ast.Attribute) else func.id if isinstance(func, ast.Name) else ""


def _value_uses(node: ast.AST) -> list:
    """``(name, line)`` of each name read whole where its value enters an adjoint: an argument of a call (other
    than the linear ones) or an operand of a product."""
    out = []
    for parent in ast.walk(node):
        operands = []
        if isinstance(parent, ast.Call) and _call_name(parent) not in _LINEAR_CALLS:
            operands = list(parent.args) + [k.value for k in parent.keywords]
        elif isinstance(parent, ast.BinOp) and isinstance(parent.op, _PRODUCTS):
            operands = [parent.left, parent.right]
        elif isinstance(parent, ast.AugAssign) and isinstance(parent.op, _PRODUCTS):
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


def find(tree: ast.AST) -> list:
    """The `Finding`s in a kernel's ``ast.Module`` (as Warp parsed it; array arguments are never locals), then
    `loop_carried`'s."""
    function = next(n for n in ast.walk(tree) if isinstance(n, ast.FunctionDef))
    arguments = {a.arg for a in function.args.args}
    found, used = [], {}  # local -> line of its first whole, value-reading use
    for stmt in _statements(function.body):
        if isinstance(stmt, (ast.Assign, ast.AugAssign)):
            for target in stmt.targets if isinstance(stmt, ast.Assign) else [stmt.target]:
                base = target.value if isinstance(target, (ast.Subscript, ast.Attribute)) else None
                if isinstance(base, ast.Name) and base.id not in arguments and base.id in used:
                    found.append(Finding(base.id, stmt.lineno, used[base.id]))
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
    return sorted(set(found), key=lambda f: (f.line, f.name)) + loop_carried.find(function)
