"""Does a kernel's choice of elements depend on the values it reads? Read from its Python source.

The read twin marks which elements of each array a launch reads and writes. When no branch, loop bound, index
or short-circuit test depends on a value loaded from an array (directly, through locals, an atomic's return
value or a builtin that reads an array), those marks are a function of the launch alone: its shape, its
non-array arguments and its arrays' shapes and aliasing. The Tape then reuses the marks of an earlier
launch with the same key instead of running the twin again (`read_twin.element_reads`).

The analysis is conservative: a call passing an array to a user ``@wp.func`` (which may branch on what it
loads), a name bound from an array (a row view ``row = x[w]``) used in a test, or anything it cannot follow
makes the marks data dependent, and the twin runs at every launch as before.
"""

from __future__ import annotations

import ast

from ..access import resolve_helper
from ..builtin_facts import call_name, is_element_atomic


class _Taint:
    """Names whose values may come from array contents, found to a fixed point (flow-insensitive)."""

    def __init__(self, function: ast.FunctionDef, arrays: set, namespace: dict):
        self.arrays = set(arrays)  # array arguments and names bound from them (views, rows)
        self.namespace = namespace
        self.tainted: set = set()
        changed = True
        while changed:
            changed = False
            for node in ast.walk(function):
                targets, value = self._binding(node)
                if value is None or not self.expression(value):
                    continue
                for name in self._bound_names(targets):
                    if name not in self.tainted:
                        self.tainted.add(name)
                        changed = True
                        if isinstance(value, ast.Subscript):  # may be a view of the array: an array too
                            self.arrays.add(name)

    @staticmethod
    def _binding(node):
        if isinstance(node, ast.Assign):
            return node.targets, node.value
        if isinstance(node, (ast.AugAssign, ast.AnnAssign)):
            return [node.target], node.value
        if isinstance(node, ast.For):
            return [node.target], node.iter
        if isinstance(node, ast.NamedExpr):
            return [node.target], node.value
        return [], None

    def _bound_names(self, targets) -> list:
        """The locals an assignment gives a new value: ``a``, ``a, b``, and ``v`` of ``v[0] = ...`` or ``v.x = ...``
        (a store into an array argument taints nothing: every load from an array is tainted already)."""
        out = []
        for target in targets:
            while isinstance(target, (ast.Subscript, ast.Attribute)):
                target = target.value
            if isinstance(target, (ast.Tuple, ast.List)):
                out.extend(self._bound_names(target.elts))
            elif isinstance(target, ast.Name) and target.id not in self.arrays:
                out.append(target.id)
        return out

    def passes_array(self, call: ast.Call) -> bool:
        return any(
            isinstance(arg, ast.Name) and arg.id in self.arrays
            for arg in list(call.args) + [k.value for k in call.keywords]
        )

    def expression(self, expr) -> bool:
        """May ``expr``'s value depend on array contents?"""
        for node in ast.walk(expr):
            if isinstance(node, ast.Name) and node.id in self.tainted:
                return True
            if isinstance(node, ast.Subscript) and isinstance(node.value, ast.Name) and node.value.id in self.arrays:
                return True  # a load (or a view, whose later loads are then loads)
            if isinstance(node, ast.Call) and self.passes_array(node):
                return True  # atomics return the old value; other builtins read what they are given
        return False


def marks_depend_on_data(function: ast.FunctionDef, arrays: set, namespace: dict) -> bool:
    """True unless the elements ``function`` (a kernel's parsed source) reads and writes of the arrays named
    ``arrays`` follow from its launch shape, non-array arguments and array shapes alone."""
    taint = _Taint(function, arrays, namespace)
    for node in ast.walk(function):
        if isinstance(node, (ast.If, ast.While, ast.IfExp)) and taint.expression(node.test):
            return True
        if isinstance(node, ast.For) and taint.expression(node.iter):
            return True
        if isinstance(node, ast.BoolOp) and any(taint.expression(value) for value in node.values):
            return True  # short-circuit: whether the right side's loads run
        if isinstance(node, ast.Subscript) and taint.expression(node.slice):
            return True
        if isinstance(node, ast.Call) and taint.passes_array(node):
            if resolve_helper(node, taint.namespace) is not None:
                return True  # a helper given an array may branch on what it loads there
            arguments = [a for a in node.args if not (isinstance(a, ast.Name) and a.id in taint.arrays)]
            if is_element_atomic(call_name(node)) and arguments:
                arguments = arguments[:-1]  # the value accumulated does not choose the element
            if any(taint.expression(a) for a in arguments + [k.value for k in node.keywords]):
                return True
    return False
