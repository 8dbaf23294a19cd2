"""Warp source text of a drawn program: one ``@wp.kernel`` and its ``@wp.func`` helpers.

Operations that could be undefined print in safe forms, which the oracle evaluates the same way: ``exp`` of a
``tanh``, ``sqrt`` and ``log`` of a ``cosh`` (>= 1), division by a ``cosh``; ``pow`` of a base in (0.5, 2.5), ``length``/``normalize``
of a vector whose first component is a ``cosh``. Constants and thresholds print as
casts to the kernel's dtype, so float64 kernels never mix in float32 literals.
"""

from __future__ import annotations

import itertools
import re

from .nodes import (
    ACC,
    STRUCT_FIELDS,
    THREADS,
    TILE_SIZE,
    Assign,
    Binary,
    Call,
    CallStore,
    Component,
    Const,
    Field,
    For,
    If,
    Jump,
    Kink,
    Load,
    Local,
    LoopIndex,
    MakeMat,
    MakeVec,
    Program,
    Rotate,
    Select,
    SetComponent,
    SetField,
    StaticConst,
    Store,
    StructArg,
    TileBinary,
    TileLoad,
    TileMap,
    TileReduce,
    TileStore,
    Unary,
    Unpack,
    While,
    unravel,
)
from .walk import iter_nodes

SAFE_FORMS = {
    "sin": "wp.sin({a})",
    "cos": "wp.cos({a})",
    "tanh": "wp.tanh({a})",
    "neg": "-({a})",
    "exp": "wp.exp(wp.tanh({a}))",
    "log": "wp.log(wp.cosh({a}))",
    "sqrt": "wp.sqrt(wp.cosh({a}))",
    "transpose": "wp.transpose({a})",
    "det": "wp.determinant({a})",
    # the inverse of m m^T + I: symmetric positive definite, eigenvalues >= 1, so always defined and smooth
    "spdinv": "wp.inverse(wp.mul({a}, wp.transpose({a})) + wp.identity(n=3, dtype={t}))",
    # feature "builtins2": asin of a value in (-0.5, 0.5); length and normalize of a vector of length >= 1
    "asin": "wp.asin({t}(0.5) * wp.tanh({a}))",
    "length": "wp.length({v}(wp.cosh({a}[0]), {a}[1], {a}[2]))",
    "length_sq": "wp.length_sq({a})",
    "normalize": "wp.normalize({v}(wp.cosh({a}[0]), {a}[1], {a}[2]))",
}
BINARY_FORMS = {
    "add": "({a} + {b})",
    "sub": "({a} - {b})",
    "mul": "({a} * {b})",
    "div": "({a} / wp.cosh({b}))",
    "vadd": "({a} + {b})",
    "vsub": "({a} - {b})",
    "scale": "({a} * {b})",
    "dot": "wp.dot({a}, {b})",
    "cross": "wp.cross({a}, {b})",
    "madd": "({a} + {b})",
    "mmul": "wp.mul({a}, {b})",
    "matvec": "wp.mul({a}, {b})",
    # feature "builtins2": a base in (0.5, 2.5), any exponent; atan2 of a second argument >= 1
    "pow": "wp.pow({t}(1.5) + wp.tanh({a}), {b})",
    "atan2": "wp.atan2({a}, wp.cosh({b}))",
    "cw_mul": "wp.cw_mul({a}, {b})",
}
#: Componentwise kinks of vec3 operands (feature "vec_builtins"): ``{t}`` is the threshold broadcast to a vector.
VEC_KINK_FORMS = {
    "vmin": "wp.min({a}, {b} + {t})",
    "vmax": "wp.max({a}, {b} + {t})",
    "vabs": "wp.abs({a} - {t})",
    "vsign": "wp.cw_mul({b}, wp.sign({a} - {t}))",
}
SCALAR_TYPE = {"float32": "wp.float32", "float64": "wp.float64"}
VEC_TYPE = {"float32": "wp.vec3", "float64": "wp.vec3d"}
MAT_TYPE = {"float32": "wp.mat33", "float64": "wp.mat33d"}
TRANSFORM_TYPE = {"float32": "wp.transform", "float64": "wp.transformd"}
#: The kernel arguments of feature "arrays2d", between ``acc`` and ``n`` (``oracle.ARRAY_INPUTS``'s order).
ARRAY_ARGS = "xm: wp.array2d(dtype={t}), xt: wp.array3d(dtype={t}), ym: wp.array2d(dtype={t}), "
#: A unit axis from any vec3 ``a``: its first component through cosh keeps the length >= 1 (normalize is smooth).
SAFE_AXIS = "wp.normalize({v}(wp.cosh({a}[0]), {a}[1], {a}[2]))"
#: The kernel argument of feature "tiles", last before ``n`` (``oracle.TILE_INPUTS``).
TILE_ARGS = "yt: wp.array(dtype={t}), "
#: This thread's region of ``yt``: where its tile stores, atomic adds and read-backs go.
TILE_REGION = f"offset=i * {TILE_SIZE}"
TILE_FORMS = {
    "add": "({a} + {b})",
    "sub": "({a} - {b})",
    "mul": "wp.tile_map(wp.mul, {a}, {b})",
    "scale": "({a} * {b})",
}


#: One line of a helper's ``@wp.func_grad``: ``d`` is the derivative of its body by the parameter ``p``
#: (tests/test_fuzz.py plants a wrong factor here: the fuzzer must catch it).
FUNC_GRAD_FORM = "    wp.adjoint[{p}] += {d} * adj_ret"


#: The body of a helper's ``@wp.func_replay``: the helper's own value again (tests/test_fuzz_mutation.py plants a
#: wrong factor here: the fuzzer must catch it where the replay feeds a gradient).
FUNC_REPLAY_FORM = "    return {value}"


def derivative(e, param: str):
    """The derivative of a ``@wp.func_grad`` helper's body (`Const`, parameter `Local`, add/sub/mul, sin/cos/neg)
    by the parameter ``param``, as an expression node; zeros are folded away (`Const(0.0)` if nothing is left)."""
    zero, one = Const(0.0), Const(1.0)
    if isinstance(e, Const):
        return zero
    if isinstance(e, Local):
        return one if e.name == param else zero

    def mul(a, b):
        if zero in (a, b):
            return zero
        return b if a == one else a if b == one else Binary("mul", a, b)

    def add(a, b, op="add"):
        if b == zero:
            return a
        if a == zero:
            return b if op == "add" else Unary("neg", b)
        return Binary(op, a, b)

    if isinstance(e, Binary) and e.op in ("add", "sub"):
        return add(derivative(e.lhs, param), derivative(e.rhs, param), e.op)
    if isinstance(e, Binary) and e.op == "mul":
        return add(mul(derivative(e.lhs, param), e.rhs), mul(e.lhs, derivative(e.rhs, param)))
    if isinstance(e, Unary) and e.op in ("sin", "cos", "neg"):
        inner = derivative(e.arg, param)
        if inner == zero:
            return zero
        outer = {"sin": Unary("cos", e.arg), "cos": Unary("neg", Unary("sin", e.arg)), "neg": Const(-1.0)}[e.op]
        return mul(outer, inner)
    raise TypeError(f"derivative: {e!r} is not of a func_grad helper's grammar")


#: Numbers the helpers with a ``@wp.func_replay`` across the process: each gets a name never used before
#: (``{prefix}{k}_r{n}``), because Warp cannot build a replay of a function whose name an earlier ``@wp.func``
#: of the process had (docs/known-issues.md, func-replay-name-reused; batches and shrink rounds reuse names).
_REPLAY_NAMES = itertools.count()


def _index(index) -> str:
    return ", ".join(map(str, index)) if isinstance(index, tuple) else str(index)


def literal(value: float, dtype: str) -> str:
    return f"{SCALAR_TYPE[dtype]}({float(value)!r})"


class Printer:
    """Prints one program under the names ``kernel_name`` and ``{helper_prefix}{k}``."""

    def __init__(self, program: Program, thresholds, helper_prefix: str, held=(), held_type: str = ""):
        """``held``: array parameters the kernel reaches through a ``@wp.struct`` argument ``s`` of type
        ``held_type`` (``s.y[i]``; a launch sequence's "struct_arrays")."""
        self.program = program
        self.held, self.held_type = tuple(held), held_type
        self.launch = program.launch
        dims = len(self.launch)
        #: this thread's own element of x, xv, y: ``i`` in 1-D, ``i0, i1`` in more dimensions
        self.own = "i" if dims == 1 else ", ".join(f"i{k}" for k in range(dims))
        self.thresholds = thresholds
        self.prefix = helper_prefix
        self.t = SCALAR_TYPE[program.dtype]
        self.names = [
            f"{helper_prefix}{k}_r{next(_REPLAY_NAMES)}" if h.replay else f"{helper_prefix}{k}"
            for k, h in enumerate(program.helpers)
        ]

    def expr(self, e) -> str:
        if isinstance(e, Const):
            return literal(e.value, self.program.dtype)
        if isinstance(e, StaticConst):
            return f"{self.t}(wp.static({float(e.lhs)!r} * {float(e.rhs)!r}))"
        if isinstance(e, Local):
            return e.name
        if isinstance(e, LoopIndex):
            return f"{self.t}({e.name})"
        if isinstance(e, Load):
            if e.array == "ym":
                return f"{e.array}[{', '.join(('i',) + tuple(map(str, e.index)))}]"
            if e.array in ("y", "yv"):
                return f"{self.ref(e.array)}[{self.own}]"
            if e.array in ("x", "xv") and len(self.launch) > 1:
                return f"{self.ref(e.array)}[{self.shifted(e.offset)}]"
            index = "i" if e.offset == 0 else f"(i + {e.offset}) % {THREADS}"
            return f"{self.ref(e.array)}[{', '.join((index,) + tuple(map(str, e.index)))}]"
        if isinstance(e, Binary):
            return BINARY_FORMS[e.op].format(a=self.expr(e.lhs), b=self.expr(e.rhs), t=self.t)
        if isinstance(e, Kink) and e.op in VEC_KINK_FORMS:
            t = f"{VEC_TYPE[self.program.dtype]}({literal(self.thresholds.get(e.site, 0.0), self.program.dtype)})"
            return VEC_KINK_FORMS[e.op].format(a=self.expr(e.lhs), b=self.expr(e.rhs), t=t)
        if isinstance(e, Kink):
            t = literal(self.thresholds.get(e.site, 0.0), self.program.dtype)
            if e.op == "abs":
                return f"wp.abs({self.expr(e.lhs)} - {t})"
            if e.op == "sign":
                return f"({self.expr(e.rhs)} * wp.sign({self.expr(e.lhs)} - {t}))"
            return f"wp.{e.op}({self.expr(e.lhs)}, {self.expr(e.rhs)} + {t})"
        if isinstance(e, Component):
            return f"{self.expr(e.vec)}[{_index(e.index)}]"
        if isinstance(e, MakeMat):
            return f"{MAT_TYPE[self.program.dtype]}({', '.join(self.expr(a) for a in e.items)})"
        if isinstance(e, MakeVec):
            return f"{VEC_TYPE[self.program.dtype]}({', '.join(self.expr(a) for a in e.items)})"
        if isinstance(e, Rotate):
            dtype = self.program.dtype
            axis = SAFE_AXIS.format(v=VEC_TYPE[dtype], a=self.expr(e.axis))
            q = f"wp.quat_from_axis_angle({axis}, {self.expr(e.angle)})"
            if e.op == "quat_rotate":
                return f"wp.quat_rotate({q}, {self.expr(e.vec)})"
            return f"wp.{e.op}({TRANSFORM_TYPE[dtype]}({self.expr(e.offset)}, {q}), {self.expr(e.vec)})"
        if isinstance(e, Field):
            return f"{e.struct if isinstance(e.struct, str) else self.expr(e.struct)}.{e.field}"
        if isinstance(e, StructArg):
            return e.name
        if isinstance(e, Call):
            return f"{self.names[e.helper]}({', '.join(self.expr(a) for a in e.args)})"
        if isinstance(e, Select):
            a, b, c = self.expr(e.lhs), self.expr(e.rhs), self.cond(e.cond)
            return f"({a} if {c} else {b})" if e.form == "ternary" else f"wp.where({c}, {a}, {b})"
        if isinstance(e, TileLoad):
            region = f", {TILE_REGION}" if e.array == "yt" else ""
            return f"wp.tile_load({e.array}, shape={TILE_SIZE}{region})"
        if isinstance(e, TileMap):
            return f"wp.tile_map(wp.{e.op}, {self.expr(e.arg)})"
        if isinstance(e, TileBinary):
            return TILE_FORMS[e.op].format(a=self.expr(e.lhs), b=self.expr(e.rhs))
        if isinstance(e, TileReduce):
            if e.op == "sum":
                return f"wp.tile_extract(wp.tile_sum({self.expr(e.tile)}), 0)"
            return f"wp.tile_extract({self.expr(e.tile)}, {e.index})"
        return SAFE_FORMS[e.op].format(a=self.expr(e.arg), t=self.t, v=VEC_TYPE[self.program.dtype])

    def stmt(self, s, indent: str) -> list:
        if isinstance(s, Assign):
            return [f"{indent}{s.name} {s.op} {self.expr(s.expr)}"]
        if isinstance(s, SetComponent):
            return [f"{indent}{s.name}[{_index(s.index)}] {s.op} {self.expr(s.expr)}"]
        if isinstance(s, SetField):
            value = self.expr(s.expr)
            if s.op == "-=":  # the augmented form
                return [f"{indent}{s.struct}.{s.field} -= {value}"]
            value = value if s.op == "=" else f"{s.struct}.{s.field} {s.op[0]} {value}"
            return [f"{indent}{s.struct}.{s.field} = {value}"]
        if isinstance(s, Store):
            if s.op == "atomic":
                return [f"{indent}wp.atomic_add({self.ref('acc')}, i % {ACC}, {self.expr(s.expr)})"]
            if s.array == "yv":  # a component (.x, .y, .z) or the whole vector
                part = "".join(f".{'xyz'[c]}" for c in s.index)
                return [f"{indent}{self.ref('yv')}[{self.own}]{part} {s.op} {self.expr(s.expr)}"]
            index = self.own if s.array == "y" else ", ".join(("i",) + tuple(map(str, s.index)))
            value = f"wp.cosh({self.expr(s.expr)})" if s.op == "/=" else self.expr(s.expr)  # never 0
            return [f"{indent}{self.ref(s.array)}[{index}] {s.op} {value}"]
        if isinstance(s, TileStore):
            call = "wp.tile_store" if s.op == "=" else "wp.tile_atomic_add"
            return [f"{indent}{call}(yt, {self.expr(s.tile)}, {TILE_REGION})"]
        if isinstance(s, CallStore):
            args = "".join(f", {self.expr(a)}" for a in s.args)
            return [f"{indent}{self.names[s.helper]}({self.ref('y')}, {self.own}{args})"]
        if isinstance(s, Unpack):
            args = ", ".join(self.expr(a) for a in s.args)
            return [f"{indent}{s.targets[0]}, {s.targets[1]} = {self.names[s.helper]}({args})"]
        if isinstance(s, If):
            lines = [f"{indent}if {self.cond(s.cond)}:"] + self.block(s.body, indent + "    ")
            if s.orelse:
                lines += [f"{indent}else:"] + self.block(s.orelse, indent + "    ")
            return lines
        if isinstance(s, For):
            bound = "n" if s.runtime else f"wp.static({s.count - 1} + 1)" if s.static else str(s.count)
            return [f"{indent}for {s.var} in range({bound}):"] + self.block(s.body, indent + "    ")
        if isinstance(s, While):
            inner = indent + "    "
            head = [f"{indent}{s.var} = int(0)", f"{indent}while {s.var} < {s.count}:", f"{inner}{s.var} = {s.var} + 1"]
            return head + [line for stmt in s.body for line in self.stmt(stmt, inner)]
        if isinstance(s, Jump):
            return [f"{indent}{s.kind}"]
        raise TypeError(f"printer: unknown statement {s!r}")

    def ref(self, name: str) -> str:
        """How the kernel body names the array parameter ``name``: ``y``, or ``s.y`` when a struct holds it."""
        return f"s.{name}" if name in self.held else name

    def shifted(self, offset: int) -> str:
        """The multi-index of the element a thread loads at ``offset`` (`nodes.shifted`): ``(i0 + 1) % 2, i1``."""
        parts = unravel(offset, self.launch)
        return ", ".join(
            f"i{k}" if o == 0 else f"(i{k} + {o}) % {n}" for k, (o, n) in enumerate(zip(parts, self.launch))
        )

    def array_type(self, dtype: str) -> str:
        """The annotation of x, xv, y: ``wp.array(dtype=...)``, ``wp.array2d``, ``wp.array3d``."""
        dims = len(self.launch)
        return f"wp.array(dtype={dtype})" if dims == 1 else f"wp.array{dims}d(dtype={dtype})"

    def cond(self, c) -> str:
        if c.kind == "parity":
            return "i % 2 == 0"
        if c.kind == "counter":
            return f"{c.var} == {c.value}"
        t = literal(self.thresholds.get(c.site, 0.0), self.program.dtype)
        return f"{self.expr(c.expr)} > {t}"

    def block(self, stmts, indent: str) -> list:
        lines = []
        for s in stmts:
            lines += self.stmt(s, indent)
        return lines or [f"{indent}pass"]

    def struct_type(self) -> list:
        """The kernel's ``@wp.struct`` (feature "structs"): fields of the kernel's dtype, named by the prefix."""
        if not self.program.structs and not any(h.struct or h.returns_struct for h in self.program.helpers):
            return []
        types = {"f": self.t, "v": VEC_TYPE[self.program.dtype]}
        fields = [f"    {name}: {types[kind]}" for name, kind in STRUCT_FIELDS]
        return ["@wp.struct", f"class {self.prefix}S:", *fields, ""]

    def struct_body(self, make) -> list:
        """The body of a struct-returning helper (feature "struct_helpers"): the struct built field by field from
        ``make``'s items (a `MakeStruct`), then returned."""
        lines = [f"    r = {self.prefix}S()"]
        lines += [f"    r.{field} = {self.expr(item)}" for (field, _), item in zip(STRUCT_FIELDS, make.items)]
        return lines + ["    return r"]

    def helpers(self, decorator: str = "@wp.func") -> list:
        lines = self.struct_type()
        for k, h in enumerate(self.program.helpers):
            params = ", ".join(f"p{j}: {self.t}" for j in range(h.arity))
            params += f", s: {self.prefix}S" if h.struct else ""
            if h.stores:
                indices = "".join(f"{n.strip()}: int, " for n in self.own.split(","))
                lines += [
                    decorator,
                    f"def {self.names[k]}(y: {self.array_type(self.t)}, {indices}{params}):",
                    f"    y[{self.own}] = {self.expr(h.body)}",
                    "",
                ]
            elif h.returns_struct:
                lines += [decorator, f"def {self.names[k]}({params}):", *self.struct_body(h.body), ""]
            else:
                value = self.expr(h.body) + ("" if h.second is None else f", {self.expr(h.second)}")
                lines += [decorator, f"def {self.names[k]}({params}):", f"    return {value}", ""]
            if h.grad:
                lines += [
                    f"@wp.func_grad({self.names[k]})",
                    f"def adj_{self.names[k]}({params}, adj_ret: {self.t}):",
                    *(
                        FUNC_GRAD_FORM.format(p=f"p{j}", d=self.expr(derivative(h.body, f"p{j}")), t=self.t)
                        for j in range(h.arity)
                    ),
                    "",
                ]
            if h.replay:
                lines += [
                    f"@wp.func_replay({self.names[k]})",
                    f"def replay_{self.names[k]}({params}):",
                    FUNC_REPLAY_FORM.format(value=self.expr(h.body), t=self.t),
                    "",
                ]
        return lines

    def kernel(self, name: str, decorator: str, namespace: str = "wp") -> list:
        """The kernel's lines; with ``namespace`` (``"wpz"``: the facade, as users write it) its body and
        annotations name that module instead of ``wp`` (Warp itself). The helpers always name Warp."""
        lines = self._kernel(name, decorator)
        if namespace != "wp":
            lines = lines[:1] + [re.sub(r"\bwp\.", f"{namespace}.", line) for line in lines[1:]]
        return lines

    def parameters(self) -> list:
        """``(name, annotation)`` of the kernel's array parameters, in launch order (then ``n: int``)."""
        t, v = self.t, VEC_TYPE[self.program.dtype]
        params = [("x", self.array_type(t)), ("xv", self.array_type(v)), ("y", self.array_type(t))]
        params.append(("acc", f"wp.array(dtype={t})"))
        if self.program.vec_out:
            params.append(("yv", self.array_type(v)))
        if self.program.arrays:
            params += [("xm", f"wp.array2d(dtype={t})"), ("xt", f"wp.array3d(dtype={t})")]
            params.append(("ym", f"wp.array2d(dtype={t})"))
        if self.program.tiles:
            params.append(("yt", f"wp.array(dtype={t})"))
        return params

    def signature(self) -> str:
        """The parameter list; those in ``self.held`` are fields of one ``@wp.struct`` argument ``s`` instead (at
        the first one's place)."""
        parts = []
        for name, annotation in self.parameters():
            if name not in self.held:
                parts.append(f"{name}: {annotation}")
            elif not any(p.startswith("s: ") for p in parts):
                parts.append(f"s: {self.held_type}")
        return ", ".join(parts + ["n: int"])

    def _kernel(self, name: str, decorator: str) -> list:
        t, v = self.t, VEC_TYPE[self.program.dtype]
        lines = [decorator, f"def {name}({self.signature()}):"]
        if len(self.launch) == 1:
            lines.append("    i = wp.tid()")
        else:  # the flat thread index, row-major: parity, acc and the 2-D/3-D arrays of "arrays2d" use it
            lines.append(f"    {self.own} = wp.tid()")
            flat = "i0"
            for k, extent in enumerate(self.launch[1:], 1):
                flat = f"{flat} * {extent} + i{k}" if k == 1 else f"({flat}) * {extent} + i{k}"
            lines.append(f"    i = {flat}")
        for local, init in self.program.scalars:
            lines.append(f"    {local} = {t}({self.expr(init)})")
        for local, init in self.program.vectors:
            lines.append(f"    {local} = {v}({self.expr(init)})")
        for local, init in self.program.matrices:
            lines.append(f"    {local} = {self.expr(init)}")
        for local, inits in self.program.structs:
            lines.append(f"    {local} = {self.prefix}S()")
            for (field, kind), init in zip(STRUCT_FIELDS, inits):
                lines.append(f"    {local}.{field} = {(t if kind == 'f' else v)}({self.expr(init)})")
        for counter in sorted({n.var for n in iter_nodes(self.program.body) if isinstance(n, While)}):
            lines.append(f"    {counter} = int(0)")  # declared at the top: a while loop may sit in a branch
        lines += self.block(self.program.body, "    ")
        return lines + [""]


def source(program: Program, thresholds, name: str = "fuzzed", decorator: str = "@wp.kernel") -> str:
    """The helpers and kernel of ``program`` as Warp source (no imports)."""
    printer = Printer(program, thresholds, f"{name}_h")
    return "\n".join(printer.helpers() + printer.kernel(name, decorator))
