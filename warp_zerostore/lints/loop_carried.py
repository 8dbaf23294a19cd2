"""Locals whose value Warp's backward pass gets wrong around a loop with a run-time bound (a fuzzer finding:
docs/known-issues.md, "runtime-loop-carried-local").

The forward sweep of Warp's backward kernel skips the body of a dynamic loop (a ``while``, or a ``for`` whose
``range`` is not a constant of at most ``max_unroll`` iterations); its reverse sweep then replays each iteration,
last first, from the value the locals had before the loop. So after the loop, every local the body assigned
holds its value from before the loop, and inside it a local carried from one iteration to the next (``s = s *
x[k]``, ``s += ...``) holds the wrong iteration's value. A gradient is wrong where an adjoint reads such a value:
an operand of a product, an argument of a call that is not linear, an index, or a test (the backward takes the
other branch). Uses whose adjoint reads no value stay right: ``s += x[k]`` then ``y[0] = s`` or ``s + t``
(checked against central differences in tests/test_lints_loop_carried.py, as is each warned pattern). A
component or field assigned in the loop (``v[0] += e``, ``s.a = e``: the fuzzer's struct campaigns) makes the
whole local wrong after it, as a reassignment does; a read of another component is then warned too (conservative).

The check follows the statements in source order with the set of locals whose value is wrong at each point: a
plain reassignment from right values makes a local right again (``t = x[k] * x[k]`` at the top of the body).

A local whose values carry no gradient (an integer or a bool, by its type from the source: `local_types`) changes
a gradient only where its wrong value chooses elements or code (an index, a branch's test, a loop bound) or enters
a float value an adjoint reads (``x * float(c)``, a helper returning a float). Its other uses (an integer argument
of a helper that returns integers, integer arithmetic, a comparison) are not warned.
"""

from __future__ import annotations

import ast
import dataclasses
import re

from .. import _compat
from ..builtin_facts import LINEAR, call_name

#: Warp unrolls a constant ``range`` of up to this many iterations (its ``max_unroll`` default); a longer one is a
#: dynamic loop. A module option can change it: the check assumes the default.
MAX_UNROLL = 16


PRODUCTS = (ast.Mult, ast.Div, ast.Pow, ast.MatMult, ast.Mod, ast.FloorDiv)


@dataclasses.dataclass(frozen=True)
class CarriedRead:
    name: str  # the local
    line: int  # the use whose adjoint reads the wrong value (1 = the source's first line)
    loop_line: int  # the dynamic loop

    def message(self, kernel: str, location: str) -> str:
        return (
            f"kernel '{kernel}' ({location}): the adjoint of line {self.line} reads '{self.name}', which the loop "
            f"with a run-time bound at line {self.loop_line} assigns; Warp's backward pass does not replay that "
            f"loop's values there, so the gradient is wrong (stock Warp and zero_store alike; docs/known-issues.md). "
            f"Use '{self.name}' only in sums and stores after such a loop, give the loop a constant bound "
            f"(at most {MAX_UNROLL} iterations: unrolled), or move the work into a @wp.func with a @wp.func_grad."
        )


def own_jumps(body: list, before: list = ()):
    """``(jump, statements run before it in its iteration)`` for the ``break``/``continue`` statements of the loop
    whose body is ``body`` (directly or inside an ``if``; not those of nested loops)."""
    seen = list(before)
    for stmt in body:
        if isinstance(stmt, (ast.Break, ast.Continue)):
            yield stmt, seen
        elif isinstance(stmt, ast.If):
            yield from own_jumps(stmt.body, seen)
            yield from own_jumps(stmt.orelse, seen)
        seen = seen + [stmt]


def is_dynamic(loop) -> bool:
    """Whether Warp runs ``loop`` as a loop rather than unrolling it: a ``while``, a ``range`` that is not of
    integer constants or is longer than `MAX_UNROLL`, or a loop with a ``break`` (before 1.13, a ``continue``)."""
    if isinstance(loop, ast.While):
        return True
    early = (ast.Break,) if _compat.UNROLLS_LOOPS_WITH_CONTINUE else (ast.Break, ast.Continue)
    if any(isinstance(jump, early) for jump, _ in own_jumps(loop.body)):
        return True  # Warp does not unroll a loop it could leave early
    it = loop.iter
    if not (isinstance(it, ast.Call) and call_name(it) == "range"):
        return True
    bounds = []
    for arg in it.args:
        value = arg.operand if isinstance(arg, ast.UnaryOp) and isinstance(arg.op, ast.USub) else arg
        if not (isinstance(value, ast.Constant) and isinstance(value.value, int)):
            return True  # a run-time bound (wp.static(...) or module constants: taken as dynamic, conservative)
        bounds.append(-value.value if value is not arg else value.value)
    return len(range(*bounds)) > MAX_UNROLL


def _assigned(body: list) -> set:
    """Names any statement in ``body`` (nested ones included) binds or changes in part: a component or a field
    assigned (``v[0] = e``, ``s.a += e``) changes the local ``v``, ``s`` (and a store ``y[i] = e`` names the array
    ``y``: the caller leaves arrays out)."""
    out = set()
    for stmt in body:
        for node in ast.walk(stmt):
            if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
                out.add(node.id)
            elif isinstance(node, (ast.Subscript, ast.Attribute)) and isinstance(node.ctx, ast.Store):
                base = node.value
                while isinstance(base, (ast.Subscript, ast.Attribute)):
                    base = base.value
                if isinstance(base, ast.Name):
                    out.add(base.id)
    return out


def _value_uses(
    expr,
    names: set,
    constants: set,
    tests_right: frozenset = frozenset(),
    stale: frozenset = frozenset(),
    integer_arrays: frozenset = frozenset(),
) -> list:
    """``(name, line, use, site, call)`` of each of ``names`` in ``expr`` where an adjoint reads its value (``use``:
    ``"index"``, ``"branch"`` (a ternary's test, a loop bound) or ``"value"``, with ``site`` the expression whose
    value it enters: the call it is an argument of (``call`` True), the operand of a product it is in, the
    comparison); ``constants``: names
    whose gradient is never used, the kernel's scalar arguments: a product with one is linear; ``tests_right``:
    names whose comparisons and ternary tests the backward replays right; ``stale``: names whose variable, not
    value, is wrong (a ``while`` iteration reassigns them later: only an adjoint reading the variable itself, a bare
    operand or index, sees it; ``integer_arrays``: arrays of integers, whose elements carry no gradient, so an
    index into them is no value use)."""
    out = []
    for parent in ast.walk(expr):
        if (
            isinstance(parent, ast.Subscript)
            and isinstance(parent.value, ast.Name)
            and parent.value.id in integer_arrays
        ):
            continue
        operands, use = [], "value"
        if isinstance(parent, ast.Call) and call_name(parent) == "range":
            operands, use = list(parent.args), "branch"  # a loop bound: how many iterations run
        elif isinstance(parent, ast.Call) and call_name(parent) not in LINEAR:
            operands = list(parent.args) + [k.value for k in parent.keywords]
        elif isinstance(parent, ast.BinOp) and isinstance(parent.op, (ast.Mult, ast.MatMult)):
            # a * c reads a only for c's adjoint: none is needed when c is a constant
            operands = [
                o
                for o, other in ((parent.left, parent.right), (parent.right, parent.left))
                if not _constant(other, constants)
            ]
        elif isinstance(parent, ast.BinOp) and isinstance(parent.op, ast.Div):
            operands = [parent.right] + ([] if _constant(parent.right, constants) else [parent.left])
        elif isinstance(parent, ast.BinOp) and isinstance(parent.op, PRODUCTS):
            operands = [parent.left, parent.right]
        elif isinstance(parent, ast.Subscript):
            # an index: the adjoint goes to another element
            operands = list(parent.slice.elts) if isinstance(parent.slice, ast.Tuple) else [parent.slice]
            use = "index"
        elif isinstance(parent, (ast.IfExp, ast.Compare)):
            operands = [parent.test] if isinstance(parent, ast.IfExp) else [parent.left, *parent.comparators]
            use = "branch" if isinstance(parent, ast.IfExp) else "value"
            names_here = names - tests_right
            for operand in operands:
                out.extend(
                    (n.id, n.lineno, use, parent, False)
                    for n in ast.walk(operand)
                    if isinstance(n, ast.Name) and n.id in names_here
                )
            continue
        call = isinstance(parent, ast.Call)
        for operand in operands:
            site = parent if call else operand
            for node in ast.walk(operand):
                if isinstance(node, ast.Name) and node.id in names and (node is operand or node.id not in stale):
                    out.append((node.id, node.lineno, use, site, call))
    return out


def _constant(expr, constants: set) -> bool:
    """An expression of literals, ``constants`` and calls of them only (no load, no local)."""
    callees = set()
    for node in ast.walk(expr):
        if isinstance(node, ast.Call):
            func = node.func
            while isinstance(func, ast.Attribute):
                func = func.value
            callees.add(id(func))
    for node in ast.walk(expr):
        if isinstance(node, ast.Subscript):
            return False
        if isinstance(node, ast.Name) and node.id not in constants and id(node) not in callees:
            return False
    return True


def _mentions(expr, names: set) -> bool:
    return any(isinstance(n, ast.Name) and n.id in names for n in ast.walk(expr))


class _Checker:
    def __init__(self, arrays: set, scalars: set, integer_arrays: frozenset = frozenset(), typing=None):
        self.found: set = set()
        #: the kernel's types from its source (`local_types.Typing`), or None: every local may carry a gradient
        self.typing = typing
        self.arrays = arrays  # array arguments: stores into them bind no local
        self.integer_arrays = integer_arrays  # array arguments of integers: no gradient through their elements
        # carried locals a `while` iteration reassigns later: their variable holds the iteration's last value when
        # the adjoints run, but every value the replay computed from them before that is right
        self.stale: frozenset = frozenset()
        self.constants = scalars  # scalar arguments: their gradient is never used
        self.defined: set = arrays | scalars  # names bound so far, in source order
        # lines of the `while` loops the statement being checked is in: Warp's backward replays a while loop's
        # iterations in forward order, so a test there on a local it carries (`if w == 2`) is replayed right
        self.whiles: set = set()

    def _tests_right(self, wrong: dict) -> frozenset:
        return frozenset(name for name, loop_line in wrong.items() if loop_line in self.whiles)

    def _use(self, expr, wrong: dict) -> None:
        uses = _value_uses(
            expr, set(wrong), self.constants, self._tests_right(wrong), self.stale & set(wrong), self.integer_arrays
        )
        for name, line, use, site, call in uses:
            if use == "value" and self.typing is not None:
                if call and self.typing.constructs(site):
                    continue  # an argument of a cast or constructor (`res_vec(v)`, `a.dtype(v)`): linear in it
                if self.typing.carries_no_gradient(name, site):
                    continue  # an integer's wrong value that reaches no index, branch or float value
            self.found.add(CarriedRead(name, line, wrong[name]))

    def block(self, body: list, wrong: dict) -> dict:
        """``wrong``: local -> line of the loop that makes its value wrong here; returns it after ``body``."""
        for stmt in body:
            wrong = self.statement(stmt, wrong)
        return wrong

    def statement(self, stmt, wrong: dict) -> dict:
        if isinstance(stmt, (ast.For, ast.While)):
            return self._loop(stmt, wrong)
        if isinstance(stmt, ast.If):
            taken = self.typing.static_test(stmt.test) if self.typing is not None else None
            if taken is not None:  # `if wp.static(...)`, `if True`: Warp builds the branch taken only
                return self.block(stmt.body if taken else stmt.orelse, wrong)
            self._use(stmt.test, wrong)
            right = self._tests_right(wrong)
            for name in _value_names(stmt.test, wrong):
                if name in right:
                    continue
                self.found.add(CarriedRead(name, stmt.lineno, wrong[name]))  # the backward takes another branch
            then = self.block(stmt.body, dict(wrong))
            other = self.block(stmt.orelse, dict(wrong))
            return {**then, **other}
        if isinstance(stmt, (ast.Assign, ast.AugAssign, ast.AnnAssign)):
            value = stmt.value
            targets = stmt.targets if isinstance(stmt, ast.Assign) else [stmt.target]
            if value is not None:
                self._use(value, wrong)
            for target in targets:
                if not isinstance(target, ast.Name):
                    self._use(target, wrong)  # indices of a store
            tainted = value is not None and _mentions(value, set(wrong) - self.stale)
            if (
                isinstance(stmt, ast.AugAssign)
                and isinstance(stmt.op, PRODUCTS)
                and not (isinstance(stmt.op, (ast.Mult, ast.Div)) and _constant(stmt.value, self.constants))
            ):
                self._use(ast.BinOp(left=stmt.target, op=ast.Pow(), right=stmt.value), wrong)  # s *= t reads s
            wrong = dict(wrong)
            for target in targets:
                base = target
                while isinstance(base, (ast.Subscript, ast.Attribute)):
                    base = base.value
                names = [n.id for n in ast.walk(base) if isinstance(n, ast.Name) and n.id not in self.arrays]
                for name in names:
                    self.defined.add(name)
                    partial = base is not target or isinstance(stmt, ast.AugAssign)
                    if tainted:
                        wrong[name] = next(iter(wrong[n] for n in _names(value) if n in wrong and n not in self.stale))
                    elif not partial:
                        wrong.pop(name, None)  # a fresh value from right ones
            return wrong
        for field in ("value", "test"):
            part = getattr(stmt, field, None)
            if isinstance(part, ast.AST):
                self._use(part, wrong)
        return wrong

    def _loop(self, loop, wrong: dict) -> dict:
        if isinstance(loop, ast.For):
            self._use(loop.iter, wrong)
            target = {n.id for n in ast.walk(loop.target) if isinstance(n, ast.Name)}
        else:
            target = set()
        if not is_dynamic(loop):
            self.defined |= target
            inner = {k: v for k, v in wrong.items() if k not in target}
            # twice: what the body makes wrong reaches the next (unrolled) iteration
            inner = self.block(loop.body, self.block(loop.body, inner))
            return {**wrong, **inner}
        assigned = _assigned(loop.body) - target - self.arrays
        carried = {name: loop.lineno for name in assigned & self.defined}
        self.defined |= target
        inside = {**{k: v for k, v in wrong.items() if k not in target}, **carried}
        if isinstance(loop, ast.While):
            self._while_body(loop, inside, set(carried))
        else:
            self.block(loop.body, inside)
        # after the loop, every local the body assigned holds its value from before the loop
        return {**wrong, **{name: loop.lineno for name in assigned}}

    def _while_body(self, loop, wrong: dict, carried: set) -> None:
        """A ``while`` body: Warp's backward replays its iterations in forward order, and each iteration's adjoints
        then read the carried variable as the whole iteration left it. So a carried local is wrong only where a
        statement reads the carried variable: up to its first plain assignment in the body (``s = s * x[k]``,
        ``x[k]`` before ``k += 1``); after that assignment the body reads the value it made, which Warp keeps in a
        variable of its own and the replay recomputes (``k = step(k); y = f(k); k += 1``: ``f``'s adjoint reads the
        right ``k``, checked in the generated code). Its tests are right (the branch taken is replayed).
        """
        self.whiles.add(loop.lineno)
        outer = self.stale
        fresh: set = set()  # carried locals a plain statement of this body assigned already
        for i, stmt in enumerate(loop.body):
            later = _assigned(loop.body[i:]) - self.arrays
            wrong = dict(wrong)
            stale = set(outer)
            for name in carried:
                if name in later and name not in fresh:
                    wrong[name] = loop.lineno
                    stale.add(name)
                elif wrong.get(name) == loop.lineno:
                    del wrong[name]
            self.stale = frozenset(stale)
            wrong = self.statement(stmt, wrong)
            fresh |= _plainly_assigned(stmt)
        self.stale = outer
        self.whiles.discard(loop.lineno)


def _plainly_assigned(stmt) -> set:
    """Locals a statement assigns for certain, as a whole (``k = ...``, ``k += 1``, ``a, k = ...``): not in a branch
    or a loop, not a component."""
    if isinstance(stmt, ast.Assign):
        targets = stmt.targets
    elif isinstance(stmt, (ast.AugAssign, ast.AnnAssign)):
        targets = [stmt.target]
    else:
        return set()
    out = set()
    for target in targets:
        elements = target.elts if isinstance(target, ast.Tuple) else [target]
        out.update(e.id for e in elements if isinstance(e, ast.Name))
    return out


def _names(expr) -> list:
    return [n.id for n in ast.walk(expr) if isinstance(n, ast.Name)]


def _value_names(test, wrong: dict) -> list:
    """Names in ``wrong`` anywhere in a branch's test (a wrong value may choose the other branch)."""
    return sorted({n for n in _names(test) if n in wrong})


def _is_array(annotation) -> bool:
    return annotation is not None and "array" in ast.unparse(annotation)


_INTEGER_DTYPE = re.compile(r"(?:\[|dtype\s*=\s*)(?:wp\.|warp\.)?(?:bool|u?int(?:8|16|32|64)?)\b")


def _is_integer_array(annotation) -> bool:
    """``wp.array(dtype=int)``, ``wp.array[wp.int32]``, ``wp.array2d(dtype=wp.uint8)``, ``wp.array[bool]``, ..."""
    return _is_array(annotation) and bool(_INTEGER_DTYPE.search(ast.unparse(annotation)))


def find(function: ast.FunctionDef, typing=None) -> list:
    """The `CarriedRead`s of a kernel's parsed function (``typing``: its types from the source,
    `local_types.Typing`; None: every local may carry a gradient)."""
    arrays = {a.arg for a in function.args.args if _is_array(a.annotation)}
    scalars = {a.arg for a in function.args.args} - arrays
    integer_arrays = frozenset(a.arg for a in function.args.args if _is_integer_array(a.annotation))
    checker = _Checker(arrays, scalars, integer_arrays, typing)
    checker.block(function.body, {})
    first: dict = {}
    for finding in sorted(checker.found, key=lambda f: (f.line, f.name)):
        first.setdefault((finding.name, finding.loop_line), finding)  # one warning per local and loop
    return sorted(first.values(), key=lambda f: (f.line, f.name))
