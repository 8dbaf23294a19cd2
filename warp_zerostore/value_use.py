"""Whether a kernel's backward pass reads the value of what it loads: read from its Python source.

Warp's backward re-runs a kernel's loads and differentiates what it computed. A loaded value whose every use is
linear (added, subtracted, negated, scaled by a literal, cast, put into a vector, stored, accumulated) enters the
gradient through adjoints that never read it: if the array changes before ``backward()``, the gradient is the
same. Any other use (a product of two variables, a builtin such as ``wp.sin``, a comparison, a branch or loop
test, an index, a ``@wp.func`` call, a return) makes the value needed. The analysis is flow-insensitive and
conservative: a local is needed when any of its uses is, and whatever it does not know is needed.

A value stored into an array the function also loads from may come back through one of those loads (a flagged
kernel's replay forwards it there): it is needed when a load through that array is. So an in-place linear update
(``f[i] = f[i] - g``, ``f[i] = 0.5 * f[i] + g``: every spelling alike) reads no value of ``f``, while
``f[i] = f[i] * g`` does, and so does ``f[i] = f[i] + g`` followed by ``h = f[i] * f[i]``.

Its one user: `access` (``ArgumentAccess.value_read``), from which the Tape's check labels a stale read of an
argument whose loaded values no adjoint reads ``real=False``.
"""

from __future__ import annotations

import ast

from .builtin_facts import ACCUMULATING, LINEAR, STORING, call_name

#: builtins whose position-wise linearity this analysis handles itself: a selection's condition and a loop's bounds
#: are needed, an accumulation's index too (its value, from the third argument on, is not)
_SELECTIONS = frozenset({"select", "where"})
_CONTROL = frozenset({"range", "static"})
_ACCUMULATIONS = frozenset(name for name in ACCUMULATING if name in LINEAR)
#: linear in every argument: constructors, casts, sums
_LINEAR_CALLS = LINEAR - _SELECTIONS - _CONTROL - _ACCUMULATIONS
_NEEDED = (True, True)


def _constant(node, is_builtin) -> bool:
    """A literal, or a builtin (a cast, a constructor) of literals (``wp.float32(0.5)``)."""
    if isinstance(node, ast.Constant):
        return isinstance(node.value, (int, float))
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, (ast.USub, ast.UAdd)):
        return _constant(node.operand, is_builtin)
    return (
        isinstance(node, ast.Call)
        and (call_name(node) in _LINEAR_CALLS or is_builtin(node))
        and not node.keywords
        and all(_constant(a, is_builtin) for a in node.args)
    )


def _base_name(target) -> str | None:
    """``v`` of ``v``, ``v[0]``, ``v.x``, ``v[i][j]``; None for anything else."""
    while isinstance(target, (ast.Subscript, ast.Attribute)):
        target = target.value
    return target.id if isinstance(target, ast.Name) else None


class ValueUses:
    """The uses of values in one function's source: which locals are live (their value reaches a store, a test, an
    index, ...) and needed (their value is read by the backward pass), and whether one node's value is needed.

    A store through a parameter reads nothing unless the function also loads through it. ``is_builtin``: whether a call
    names one of Warp's builtins, a pure function whose adjoint reads its arguments (anything else, a user
    ``@wp.func`` or a name it cannot resolve, may do anything with a value: needed)."""

    def __init__(self, function: ast.AST, is_builtin=lambda call: False):
        definition = next((n for n in ast.walk(function) if isinstance(n, ast.FunctionDef)), None)
        arguments = definition.args if definition is not None else None
        every = [] if arguments is None else arguments.posonlyargs + arguments.args + arguments.kwonlyargs
        #: the parameters: arrays, structs holding arrays, or values; a store through one (``a[i] = v``,
        #: ``s.q[i] = v``) goes to memory, whatever its type
        self.parameters = frozenset(a.arg for a in every)
        self.unknown = definition is None  # nothing to read the parameters from: every value is needed
        parameters = self.parameters
        self.is_builtin = is_builtin
        self.parents: dict = {}
        for node in ast.walk(function):
            for child in ast.iter_child_nodes(node):
                self.parents[child] = node
        #: parameters the function loads from (a name used other than as a store's base): a value stored into one
        #: may come back through a load (a flagged kernel's replay forwards it there)
        self.read_back = frozenset(
            n.id
            for n in ast.walk(function)
            if isinstance(n, ast.Name) and n.id in parameters and not self._stored_into(n)
        )
        self.needed: set = set()
        self.live: set = set()
        #: parameters a needed value is loaded through: a value stored into one is needed (see read_back)
        self.loaded_needed: set = set()
        loads = [
            n
            for n in ast.walk(function)
            if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load) and n.id not in parameters
        ]
        parameter_loads = [
            n
            for n in ast.walk(function)
            if isinstance(n, ast.Name) and n.id in self.read_back and not self._stored_into(n)
        ]
        changed = True
        while changed:  # a local (a parameter's loads) is needed when one of its uses is: to a fixed point
            changed = False
            for name in loads:
                if name.id in self.needed:
                    continue
                needed, live = self._uses(name)
                if live and name.id not in self.live:
                    self.live.add(name.id)
                    changed = True
                if needed:
                    self.needed.add(name.id)
                    changed = True
            for name in parameter_loads:
                if name.id not in self.loaded_needed and self._uses(name)[0]:
                    self.loaded_needed.add(name.id)
                    changed = True

    def _stored_into(self, name) -> bool:
        """Is ``name`` the base of a store's target (``a[i] = v``, ``a[i].x += v``)?"""
        child = name
        while True:
            parent = self.parents.get(child)
            if isinstance(parent, (ast.Subscript, ast.Attribute)) and parent.value is child:
                if isinstance(parent.ctx, ast.Store):
                    return True
                child = parent
                continue
            if isinstance(parent, ast.Call) and parent.args and parent.args[0] is child:
                # wp.atomic_add(a, i, v): a store of its own; a[i] loaded as the first argument counts as a load
                return call_name(parent) in ACCUMULATING and child is name
            return False

    def is_needed(self, node) -> bool:
        """Does the backward pass read the value of ``node`` (an expression of this function)? Yes wherever the
        source has no function definition to read its parameters from."""
        return self.unknown or self._uses(node)[0]

    def _target(self, target, op, nonlinear: bool) -> tuple:
        """``(needed, live)`` of a value stored into ``target`` (``op``: an augmented assignment's operator)."""
        base = _base_name(target)
        if base is None:
            return _NEEDED
        if op is not None and not isinstance(op, (ast.Add, ast.Sub)):
            nonlinear = True  # `t *= v`: the product's adjoint reads v
        if base in self.parameters and not isinstance(target, ast.Name):
            # an array element: the store's (accumulation's) adjoint reads nothing; where the function loads from
            # the array too, the value may come back through a load, whose uses then decide
            return nonlinear or base in self.loaded_needed, True
        return base in self.needed or (nonlinear and base in self.live), base in self.live

    def _uses(self, node) -> tuple:
        """``(needed, live)`` of ``node``'s value: walks up its expression to the statement that uses it."""
        child, nonlinear = node, False
        while True:
            parent = self.parents.get(child)
            if parent is None:
                return _NEEDED
            if isinstance(parent, ast.BinOp):
                other = parent.right if child is parent.left else parent.left
                linear = isinstance(parent.op, (ast.Add, ast.Sub))
                linear |= isinstance(parent.op, ast.Mult) and _constant(other, self.is_builtin)
                linear |= (
                    isinstance(parent.op, ast.Div) and child is parent.left and _constant(parent.right, self.is_builtin)
                )
                nonlinear |= not linear
            elif isinstance(parent, ast.UnaryOp) and isinstance(parent.op, (ast.USub, ast.UAdd)):
                pass
            elif isinstance(parent, (ast.Subscript, ast.Attribute)) and parent.value is child:
                if isinstance(parent.ctx, ast.Store):
                    return False, False  # the base of a store (`v[0] = ...`): a definition, not a use
                # a component of the value (where ``child`` is the index instead, it is needed: below)
            elif isinstance(parent, ast.Call):
                name = call_name(parent)
                if child not in parent.args:
                    return _NEEDED  # the callee itself, or a keyword argument
                position = parent.args.index(child)
                if name in _LINEAR_CALLS or (name in _SELECTIONS and position > 0):
                    pass
                elif name in _ACCUMULATIONS and position >= 2:
                    into = _base_name(parent.args[0])
                    if into is None:
                        return _NEEDED
                    # accumulated into an array: its adjoint reads nothing, unless a load through it needs it
                    return nonlinear or into in self.loaded_needed, True
                elif name in _CONTROL or name in _SELECTIONS or name in STORING or name in ACCUMULATING:
                    return _NEEDED
                elif self.is_builtin(parent):
                    nonlinear = True  # a builtin: its adjoint reads its arguments, if its result is live
                else:
                    return _NEEDED  # a @wp.func, or a name not resolved: whatever it does with it
            elif isinstance(parent, ast.IfExp) and parent.test is not child:
                pass
            elif isinstance(parent, ast.Assign):
                return _NEEDED if len(parent.targets) != 1 else self._target(parent.targets[0], None, nonlinear)
            elif isinstance(parent, ast.AnnAssign):
                return self._target(parent.target, None, nonlinear)
            elif isinstance(parent, ast.AugAssign):
                return _NEEDED if child is parent.target else self._target(parent.target, parent.op, nonlinear)
            elif isinstance(parent, ast.Expr):
                return False, False  # a statement's value, discarded
            else:  # a comparison, a test, an index, a return, a tuple, ...: needed
                return _NEEDED
            child = parent


__all__ = ["ValueUses"]
