"""Whether a kernel's backward pass reads the value of what it loads: read from its Python source.

Warp's backward re-runs a kernel's loads and differentiates what it computed. A loaded value whose every use is
linear (added, subtracted, negated, scaled by a literal, cast, put into a vector, stored, accumulated, passed where
a builtin is linear in it: `builtin_facts`' ``linear_args`` and ``products``) enters the
gradient through adjoints that never read it: if the array changes before ``backward()``, the gradient is the
same. Any other use (a product of two variables, a builtin such as ``wp.sin``, a comparison, a branch or loop
test, an index, a ``@wp.func`` call, a return) makes the value needed. The analysis is flow-insensitive and
conservative: a local is needed when any of its uses is, and whatever it does not know is needed.

A value stored into an array the function also loads from may come back through one of those loads (a flagged
kernel's replay forwards it there): it is needed when a load through that array is. So an in-place linear update
(``f[i] = f[i] - g``, ``f[i] = 0.5 * f[i] + g``: every spelling alike) reads no value of ``f``, while
``f[i] = f[i] * g`` does, and so does ``f[i] = f[i] + g`` followed by ``h = f[i] * f[i]``.

`ValueUses.readers` goes one step further: the roots (parameters, struct paths ``"s.q"``) whose adjoints read a
needed value (the other factor of a product, the arguments of a builtin; None where an index, a branch or a helper
may reach any gradient), with `ValueUses.sources` saying where each operand's gradient goes. The launch decides
the rest: a value read only by adjoints of arrays that have no gradient at that launch changes no gradient.

Its one user: `access` (``ArgumentAccess.value_read``, ``value_readers``), from which the Tape's check labels a
stale read of an argument whose loaded values no adjoint reads, or only adjoints of arrays without a gradient,
``real=False``.
"""

from __future__ import annotations

import ast

from .builtin_facts import ACCUMULATING, LINEAR, LINEAR_ARGS, PRODUCTS, STORING, call_name

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
        #: parameters a load may read after a store into them (a store's statement before a load's, or both in
        #: one loop): a value stored into one may come back through that load (a flagged kernel's replay forwards
        #: it there). A parameter loaded only before its stores (``x[i] = x[i] + 1.0``) is not read back.
        loads: dict = {}
        stores: dict = {}
        for n in ast.walk(function):
            if isinstance(n, ast.Name) and n.id in parameters:
                (stores if self._stored_into(n) else loads).setdefault(n.id, []).append(n)
        self.read_back = frozenset(
            name
            for name, found in loads.items()
            if any(self._may_follow(load, store) for load in found for store in stores.get(name, ()))
        )
        self.needed: set = set()
        self.live: set = set()
        #: parameters a needed value is loaded through: a value stored into one is needed (see read_back)
        self.loaded_needed: set = set()
        self._function = function
        self._sources: dict | None = None  # local -> roots its value comes from (`sources`), made when first asked
        self._readers: dict | None = None  # local -> roots whose adjoints read its value (`readers`)
        loads = [
            n
            for n in ast.walk(function)
            if isinstance(n, ast.Name) and not isinstance(getattr(n, "ctx", None), ast.Store) and n.id not in parameters
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

    def _statement(self, node):
        """The statement ``node`` is part of."""
        while not isinstance(node, ast.stmt) and node in self.parents:
            node = self.parents[node]
        return node

    def _loops(self, node) -> set:
        """The loops around ``node``."""
        found = set()
        while node in self.parents:
            node = self.parents[node]
            if isinstance(node, (ast.For, ast.While)):
                found.add(id(node))
        return found

    def _may_follow(self, load, store) -> bool:
        """Whether ``load`` may run after ``store``: a later statement (within one statement, the value is loaded
        before the target is stored), or both inside one loop."""
        before, after = self._statement(store), self._statement(load)
        if before is not after and (before.lineno, before.col_offset) < (after.lineno, after.col_offset):
            return True
        return bool(self._loops(load) & self._loops(store))

    def _stored_into(self, name) -> bool:
        """Is ``name`` the base of a store's target (``a[i] = v``, ``a[i].x += v``)?"""
        child = name
        while True:
            parent = self.parents.get(child)
            if isinstance(parent, (ast.Subscript, ast.Attribute)) and parent.value is child:
                if isinstance(getattr(parent, "ctx", None), ast.Store):
                    return True
                child = parent
                continue
            if isinstance(parent, ast.Call) and parent.args and parent.args[0] is child:
                # wp.atomic_add(a, i, v), wp.tile_store(a, t): a store of its own; a[i] loaded as the first
                # argument counts as a load
                return (call_name(parent) in ACCUMULATING or call_name(parent) in STORING) and child is name
            return False

    def is_needed(self, node) -> bool:
        """Does the backward pass read the value of ``node`` (an expression of this function)? Yes wherever the
        source has no function definition to read its parameters from."""
        return self.unknown or self._uses(node)[0]

    # -- whose gradient reads a value: a launch-time fact needs the source's part of it

    def sources(self, expr) -> frozenset:
        """The roots ``expr``'s value comes from, where a gradient could go: parameters (``"x"``) and the paths of
        what struct parameters hold (``"s.q"``), through locals (every assignment, flow-insensitive). An index, a
        comparison or a branch's test passes no gradient, so what they read is not a source."""
        if self._sources is None:
            self._sources = self._local_sources()
        return self._expr_sources(expr, self._sources)

    def _expr_sources(self, expr, local: dict) -> frozenset:
        if expr is None or isinstance(expr, (ast.Constant, ast.Compare, ast.BoolOp)):
            return frozenset()
        if isinstance(expr, ast.Name):
            if expr.id in self.parameters:
                return frozenset((expr.id,))
            return frozenset(local.get(expr.id, ()))
        if isinstance(expr, ast.Attribute):
            path, base = [], expr
            while isinstance(base, ast.Attribute):
                path.append(base.attr)
                base = base.value
            if isinstance(base, ast.Name) and base.id in self.parameters:
                return frozenset((".".join((base.id, *reversed(path))),))
            return self._expr_sources(base, local)
        if isinstance(expr, ast.Subscript):
            return self._expr_sources(expr.value, local)
        if isinstance(expr, ast.IfExp):
            return self._expr_sources(expr.body, local) | self._expr_sources(expr.orelse, local)
        if isinstance(expr, ast.Call):
            parts = list(expr.args) + [k.value for k in expr.keywords]
            return frozenset().union(*(self._expr_sources(p, local) for p in parts))
        return frozenset().union(*(self._expr_sources(c, local) for c in ast.iter_child_nodes(expr)))

    def _local_sources(self) -> dict:
        """``{local: roots}``, to a fixed point over every assignment."""
        bindings = []
        for node in ast.walk(self._function):
            if isinstance(node, ast.Assign):
                bindings.extend((t, node.value) for t in node.targets)
            elif isinstance(node, (ast.AnnAssign, ast.AugAssign)) and node.value is not None:
                bindings.append((node.target, node.value))
            elif isinstance(node, ast.For):
                bindings.append((node.target, node.iter))
        local: dict = {}
        changed = True
        while changed:
            changed = False
            for target, value in bindings:
                found = self._expr_sources(value, local)
                for name in [n.id for n in ast.walk(target) if isinstance(n, ast.Name)]:
                    if name in self.parameters and isinstance(target, ast.Name):
                        continue
                    if not found <= local.setdefault(name, set()):
                        local[name] |= found
                        changed = True
        return local

    def readers(self, node) -> frozenset | None:
        """The roots whose adjoints read ``node``'s value (`sources` of its partners in products, of the arguments
        of a builtin it is passed to, ...): a wrong value there reaches only their gradients. None: any gradient,
        or the analysis cannot tell (an index, a branch, a helper, ...)."""
        if self.unknown:
            return None
        if self._readers is None:
            self._readers = self._local_readers()
        return self._node_readers(node, self._readers)

    def _local_readers(self) -> dict:
        """``{local: roots or None}`` whose adjoints read the local's value, to a fixed point over its loads."""
        loads: dict = {}
        for n in ast.walk(self._function):
            if isinstance(n, ast.Name) and not isinstance(getattr(n, "ctx", None), ast.Store):
                if n.id not in self.parameters:
                    loads.setdefault(n.id, []).append(n)
        found: dict = {name: frozenset() for name in loads}
        changed = True
        while changed:
            changed = False
            for name, uses in loads.items():
                if found[name] is None:
                    continue
                mine: frozenset | None = found[name]
                for use in uses:
                    more = self._node_readers(use, found)
                    mine = None if more is None else mine | more
                    if mine is None:
                        break
                if mine != found[name]:
                    found[name] = mine
                    changed = True
        return found

    def _node_readers(self, node, local_readers: dict) -> frozenset | None:
        child, found = node, set()
        sources = self.sources
        while True:
            parent = self.parents.get(child)
            if parent is None:
                return None
            if isinstance(parent, ast.BinOp):
                other = parent.right if child is parent.left else parent.left
                if isinstance(parent.op, (ast.Mult, ast.MatMult)):
                    if not _constant(other, self.is_builtin):
                        found |= sources(other)  # the other factor's adjoint reads this value
                elif isinstance(parent.op, ast.Div):
                    if child is parent.left:
                        if not _constant(parent.right, self.is_builtin):
                            found |= sources(parent.right)
                    else:  # a divisor: both adjoints read it
                        found |= sources(parent.left) | sources(child)
                elif not isinstance(parent.op, (ast.Add, ast.Sub)):
                    found |= sources(parent.left) | sources(parent.right)
            elif isinstance(parent, ast.UnaryOp) and isinstance(parent.op, (ast.USub, ast.UAdd)):
                pass
            elif isinstance(parent, (ast.Subscript, ast.Attribute)) and parent.value is child:
                if isinstance(getattr(parent, "ctx", None), ast.Store):
                    return frozenset()
            elif isinstance(parent, ast.Call):
                name = call_name(parent)
                if child not in parent.args:
                    return None
                position = parent.args.index(child)
                if name in _LINEAR_CALLS or (name in _SELECTIONS and position > 0):
                    pass
                elif name in _ACCUMULATIONS and position >= 2:
                    into = _base_name(parent.args[0])
                    return None if into is None or into in self.read_back else frozenset(found)
                elif name in _CONTROL or name in _SELECTIONS or name in STORING or name in ACCUMULATING:
                    return None
                elif self.is_builtin(parent):
                    for arg in list(parent.args) + [k.value for k in parent.keywords]:
                        found |= sources(arg)  # a builtin's adjoint reads its arguments for each of them
                else:
                    return None
            elif isinstance(parent, ast.IfExp) and parent.test is not child:
                pass
            elif isinstance(parent, (ast.Assign, ast.AnnAssign)):
                target = parent.targets[0] if isinstance(parent, ast.Assign) and len(parent.targets) == 1 else None
                target = parent.target if isinstance(parent, ast.AnnAssign) else target
                return self._stored_readers(target, found, local_readers)
            elif isinstance(parent, ast.AugAssign):
                if child is parent.target:
                    return None
                if not isinstance(parent.op, (ast.Add, ast.Sub)):
                    found |= sources(parent.target)  # `t *= v`: t's adjoint reads v
                return self._stored_readers(parent.target, found, local_readers)
            elif isinstance(parent, ast.Expr):
                return frozenset()
            else:
                return None
            child = parent

    def _stored_readers(self, target, found: set, local_readers: dict) -> frozenset | None:
        """`readers` of a value stored into ``target``: what the way there read, and what reads the local after."""
        base = _base_name(target) if target is not None else None
        if base is None:
            return None
        if base in self.parameters and not isinstance(target, ast.Name):
            return None if base in self.read_back else frozenset(found)  # an array element (see read_back)
        if base not in self.live:
            return frozenset()  # no adjoint reaches a value nothing uses
        later = local_readers.get(base, frozenset())
        return None if later is None else frozenset(found) | later

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
                if isinstance(getattr(parent, "ctx", None), ast.Store):
                    return False, False  # the base of a store (`v[0] = ...`): a definition, not a use
                # a component of the value (where ``child`` is the index instead, it is needed: below)
            elif isinstance(parent, ast.Call):
                name = call_name(parent)
                if child not in parent.args:
                    return _NEEDED  # the callee itself, or a keyword argument
                position = parent.args.index(child)
                if name in _LINEAR_CALLS or (name in _SELECTIONS and position > 0):
                    pass
                elif position in LINEAR_ARGS.get(name, ()):
                    if name in STORING:  # the tile a tile store writes: like `a[i] = v`
                        into = _base_name(parent.args[0])
                        return _NEEDED if into is None or into in self.read_back else (nonlinear, True)
                elif position in PRODUCTS.get(name, ()):
                    others = [parent.args[p] for p in PRODUCTS[name] if p != position and p < len(parent.args)]
                    nonlinear |= not all(_constant(other, self.is_builtin) for other in others)
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
                # a call as a statement acts in place (wp.tile_fft(t)): where it uses the value nonlinearly, its
                # adjoint reads it; else the value is discarded
                return nonlinear, False
            else:  # a comparison, a test, an index, a return, a tuple, ...: needed
                return _NEEDED
            child = parent


__all__ = ["ValueUses"]
