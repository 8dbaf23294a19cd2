"""hypothesis strategies that draw whole kernels of the fuzzer's language (``nodes``), one feature set each.

Expressions and statements are drawn top-down with a depth budget (composite strategies calling each other
recursively), so hypothesis shrinks a program by shrinking its choices: fewer statements, shallower
expressions, constants for subtrees. After drawing, kink sites are numbered and their thresholds placed
away from the drawn inputs (``oracle.place_thresholds``), so every drawn case is differentiable.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

import numpy as np
from hypothesis import assume
from hypothesis import strategies as st

from . import oracle
from .nodes import (
    COLS,
    LAUNCH_SHAPES,
    MAT33,
    SCALAR,
    STRUCT,
    THREADS,
    TILE_SIZE,
    VEC3,
    Assign,
    Binary,
    Call,
    CallStore,
    Component,
    Cond,
    Const,
    Field,
    For,
    Helper,
    If,
    Jump,
    Kink,
    Load,
    Local,
    LoopIndex,
    MakeMat,
    MakeStruct,
    MakeVec,
    Program,
    Rotate,
    Select,
    SetComponent,
    SetField,
    StaticConst,
    Store,
    StructArg,
    StructCall,
    TileBinary,
    TileLoad,
    TileMap,
    TileReduce,
    TileStore,
    Unary,
    Unpack,
    While,
)
from .walk import iter_nodes, rebuild

#: Every switchable feature. ``float32``/``float64`` pick the kernel dtypes drawn; the rest are constructs.
FEATURES = (
    "float32",
    "float64",
    "vec3",  # vec3 locals, loads, construction, +, -, scale, dot, cross, components
    "smooth",  # sin cos tanh, exp/log/sqrt/division in safe forms
    "kinks",  # min/max/abs with the kink kept away from the inputs
    "locals",  # locals reassigned and augmented (a = ..., a += ...)
    "components",  # local vector and matrix component updates (v[0] = ..., v[0] += ..., -=, *=; m[0, 1] ...)
    "branches",  # if/else on thread parity or on a threshold kept away from the values
    "static_loops",  # for k in range(3)
    "runtime_loops",  # for k in range(n), n a kernel argument
    "stores",  # y[i] = ... (several stores to one element follow from several statements)
    "augstores",  # y[i] += ...
    "readback",  # reads of y[i] after (or before) it is stored
    "atomics",  # wp.atomic_add(acc, i % 2, ...)
    "helpers",  # @wp.func helpers returning a value
    "helper_stores",  # @wp.func helpers that store into y[i]
    "while_loops",  # w = int(0); while w < 3: w = w + 1; ...
    "break",  # if <cond>: break, inside a loop (cond: parity, a threshold, or the loop counter == c)
    "continue",  # if <cond>: continue, inside a loop
    "ternaries",  # (a if e > t else b)
    "where",  # wp.where(e > t, a, b)
    "mat33",  # mat33 locals, construction, +, wp.mul (matrix, matrix-vector), transpose, determinant, safe inverse
    "quat",  # quat_from_axis_angle (a safe unit axis), quat_rotate, transform_point, transform_vector
    "nested_helpers",  # value helpers whose bodies call earlier value helpers (helper k calls helpers < k)
    "helper_tuples",  # helpers returning two values (return a, b), unpacked into two locals (a0, a1 = h(...))
    "func_grad",  # value helpers with a hand-written @wp.func_grad, its adjoint derived from the helper's body
    "static",  # wp.static(...): constants wp.static(0.5 * 1.5) and constant loop bounds range(wp.static(1 + 1))
    "arrays2d",  # xm[(i + o) % 4, c] (2-D), xt[i, c0, c1] (3-D) loads; ym[i, c] stores, += and read-backs (2-D)
    "structs",  # a @wp.struct local (fields a, b: scalars, v: vec3): s0.a = ..., s0.a = s0.a * ..., reads, h(.., s0)
    "func_replay",  # value helpers with a @wp.func_replay that computes the helper's value again (its own body)
    "builtins2",  # wp.pow, wp.atan2, wp.asin in safe forms, b * wp.sign(a - t) (a kink); with vec3: safe
    # wp.length and wp.normalize (of a vector whose first component is a cosh: length >= 1), wp.length_sq
    "tiles",  # wp.tile_load of x (whole) and, with readback, of this thread's region of yt; tile_map(sin/cos/tanh),
    # tile +, -, elementwise mul, scalar * tile; tile_sum and tile_extract back to scalars; tile_store and (with
    # atomics) tile_atomic_add into this thread's region of yt. Kernels are launched tiled (block_dim 1).
    "struct_helpers",  # a @wp.func returning the struct (r = S(); r.a = ...; return r): h(...).a, h(...).v[1];
    # with "structs" also s0 = h(...)
    "multidim",  # launches of 1 to 3 dimensions: i0, i1 = wp.tid(), x, xv, y of the launch's shape (not with tiles)
    "augops",  # y[i] -= e, y[i] *= e, y[i] /= wp.cosh(e)
    "vec_stores",  # a vec3 array yv of the thread's own elements: yv[i] = v, yv[i] += v, yv[i].x = e, .x += e, .x -= e,
    # read back as yv[i]
    "vec_builtins",  # wp.abs, wp.sign, wp.min, wp.max on vec3 (kinks kept away per component), wp.cw_mul
)
#: The features drawn when none are named: those whose CI campaign stays quick and clean on every supported Warp.
#: The rest (the later entries of `FEATURES`) are drawn when named (``features=...``, ``fuzz --features``).
DEFAULT_FEATURES = frozenset(FEATURES[: FEATURES.index("helper_stores") + 1])

UNARY_OPS = ("sin", "cos", "tanh", "neg", "exp", "log", "sqrt")
CONSTANTS = (1.0, 0.5, -0.5, 2.0, -1.0, 0.25, 1.5, -2.0, 0.75, -0.25, 1.25, -0.75, -1.5, 1.75, -1.25, -1.75)
#: Right factors of a ``wp.static(c * f)`` constant: every product with a `CONSTANTS` item is exact in float32.
STATIC_FACTORS = (2.0, 0.5, 1.5, -3.0)
#: The launch shapes feature "multidim" draws from: the 2-D and 3-D ones first (the fuzzer's own shrinker, not
#: hypothesis's, makes a failing launch 1-D), so that most of its draws are multi-dimensional.
MULTIDIM_DRAWS = LAUNCH_SHAPES[2] + LAUNCH_SHAPES[3] + LAUNCH_SHAPES[1]
#: Largest output value an opt-in feature set may draw: read-backs and ``+=`` in nested (unrolled) loops compound
#: (``y[i] += sqrt(cosh(y[i]))`` six times overflows float32), and a reference of ``inf`` is no finding.
OUTPUT_BOUND = 1e4


@dataclass(frozen=True)
class Case:
    """A drawn kernel and the point it is checked at: inputs, cotangents of the outputs, kink thresholds."""

    program: Program
    thresholds: dict
    inputs: dict  # "x", "xv", "y", "acc" -> float64 arrays (exact in float32)
    cotangents: dict  # "y", "acc" -> float64 arrays
    # (with feature "arrays2d" the inputs have "xm", "xt", "ym" and the cotangents "ym" too: oracle.inputs_of)

    def source(self, name: str = "fuzzed") -> str:
        """The kernel (and its helpers) as Warp source text."""
        from .printer import source  # noqa: PLC0415  (the printer needs nothing of the grammar)

        return source(self.program, self.thresholds, name)

    def __hash__(self):
        return hash(self.program)

    def __eq__(self, other):
        return isinstance(other, Case) and self.program == other.program


@dataclass(frozen=True)
class _Scope:
    features: frozenset
    scalars: tuple
    vectors: tuple
    loops: tuple = ()
    helpers: tuple = ()  # (index, arity) of value helpers callable here
    store_helpers: tuple = ()  # arities of storing helpers callable here (index, arity)
    tuple_helpers: tuple = ()  # (index, arity) of helpers returning two values, called here by `Unpack`
    depth: int = 2
    loads: bool = True  # helpers see only their parameters
    matrices: tuple = ()
    structs: tuple = ()  # struct locals (the kernel's s0) or parameters (a struct helper's s) readable here
    struct_helpers: tuple = ()  # (index, arity) of value helpers that take the struct too, called here
    struct_returns: tuple = ()  # (index, arity) of helpers that return the struct (feature "struct_helpers")

    def has(self, feature):
        return feature in self.features


_INDEX = {n: st.integers(0, n - 1) for n in range(1, 33)}
_BOOL = st.booleans()


def _pick(draw, options):
    """One of ``options`` (callables of no argument), drawn by index: shrinks toward the first (simplest)."""
    return options[draw(_INDEX[len(options)]) if len(options) > 1 else 0]()


def _item(draw, items):
    return items[draw(_INDEX[len(items)])] if len(items) > 1 else items[0]


def scalar_expr(draw, scope: _Scope, depth: int):
    """A scalar expression: leaves first (constants, loads, locals, loop counters), then operations."""
    leaves = [lambda: Const(_item(draw, CONSTANTS))]
    if scope.loads:
        leaves.append(lambda: Load("x", draw(_INDEX[THREADS])))
    if scope.scalars:
        leaves.append(lambda: Local(_item(draw, scope.scalars), SCALAR))
    if scope.loops:
        leaves.append(lambda: LoopIndex(_item(draw, scope.loops)))
    if scope.has("readback") and scope.loads:
        leaves.append(lambda: Load("y"))
    if scope.has("vec3") and scope.loads:
        leaves.append(lambda: Component(vec_expr(draw, scope, 0), draw(_INDEX[3])))
    if scope.has("static"):
        leaves.append(lambda: StaticConst(_item(draw, CONSTANTS), _item(draw, STATIC_FACTORS)))
    if scope.has("vec_stores") and scope.has("readback") and scope.loads:
        leaves.append(lambda: Component(Load("yv"), draw(_INDEX[3])))
    if scope.has("arrays2d") and scope.loads:
        leaves.append(lambda: Load("xm", draw(_INDEX[THREADS]), (draw(_INDEX[COLS]),)))
        leaves.append(lambda: Load("xt", draw(_INDEX[THREADS]), (draw(_INDEX[COLS]), draw(_INDEX[COLS]))))
        if scope.has("readback"):
            leaves.append(lambda: Load("ym", 0, (draw(_INDEX[COLS]),)))
    if scope.structs:
        leaves.append(lambda: Field(_item(draw, scope.structs), _item(draw, ("a", "b"))))
        leaves.append(lambda: Component(Field(_item(draw, scope.structs), "v"), draw(_INDEX[3])))
    if depth <= 0 or not draw(_BOOL):
        return _pick(draw, leaves)
    sub = lambda: scalar_expr(draw, scope, depth - 1)  # noqa: E731
    nodes = [lambda: Binary(_item(draw, ("add", "sub", "mul")), sub(), sub())]
    if scope.has("smooth"):
        nodes.append(lambda: Unary(_item(draw, UNARY_OPS), sub()))
        nodes.append(lambda: Binary("div", sub(), sub()))
    if scope.has("kinks"):
        nodes.append(lambda: Kink(_item(draw, ("min", "max", "abs")), sub(), sub(), -1))
    if scope.has("vec3") and scope.loads:
        vsub = lambda: vec_expr(draw, scope, depth - 1)  # noqa: E731
        nodes.append(lambda: Binary("dot", vsub(), vsub()))
        nodes.append(lambda: Component(vsub(), draw(_INDEX[3])))
    if scope.helpers:
        k, arity = _item(draw, scope.helpers)
        nodes.append(lambda: Call(k, tuple(sub() for _ in range(arity))))
    if scope.struct_helpers and scope.structs:
        ks, arity_s = _item(draw, scope.struct_helpers)
        struct = StructArg(_item(draw, scope.structs))
        nodes.append(lambda: Call(ks, tuple(sub() for _ in range(arity_s)) + (struct,)))
    if scope.struct_returns:
        kr, arity_r = _item(draw, scope.struct_returns)
        nodes.append(lambda: struct_read(draw, StructCall(kr, tuple(sub() for _ in range(arity_r)))))
    forms = [form for feature, form in (("ternaries", "ternary"), ("where", "where")) if scope.has(feature)]
    if forms:
        nodes.append(lambda: Select(_item(draw, forms), Cond("threshold", sub(), -1), sub(), sub()))
    if scope.has("quat") and scope.loads:
        nodes.append(lambda: Component(rotation(draw, scope, depth - 1), draw(_INDEX[3])))
    if scope.has("builtins2"):
        nodes.append(lambda: Binary("pow", sub(), sub()))
        nodes.append(lambda: Binary("atan2", sub(), sub()))
        nodes.append(lambda: Unary("asin", sub()))
        nodes.append(lambda: Kink("sign", sub(), sub(), -1))
        if scope.has("vec3") and scope.loads:
            nodes.append(lambda: Unary("length", vec_expr(draw, scope, depth - 1)))
            nodes.append(lambda: Unary("length_sq", vec_expr(draw, scope, depth - 1)))
    if scope.has("mat33") and scope.loads:
        msub = lambda: mat_expr(draw, scope, depth - 1)  # noqa: E731
        nodes.append(lambda: Unary("det", msub()))
        nodes.append(lambda: Component(msub(), (draw(_INDEX[3]), draw(_INDEX[3]))))
    if scope.has("tiles") and scope.loads:
        nodes.append(lambda: tile_reduce(draw, scope, depth - 1))
    return _pick(draw, nodes)


def tile_reduce(draw, scope: _Scope, depth: int):
    """A scalar out of a tile expression: its sum, or one of its elements."""
    if draw(_BOOL):
        return TileReduce("sum", tile_expr(draw, scope, depth))
    return TileReduce("extract", tile_expr(draw, scope, depth), draw(_INDEX[TILE_SIZE]))


def tile_expr(draw, scope: _Scope, depth: int):
    """A tile expression (feature "tiles"): loads of ``x`` (and read-backs of this thread's region of ``yt``),
    then elementwise maps, sums, differences and products, and scalings by a scalar expression."""
    leaves = [lambda: TileLoad("x")]
    if scope.has("readback"):
        leaves.append(lambda: TileLoad("yt"))
    if depth <= 0 or not draw(_BOOL):
        return _pick(draw, leaves)
    sub = lambda: tile_expr(draw, scope, depth - 1)  # noqa: E731
    return _pick(
        draw,
        [
            lambda: TileMap(_item(draw, ("sin", "cos", "tanh")), sub()),
            lambda: TileBinary(_item(draw, ("add", "sub", "mul")), sub(), sub()),
            lambda: TileBinary("scale", scalar_expr(draw, scope, depth - 1), sub()),
        ],
    )


def struct_read(draw, call: StructCall):
    """A scalar read of the struct ``call`` returns: ``h(...).a``, ``h(...).b`` or ``h(...).v[j]``."""
    return _pick(
        draw,
        [lambda: Field(call, _item(draw, ("a", "b"))), lambda: Component(Field(call, "v"), draw(_INDEX[3]))],
    )


def mat_expr(draw, scope: _Scope, depth: int):
    """A mat33 expression: a local or nine scalars, then sums, products, transposes and the safe inverse
    (``printer.SAFE_FORMS["spdinv"]``: of ``m m^T + I``, never singular)."""
    leaves = [lambda: MakeMat(tuple(scalar_expr(draw, scope, 0) for _ in range(9)))]
    if scope.matrices:
        leaves.append(lambda: Local(_item(draw, scope.matrices), MAT33))
    if depth <= 0 or not draw(_BOOL):
        return _pick(draw, leaves)
    sub = lambda: mat_expr(draw, scope, depth - 1)  # noqa: E731
    nodes = [
        lambda: Binary(_item(draw, ("madd", "mmul")), sub(), sub()),
        lambda: Unary(_item(draw, ("transpose", "spdinv")), sub()),
    ]
    return _pick(draw, nodes)


def vec_expr(draw, scope: _Scope, depth: int):
    leaves = [lambda: Load("xv", draw(_INDEX[THREADS]))]
    if scope.has("vec_stores") and scope.has("readback"):
        leaves.append(lambda: Load("yv"))
    if scope.vectors:
        leaves.append(lambda: Local(_item(draw, scope.vectors), VEC3))
    if scope.structs:
        leaves.append(lambda: Field(_item(draw, scope.structs), "v"))
    if depth <= 0 or not draw(_BOOL):
        return _pick(draw, leaves)
    sub = lambda: vec_expr(draw, scope, depth - 1)  # noqa: E731
    ssub = lambda: scalar_expr(draw, scope, depth - 1)  # noqa: E731
    nodes = [
        lambda: Binary(_item(draw, ("vadd", "vsub", "cross")), sub(), sub()),
        lambda: Binary("scale", ssub(), sub()),
        lambda: MakeVec((ssub(), ssub(), ssub())),
    ]
    if scope.has("mat33"):
        nodes.append(lambda: Binary("matvec", mat_expr(draw, scope, depth - 1), sub()))
    if scope.has("quat"):
        nodes.append(lambda: rotation(draw, scope, depth - 1))
    if scope.has("builtins2"):
        nodes.append(lambda: Unary("normalize", sub()))
    if scope.has("vec_builtins"):
        nodes.append(lambda: Kink(_item(draw, ("vmin", "vmax", "vabs", "vsign")), sub(), sub(), -1))
        nodes.append(lambda: Binary("cw_mul", sub(), sub()))
    return _pick(draw, nodes)


def rotation(draw, scope: _Scope, depth: int):
    """A vec3 rotated by a quaternion (``quat_from_axis_angle``), directly or through a transform."""
    vec = lambda: vec_expr(draw, scope, depth)  # noqa: E731
    op = _item(draw, ("quat_rotate", "transform_point", "transform_vector"))
    offset = Load("xv") if op == "quat_rotate" else vec()  # quat_rotate has none: not drawn, not printed
    return Rotate(op, vec(), scalar_expr(draw, scope, depth), vec(), offset)


def _block(draw, scope: _Scope, depth: int, max_size: int = 3):
    return tuple(statement(draw, scope, depth) for _ in range(1 + draw(_INDEX[max_size])))


def statement(draw, scope: _Scope, depth: int):
    """A statement: stores and assignments first, then branches and loops (while ``depth`` allows)."""
    expr = lambda: scalar_expr(draw, scope, scope.depth)  # noqa: E731
    op = lambda: _item(draw, ("=", "+="))  # noqa: E731
    choices = []
    if scope.has("stores"):
        choices.append(lambda: Store("y", "=", expr()))
    if scope.has("augstores"):
        choices.append(lambda: Store("y", "+=", expr()))
    if scope.has("atomics"):
        choices.append(lambda: Store("acc", "atomic", expr()))
    if scope.has("augops"):
        choices.append(lambda: Store("y", _item(draw, ("-=", "*=", "/=")), expr()))
    if scope.has("vec_stores"):
        vexpr = lambda: vec_expr(draw, scope, scope.depth)  # noqa: E731
        choices.append(lambda: Store("yv", _item(draw, ("=", "+=", "-=")), expr(), (draw(_INDEX[3]),)))
        choices.append(lambda: Store("yv", op(), vexpr()))
    if scope.has("arrays2d") and scope.has("stores"):
        choices.append(lambda: Store("ym", "=", expr(), (draw(_INDEX[COLS]),)))
    if scope.has("arrays2d") and scope.has("augstores"):
        choices.append(lambda: Store("ym", "+=", expr(), (draw(_INDEX[COLS]),)))
    if scope.has("tiles") and scope.has("stores"):
        choices.append(lambda: TileStore("=", tile_expr(draw, scope, scope.depth)))
    if scope.has("tiles") and scope.has("atomics"):
        choices.append(lambda: TileStore("atomic", tile_expr(draw, scope, scope.depth)))
    if scope.has("locals") and scope.scalars:
        choices.append(lambda: Assign(_item(draw, scope.scalars), SCALAR, op(), expr()))
    if scope.has("locals") and scope.vectors:
        choices.append(lambda: Assign(_item(draw, scope.vectors), VEC3, op(), vec_expr(draw, scope, scope.depth)))
    component_op = lambda: _item(draw, ("=", "+=", "-=", "*="))  # noqa: E731
    if scope.has("components") and scope.vectors:
        choices.append(lambda: SetComponent(_item(draw, scope.vectors), draw(_INDEX[3]), component_op(), expr()))
    if scope.has("locals") and scope.matrices:
        choices.append(lambda: Assign(_item(draw, scope.matrices), MAT33, op(), mat_expr(draw, scope, scope.depth)))
    if scope.has("components") and scope.matrices:
        pair = lambda: (draw(_INDEX[3]), draw(_INDEX[3]))  # noqa: E731
        choices.append(lambda: SetComponent(_item(draw, scope.matrices), pair(), component_op(), expr()))
    if scope.structs:
        struct = lambda: _item(draw, scope.structs)  # noqa: E731
        field_op = lambda: _item(draw, ("=", "+=", "*=", "-="))  # noqa: E731
        choices.append(lambda: SetField(struct(), _item(draw, ("a", "b")), field_op(), expr()))
        choices.append(lambda: SetField(struct(), "v", op(), vec_expr(draw, scope, scope.depth)))
    if scope.structs and scope.struct_returns:
        kr, arity_r = _item(draw, scope.struct_returns)
        call = lambda: StructCall(kr, tuple(expr() for _ in range(arity_r)))  # noqa: E731
        choices.append(lambda: Assign(_item(draw, scope.structs), STRUCT, "=", call()))
    if scope.store_helpers:
        k, arity = _item(draw, scope.store_helpers)
        choices.append(lambda: CallStore(k, tuple(expr() for _ in range(arity))))
    if scope.tuple_helpers and len(scope.scalars) > 1:

        def unpack():
            k, arity = _item(draw, scope.tuple_helpers)
            first = _item(draw, scope.scalars)
            second = _item(draw, tuple(n for n in scope.scalars if n != first))
            return Unpack(k, tuple(expr() for _ in range(arity)), (first, second))

        choices.append(unpack)
    if not choices:  # a feature set without any statement: at least store something
        choices.append(lambda: Store("y", "=", expr()))
    if depth > 0 and scope.has("branches"):

        def branch():
            if draw(_BOOL):
                cond = Cond("threshold", scalar_expr(draw, scope, 1), -1)
            else:
                cond = Cond("parity")
            body = _block(draw, scope, depth - 1)
            return If(cond, body, _block(draw, scope, depth - 1) if draw(_BOOL) else ())

        choices.append(branch)
    loops = [kind for kind in ("static_loops", "runtime_loops", "while_loops") if scope.has(kind)]
    if depth > 0 and loops:

        def loop():
            kind = _item(draw, loops)
            var = f"{'w' if kind == 'while_loops' else 'k'}{len(scope.loops)}"
            inner = dataclasses.replace(scope, loops=scope.loops + (var,))
            if kind == "while_loops":
                return While(var, 1 + draw(_INDEX[3]), _block(draw, inner, depth - 1))
            static = kind == "static_loops" and scope.has("static") and draw(_BOOL)
            return For(var, 1 + draw(_INDEX[3]), kind == "runtime_loops", _block(draw, inner, depth - 1), static)

        choices.append(loop)
    jumps = [kind for kind in ("break", "continue") if scope.has(kind)]
    if scope.loops and jumps:
        choices.append(lambda: If(jump_condition(draw, scope), (Jump(_item(draw, jumps)),), ()))
    return _pick(draw, choices)


def jump_condition(draw, scope: _Scope) -> Cond:
    """What a ``break``/``continue`` waits for: the innermost loop's counter at a value (it may never come), the
    thread's parity, or a threshold (a kink site, so the trip count changes nowhere near the drawn inputs)."""
    return _pick(
        draw,
        [
            lambda: Cond("counter", var=scope.loops[-1], value=draw(_INDEX[4])),
            lambda: Cond("parity"),
            lambda: Cond("threshold", scalar_expr(draw, scope, 1), -1),
        ],
    )


#: The features that draw ``@wp.func`` helpers; all but ``helper_stores`` draw helpers that return values.
HELPER_FEATURES = ("helpers", "helper_stores", "nested_helpers", "helper_tuples", "func_grad", "func_replay")


def helpers(draw, features: frozenset):
    """The kernel's ``@wp.func`` helpers: storing ones, plain value ones (with ``nested_helpers``, helper ``k``'s
    body may call value helpers ``< k``), tuple ones (``helper_tuples``), ones with a ``@wp.func_grad`` or a
    ``@wp.func_replay``; with ``structs``, last, a value helper that takes the kernel's struct and reads its fields."""
    found = []
    if not any(f in features for f in HELPER_FEATURES):
        return _struct_return_helper(draw, features, _struct_helper(draw, features, found))
    nested = "nested_helpers" in features
    values = any(f in features for f in HELPER_FEATURES if f != "helper_stores")
    kinds = [k for k, f in (("plain", "helpers"), ("plain", "nested_helpers")) if f in features][:1]
    kinds += [
        k for k, f in (("tuple", "helper_tuples"), ("grad", "func_grad"), ("replay", "func_replay")) if f in features
    ]
    least = 2 if nested else 1 if {"helper_tuples", "func_grad", "func_replay"} & features else 0
    for _ in range(draw(_INDEX[3]) + least):  # nested: at least two helpers (one for tuples or func_grad)
        arity = 1 + draw(_INDEX[2])
        callable_here = tuple((k, h.arity) for k, h in enumerate(found) if _returns_one(h)) if nested else ()
        scope = _Scope(features, tuple(f"p{j}" for j in range(arity)), (), helpers=callable_here, loads=False)
        stores = "helper_stores" in features and (not values or draw(_BOOL))
        kind = "plain" if stores else _item(draw, kinds)
        if kind == "grad":
            body = grad_expr(draw, arity, 2)
            if not any(isinstance(n, Local) for n in iter_nodes(body)):  # not a constant: a gradient to check
                body = Binary("mul", Local("p0", SCALAR), body)
            found.append(Helper(arity, body, grad=True))
            continue
        body = scalar_expr(draw, scope, 2)
        if callable_here and draw(_BOOL):  # make the nested call likely: call(...) op body
            k, arity_k = _item(draw, callable_here)
            call = Call(k, tuple(scalar_expr(draw, scope, 1) for _ in range(arity_k)))
            body = Binary(_item(draw, ("add", "sub", "mul")), call, body)
        second = scalar_expr(draw, scope, 2) if kind == "tuple" else None
        found.append(Helper(arity, body, stores, second, replay=kind == "replay"))
    return _struct_return_helper(draw, features, _struct_helper(draw, features, found))


def _struct_helper(draw, features: frozenset, found: list) -> tuple:
    """``found`` and, with ``structs``, a value helper of scalars ``p0 ...`` and the struct ``s`` whose body reads
    a field of ``s`` (if the drawn body reads none, ``field op body``)."""
    if "structs" not in features:
        return tuple(found)
    arity = 1 + draw(_INDEX[2])
    scope = _Scope(features, tuple(f"p{j}" for j in range(arity)), (), loads=False, structs=("s",))
    body = scalar_expr(draw, scope, 2)
    if not any(isinstance(n, Field) for n in iter_nodes(body)):
        field = _pick(draw, [lambda: Field("s", _item(draw, ("a", "b"))), lambda: Component(Field("s", "v"), 1)])
        body = Binary(_item(draw, ("add", "sub", "mul")), field, body)
    return tuple(found) + (Helper(arity, body, struct=True),)


def _struct_return_helper(draw, features: frozenset, found: tuple) -> tuple:
    """``found`` and, with ``struct_helpers``, last, a helper of scalars ``p0 ...`` that returns the kernel's struct
    built from them (a `MakeStruct`: ``a``, ``b`` scalar expressions, ``v`` a ``vec3`` of three); each of the five
    scalars reads a parameter (if the drawn one reads none, ``p op e``), so every field carries a gradient."""
    if "struct_helpers" not in features:
        return found
    arity = 1 + draw(_INDEX[2])
    scope = _Scope(features, tuple(f"p{j}" for j in range(arity)), (), loads=False)

    def scalar(depth):
        e = scalar_expr(draw, scope, depth)
        if not any(isinstance(n, Local) for n in iter_nodes(e)):
            e = Binary(_item(draw, ("add", "sub", "mul")), Local(f"p{draw(_INDEX[arity])}", SCALAR), e)
        return e

    items = (scalar(2), scalar(2), MakeVec((scalar(1), scalar(1), scalar(1))))
    return tuple(found) + (Helper(arity, MakeStruct(items)),)


def _returns_one(helper: Helper) -> bool:
    return not helper.stores and helper.second is None and not helper.struct and not helper.returns_struct


def grad_expr(draw, arity: int, depth: int):
    """The body of a helper with a ``@wp.func_grad``: parameters and constants under add/sub/mul, sin/cos and
    neg, so that ``printer.derivative`` derives its adjoint exactly."""
    leaves = [lambda: Local(f"p{draw(_INDEX[arity])}", SCALAR), lambda: Const(_item(draw, CONSTANTS))]
    if depth <= 0 or not draw(_BOOL):
        return _pick(draw, leaves)
    sub = lambda: grad_expr(draw, arity, depth - 1)  # noqa: E731
    return _pick(
        draw,
        [
            lambda: Binary(_item(draw, ("mul", "add", "sub")), sub(), sub()),
            lambda: Unary(_item(draw, ("sin", "cos", "neg")), sub()),
        ],
    )


def number_sites(program: Program) -> Program:
    """Number the kink sites 0, 1, ... in program order."""
    counter = iter(range(1 << 30))

    def number(node):
        if isinstance(node, Kink) or (isinstance(node, Cond) and node.kind == "threshold"):
            return dataclasses.replace(node, site=next(counter))
        return node

    return rebuild(program, number)


def site_count(program: Program) -> int:
    return sum(1 for n in iter_nodes(program) if isinstance(n, (Kink, Cond)) and n.site >= 0)


_VALUES = st.integers(-64, 64).map(lambda k: k / 64)


@st.composite
def points(draw, arrays: bool = False, tiles: bool = False, program: Program | None = None):
    """Inputs and cotangents, exact in float32 and float64 (multiples of 1/64 in [-1, 1]); with ``arrays`` those
    of feature "arrays2d" too (``oracle.ARRAY_INPUTS``), with ``tiles`` those of "tiles" (``oracle.TILE_INPUTS``);
    with ``program``, those its kernel takes (`oracle.inputs_of`)."""
    if program is not None:
        shapes, outputs = oracle.inputs_of(program), oracle.outputs_of(program)
    else:
        shapes = {**oracle.INPUTS, **(oracle.ARRAY_INPUTS if arrays else {}), **(oracle.TILE_INPUTS if tiles else {})}
        outputs = oracle.OUTPUTS + (oracle.ARRAY_OUTPUTS if arrays else ()) + (oracle.TILE_OUTPUTS if tiles else ())

    def values(shape):
        size = int(np.prod(shape))
        return np.array(draw(st.lists(_VALUES, min_size=size, max_size=size))).reshape(shape)

    inputs = {n: values(s) for n, s in shapes.items()}
    cot = {n: values(shapes[n]) for n in outputs}
    return inputs, cot


def kernels(features=None, *, max_statements: int = 5, max_depth: int = 2, expr_depth: int = 2) -> st.SearchStrategy:
    """Whole Warp kernels (`Case`: program, inputs, cotangents, kink thresholds) using ``features``.

    Every drawn kernel is deterministic and differentiable at its inputs, so a gradient that differs from the
    reference is a bug.

    Args:
        features: A subset of `FEATURES` (None: `DEFAULT_FEATURES`, which leaves out the opt-in constructs:
            while loops, break/continue, ternaries, wp.where, mat33, quat, nested helpers, tuple helpers,
            helpers with a ``@wp.func_grad``, wp.static, 2-D/3-D arrays, a ``@wp.struct`` local, helpers with a
            ``@wp.func_replay``, the builtins of "builtins2", tiles, helpers returning the struct
            ("struct_helpers": read as ``h(...).a`` and, with "structs", assigned whole to the struct local),
            launches of 2 and 3 dimensions ("multidim").
        max_statements: The most statements in the kernel's body (and in each nested block).
        max_depth: The deepest nesting of branches and loops.
        expr_depth: The deepest nesting of an expression.

    Returns:
        A hypothesis strategy of `Case`s.

    Raises:
        ValueError: ``features`` names something not in `FEATURES`, "static" where the installed Warp has no
            ``wp.static``, "func_replay" where it has no ``wp.func_replay``, or "tiles" where it has no
            ``wp.launch_tiled``.

    Example:
        ```python
        from hypothesis import given, settings
        from warp_zerostore.testing import kernels

        @settings(max_examples=5)
        @given(kernels(features={"float32", "stores", "readback", "smooth"}))
        def test_source(case):
            assert "y[i]" in case.source()

        test_source()
        ```
    """
    features = frozenset(DEFAULT_FEATURES if features is None else features)
    unknown = sorted(features - set(FEATURES))
    if unknown:
        raise ValueError(f"kernels: unknown features {unknown}; choose from {list(FEATURES)}.")
    if "static" in features:
        import warp  # noqa: PLC0415  (the grammar needs Warp only to ask this)

        if not hasattr(warp, "static"):
            raise ValueError(
                f"kernels: feature 'static' needs wp.static, which Warp {warp.config.version} does not have "
                "(1.9.1 and later do)."
            )
    if "tiles" in features:
        import warp  # noqa: PLC0415

        if not hasattr(warp, "launch_tiled"):
            raise ValueError(
                f"kernels: feature 'tiles' needs Warp's tile functions, which Warp {warp.config.version} does not "
                "have (1.9.1 and later do)."
            )
    if "func_replay" in features:
        import warp  # noqa: PLC0415

        if not hasattr(warp, "func_replay"):
            raise ValueError(
                f"kernels: feature 'func_replay' needs wp.func_replay, which Warp {warp.config.version} does not "
                "have (1.9.1 and later do)."
            )
    dtypes = [d for d in ("float32", "float64") if d in features] or ["float32"]
    return _cases(features, tuple(dtypes), max_statements, max_depth, expr_depth)


@st.composite
def _cases(draw, features, dtypes, max_statements, max_depth, expr_depth):
    dtype = _item(draw, dtypes)
    helper_list = helpers(draw, features)
    program = kernel_program(draw, features, dtype, helper_list, max_statements, max_depth, expr_depth)
    if "multidim" in features and not program.tiles:  # drawn last: the other features' draws stay as they were
        program = dataclasses.replace(program, launch=_item(draw, MULTIDIM_DRAWS))
    program = number_sites(program)
    inputs, cot = draw(points(program=program))
    placements = [draw(_INDEX[3]) for _ in range(max(1, site_count(program)))]
    thresholds = oracle.place_thresholds(program, inputs, placements)
    assume(thresholds is not None)
    if features - DEFAULT_FEATURES:  # opt-in sets only: the default set's draws stay exactly as they were (CI)
        outputs = oracle.run(program, thresholds, inputs).outputs
        assume(all(np.all(np.abs(v) < OUTPUT_BOUND) for v in outputs.values()))
    return Case(program, thresholds, inputs, cot)


def kernel_program(
    draw, features: frozenset, dtype: str, helper_list: tuple, max_statements=5, max_depth=2, expr_depth=2
) -> Program:
    """One kernel's program (sites not numbered, 1-D launch) over ``helper_list``: the body of `kernels`' draws,
    and of each kernel a drawn launch sequence launches (``programs.grammar``)."""
    tuples = any(h.second is not None for h in helper_list)  # unpacking wants two locals
    scalars = tuple(f"a{j}" for j in range(1 + tuples + draw(_INDEX[2])))
    vectors = ("v0",) if "vec3" in features and draw(_BOOL) else ()
    base = _Scope(features, (), (), loads=True)
    scope = _Scope(
        features,
        scalars,
        vectors,
        helpers=tuple((k, h.arity) for k, h in enumerate(helper_list) if _returns_one(h)),
        store_helpers=tuple((k, h.arity) for k, h in enumerate(helper_list) if h.stores),
        tuple_helpers=tuple((k, h.arity) for k, h in enumerate(helper_list) if h.second is not None),
        depth=expr_depth,
        structs=("s0",) if "structs" in features else (),
        struct_helpers=tuple((k, h.arity) for k, h in enumerate(helper_list) if h.struct),
        struct_returns=tuple((k, h.arity) for k, h in enumerate(helper_list) if h.returns_struct),
    )
    scalar_init = tuple((n, scalar_expr(draw, base, 1)) for n in scalars)
    vector_init = tuple((n, vec_expr(draw, base, 1)) for n in vectors)
    matrices = ("m0",) if "mat33" in features and draw(_BOOL) else ()
    matrix_init = tuple((n, mat_expr(draw, base, 1)) for n in matrices)
    scope = dataclasses.replace(scope, matrices=matrices)
    structs = tuple(
        (n, (scalar_expr(draw, base, 1), scalar_expr(draw, base, 1), vec_expr(draw, base, 1))) for n in scope.structs
    )
    body = _block(draw, scope, max_depth, max_statements)
    if not any(isinstance(s, (Store, CallStore)) for s in iter_nodes(body)):
        body += (Store("y", "=", Local(scalars[0], SCALAR)),)  # make the locals reach an output
    others = helper_list
    if "struct_helpers" in features:  # its helper is the last one: read in the last store of y[i]
        body = _read_struct_return(draw, scope, helper_list, body)
        others = helper_list[:-1]  # the helpers before it, indices unchanged
    if others and {"nested_helpers", "helper_tuples", "func_grad", "structs", "func_replay"} & features:
        body = _call_last_helper(draw, scope, others, body)
    tiles = "tiles" in features
    if tiles and not any(isinstance(n, (TileStore, TileReduce)) for n in iter_nodes(body)):
        body += (TileStore("=", tile_expr(draw, scope, expr_depth)),)  # a tile in every drawn kernel
    arrays = "arrays2d" in features
    return Program(
        dtype,
        scalar_init,
        vector_init,
        helper_list,
        body,
        1 + draw(_INDEX[3]),
        matrix_init,
        arrays,
        structs,
        tiles,
        vec_out="vec_stores" in features,
    )


def _call_last_helper(draw, scope: _Scope, helper_list, body):
    """``body`` with a call of its last helper if it never calls it (the top of a nested chain, a tuple or
    func_grad helper: the new helper features are then exercised, not just printed), added to the last
    top-level store of ``y[i]`` (so its gradient reaches an output); without one, ``a0 += h(...)`` first."""
    k = len(helper_list) - 1
    helper = helper_list[k]
    if helper.stores or any(isinstance(n, (Call, Unpack)) and n.helper == k for n in iter_nodes(body)):
        return body
    args = tuple(scalar_expr(draw, scope, 1) for _ in range(helper.arity))
    args += (StructArg(scope.structs[0]),) if helper.struct else ()
    last = max((j for j, s in enumerate(body) if isinstance(s, Store) and s.array == "y"), default=None)
    if helper.second is not None:
        unpack = Unpack(k, args, scope.scalars[:2])
        if last is None:
            return (unpack,) + body
        value = Binary("mul", Local(scope.scalars[0], SCALAR), Local(scope.scalars[1], SCALAR))
        store = dataclasses.replace(body[last], expr=Binary("add", body[last].expr, value))
        return body[:last] + (unpack, store) + body[last + 1 :]
    if last is None:
        return (Assign(scope.scalars[0], SCALAR, "+=", Call(k, args)),) + body
    store = dataclasses.replace(body[last], expr=Binary("add", body[last].expr, Call(k, args)))
    return body[:last] + (store,) + body[last + 1 :]


def _read_struct_return(draw, scope: _Scope, helper_list, body):
    """``body`` whose last top-level store of ``y[i]`` reads a field of the struct its last helper (a struct-
    returning one) returns, ``y[i] = e + h(...).a`` (unless that store reads one already); without such a
    store, ``y[i] += h(...).a`` last. So every drawn kernel of "struct_helpers" calls the helper, and one call's
    value reaches an output whatever else the body does with the helper."""
    k = len(helper_list) - 1

    def reads(expr):
        return any(isinstance(n, Field) and isinstance(n.struct, StructCall) for n in iter_nodes(expr))

    last = max((j for j, s in enumerate(body) if isinstance(s, Store) and s.array == "y"), default=None)
    if last is not None and reads(body[last].expr):
        return body
    read = struct_read(draw, StructCall(k, tuple(scalar_expr(draw, scope, 1) for _ in range(helper_list[k].arity))))
    if last is None:
        return body + (Store("y", "+=", read),)
    store = dataclasses.replace(body[last], expr=Binary("add", body[last].expr, read))
    return body[:last] + (store,) + body[last + 1 :]


def with_body(case: Case, program: Program, placements=(0,)) -> Case | None:
    """``case`` with another program (for shrinking): sites renumbered, thresholds placed again."""
    program = number_sites(program)
    thresholds = oracle.place_thresholds(program, case.inputs, list(placements) or [0])
    if thresholds is None:
        return None
    return Case(program, thresholds, case.inputs, case.cotangents)
