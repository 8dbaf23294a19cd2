"""The kind of each local of a kernel, from its source, by Warp's own rule: a local has the type of the value it is
first assigned (Warp refuses a later assignment of another type), and that type follows from the value's
expression: a literal, a parameter's annotation, an array's dtype, a vector's component, a cast or constructor
(``int(0)``, ``wp.int32(k)``, ``wp.vec3(...)``, a ``@wp.struct``), ``wp.tid()``, ``len``, ``min``/``max``/
``abs`` of their first argument, an arithmetic of integers, a comparison, or what a ``@wp.func`` helper returns
(its source read the same way). A module hash cannot tell the lints this (a cached build generates no code, so
Warp's own symbol types are not there).

`kinds` gives ``"integer"`` for a local whose values carry no gradient (an integer or bool scalar, vector or matrix,
a struct of such fields, a tuple of them), ``"float"`` for one that does, and leaves out one it cannot tell
(taken as carrying one); `Typing.kind` does the same for any expression of the kernel.
"""

from __future__ import annotations

import ast

from .. import _compat

INTEGER, FLOAT = "integer", "float"
#: how deep helpers calling helpers are read for their return types
DEPTH = 4
#: builtins whose result has the type of their first argument
_LIKE_FIRST = frozenset({"min", "max", "abs", "clamp", "sign"})
_INTEGER_RESULTS = frozenset({"tid", "len", "lower_bound", "block_dim"})
#: Python's own casts, which Warp takes as its int32, float32 and bool (not in a module's globals)
_PYTHON_TYPES = {"int": int, "float": float, "bool": bool}


class Typing:
    """A kernel's types from its source: each local's kind, and any expression's."""

    def __init__(self, kernel):
        function = next(n for n in ast.walk(_compat.kernel_tree(kernel)) if isinstance(n, ast.FunctionDef))
        parameters = dict(_compat.kernel_parameters(kernel))
        self._types = _Types(_compat.function_namespace(_compat.kernel_function(kernel)), 0)
        self._types.of_function(function, parameters)

    def kinds(self) -> dict:
        """``{local: "integer" | "float"}`` of the locals (and parameters) whose kind the source tells."""
        out = {}
        for name, t in self._types.env.items():
            kind = _kind(t)
            if kind is not None:
                out[name] = kind
        return out

    def kind(self, expr) -> str | None:
        """``"integer"``, ``"float"`` or None (unknown) of an expression of the kernel."""
        return _kind(self._types.expression(expr))

    def static_test(self, test) -> bool | None:
        """The value of a test Warp decides when it builds the kernel (``True``, ``wp.static(n == 1)`` over module or
        closure constants), or None: a test at run time."""
        if isinstance(test, ast.Constant) and isinstance(test.value, (bool, int)):
            return bool(test.value)
        is_static = isinstance(test, ast.Call) and _name(test.func) == "static" and len(test.args) == 1
        if not is_static or self._types._resolve(test.func) is None:
            return None
        names = {n.id for n in ast.walk(test.args[0]) if isinstance(n, ast.Name)}
        if names & set(self._types.env):
            return None  # a local or a parameter: not a constant
        try:  # Warp evaluates the same expression, in the same names, when it builds the kernel
            value = eval(compile(ast.Expression(test.args[0]), "<wp.static>", "eval"), dict(self._types.namespace))  # noqa: S307
        except Exception:  # noqa: BLE001 - not evaluable here: taken as a run-time test
            return None
        return bool(value) if isinstance(value, (bool, int)) else None

    def constructs(self, call) -> bool:
        """Is ``call`` a cast or constructor (``int(k)``, ``wp.vec3(...)``, ``res_vec(v)``, ``result.dtype(v)``): a
        value made from its arguments, linearly?"""
        if not isinstance(call, ast.Call):
            return False
        callee = self._types._resolve(call.func)
        if callee in (int, float, bool) or (callee is not None and _compat.is_value_type(callee)):
            return True
        func = call.func
        if isinstance(func, ast.Attribute) and func.attr == "dtype":  # an array's element type: `a.dtype(v)`
            base = self._types.expression(func.value)
            return base is not None and not isinstance(base, tuple) and _compat.is_array_type(base)
        return False

    def carries_no_gradient(self, name: str, site) -> bool:
        """Is local ``name`` an integer whose value, entering ``site`` (an expression), stays an integer there?"""
        return _kind(self._types.env.get(name)) == INTEGER and (site is None or self.kind(site) == INTEGER)


def kinds(kernel) -> dict:
    """``{local: "integer" | "float"}`` of a kernel's locals (and parameters) whose kind the source tells."""
    return Typing(kernel).kinds()


def _kind(t) -> str | None:
    if t is None:
        return None
    if isinstance(t, tuple):
        parts = {_kind(p) for p in t}
        return FLOAT if FLOAT in parts else INTEGER if parts == {INTEGER} else None
    if _compat.is_array_type(t):
        return None
    return _compat.value_kind(t)


class _Types:
    """Types of expressions in one function's source: Warp type objects, Python ``int``/``float``/``bool``, a
    tuple of them (a multiple return), or None (unknown)."""

    def __init__(self, namespace: dict, depth: int):
        self.namespace = namespace
        self.depth = depth
        self.env: dict = {}

    def of_function(self, function: ast.FunctionDef, parameters: dict) -> tuple:
        """``({name: type}, [types of its return values])``: locals typed by their first assignment, in order."""
        self.env = dict(parameters)
        returns: list = []
        for node in _in_order(function.body):
            if isinstance(node, ast.Assign):
                for target in node.targets:
                    self._bind(target, self.expression(node.value))
            elif isinstance(node, ast.AnnAssign) and node.value is not None:
                self._bind(node.target, self.expression(node.value))
            elif isinstance(node, ast.For):
                iterated = node.iter
                is_range = isinstance(iterated, ast.Call) and _name(iterated.func) == "range"
                self._bind(node.target, int if is_range else None)
            elif isinstance(node, ast.Return) and node.value is not None:
                returns.append(self.expression(node.value))
        return self.env, returns

    def _bind(self, target, t) -> None:
        if isinstance(target, ast.Name):
            self.env.setdefault(target.id, t)  # Warp's rule: the first assignment fixes the type
        elif isinstance(target, ast.Tuple):
            if t is int:  # i, j = wp.tid()
                t = (int,) * len(target.elts)
            parts = t if isinstance(t, tuple) and len(t) == len(target.elts) else (None,) * len(target.elts)
            for element, part in zip(target.elts, parts):
                self._bind(element, part)

    def expression(self, expr):  # noqa: PLR0911, PLR0912 - one case per expression form
        if isinstance(expr, ast.Constant):
            return type(expr.value) if isinstance(expr.value, (bool, int, float)) else None
        if isinstance(expr, ast.Name):
            if expr.id in self.env:
                return self.env[expr.id]
            value = self.namespace.get(expr.id)
            return type(value) if isinstance(value, (bool, int, float)) else None
        if isinstance(expr, ast.Attribute):
            base = self.expression(expr.value)
            if base is not None and not isinstance(base, tuple):
                field = _compat.struct_field_type(base, expr.attr)
                if field is not None:
                    return field
                if expr.attr in ("x", "y", "z", "w"):
                    return _compat.component_type(base)
            value = self._resolve(expr)
            return type(value) if isinstance(value, (bool, int, float)) else None
        if isinstance(expr, ast.Subscript):
            return self._subscript(expr)
        if isinstance(expr, ast.Call):
            return self._call(expr)
        if isinstance(expr, (ast.Compare, ast.BoolOp)):
            return bool
        if isinstance(expr, ast.UnaryOp):
            return bool if isinstance(expr.op, ast.Not) else self.expression(expr.operand)
        if isinstance(expr, ast.BinOp):
            left, right = _kind(self.expression(expr.left)), _kind(self.expression(expr.right))
            if left == right == INTEGER:
                return int
            if FLOAT in (left, right):
                return float
            return None
        if isinstance(expr, ast.IfExp):
            return self.expression(expr.body)
        if isinstance(expr, ast.Tuple):
            return tuple(self.expression(e) for e in expr.elts)
        return None

    def _subscript(self, expr):
        base = self.expression(expr.value)
        if base is None or isinstance(base, tuple):
            if isinstance(base, tuple) and isinstance(expr.slice, ast.Constant) and isinstance(expr.slice.value, int):
                return base[expr.slice.value] if expr.slice.value < len(base) else None
            return None
        index = expr.slice
        count = len(index.elts) if isinstance(index, ast.Tuple) else 1
        if _compat.is_array_type(base):
            return _compat.array_type_dtype(base) if count == _compat.array_type_ndim(base) else None
        component = _compat.component_type(base)
        if component is not None and count == 2 and not _compat.is_value_type(component):
            return None
        return _compat.component_type(component) if count == 2 and component is not None else component

    def _call(self, call: ast.Call):
        callee = self._resolve(call.func)
        if callee in (int, float, bool):
            return callee
        if callee is not None and (_compat.is_value_type(callee) or _compat.is_struct_type(callee)):
            return callee
        name = _name(call.func)
        if _compat.is_builtin_function(callee):
            if name == "tid":
                return int
            if name in _INTEGER_RESULTS:
                return int
            if name in _LIKE_FIRST and call.args:
                return self.expression(call.args[0])
            if name in ("select", "where") and len(call.args) == 3:
                return self.expression(call.args[1])
            return None
        function = _compat.user_function(callee)
        if function is None or self.depth >= DEPTH:
            return None
        return _returns(function, self.depth + 1)

    def _resolve(self, node):
        """The object a name or attribute chain names in the namespace (not a local), or None."""
        path = []
        while isinstance(node, ast.Attribute):
            path.append(node.attr)
            node = node.value
        if not isinstance(node, ast.Name) or node.id in self.env:
            return None
        if node.id not in self.namespace:
            if path:
                return None
            return _PYTHON_TYPES.get(node.id) or _compat.builtin_function(node.id)  # `int(...)`, `min(...)`
        found = self.namespace[node.id]
        for position, attr in enumerate(reversed(path)):
            owner, found = found, getattr(found, attr, None)
            if found is None and position == len(path) - 1 and owner is _compat.warp_module():
                return _compat.builtin_function(attr)  # `wp.tid`: Warp's builtins are not attributes of `warp`
        return found


def _returns(function, depth: int):
    """The type a user ``@wp.func`` returns (every overload the same), from its source; None where unknown."""
    found = []
    for overload in _compat.function_overloads(function):
        try:
            tree = _compat.function_tree(overload)
            types = _compat.function_argument_types(overload)
        except (OSError, AttributeError, TypeError):
            return None
        definition = next(n for n in ast.walk(tree) if isinstance(n, ast.FunctionDef))
        namespace = _compat.function_namespace(_compat.function_python(overload))
        returns = _Types(namespace, depth).of_function(definition, types)[1]
        if not returns:
            return None
        found.extend(returns)
    first = found[0]
    return first if all(_same(first, other) for other in found[1:]) else None


def _same(a, b) -> bool:
    if isinstance(a, tuple) and isinstance(b, tuple):
        return len(a) == len(b) and all(_kind(x) == _kind(y) for x, y in zip(a, b))
    return _kind(a) == _kind(b)


def _name(func) -> str:
    return func.attr if isinstance(func, ast.Attribute) else func.id if isinstance(func, ast.Name) else ""


def _in_order(body: list):
    """Every statement of ``body``, nested ones included, in source order (a compound statement before its body)."""
    for statement in body:
        yield statement
        for field in ("body", "orelse", "finalbody"):
            yield from _in_order(getattr(statement, field, []) or [])
