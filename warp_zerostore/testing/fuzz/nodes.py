"""The fuzzer's kernel language: immutable nodes that the grammar draws, the printer prints and the oracle runs.

A drawn kernel reads ``x`` (scalars), ``xv`` (vec3) and ``y`` (read-back of its own element), writes ``y[i]``
and atomically adds into ``acc``; every local is declared at the top, so branches and loops only reassign.
Each operation that could be undefined or kinked has a safe printed form (see ``printer.SAFE_FORMS``), and
every kink (a branch threshold, a ``min``/``max`` tie, ``abs`` or ``sign`` at 0) is a numbered *site* whose threshold
the oracle places away from every value the program meets there (``oracle.place_thresholds``).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Tuple, Union

SCALAR, VEC3, MAT33, TILE = "f", "v", "m", "t"
#: The type of an `Assign` of a whole struct: ``s0 = h(...)``, a struct-returning helper's value (feature
#: "struct_helpers").
STRUCT = "s"

#: Threads per launch and the length of ``acc`` (atomics from several threads meet in each element).
THREADS = 4
ACC = 2
#: Columns of the 2-D arrays ``xm`` and ``ym`` and both trailing extents of the 3-D ``xt`` (feature "arrays2d").
COLS = 2
#: Length of the fuzzer's tiles (feature "tiles"): a tile of ``x`` is the whole of it, and thread ``i`` owns the
#: region ``yt[i * TILE_SIZE : (i + 1) * TILE_SIZE]`` of the tile output ``yt``.
TILE_SIZE = THREADS
#: The launch shapes of feature "multidim", by dimension: each has `THREADS` threads, and in each the last index
#: varies (Warp 1.17.0 through the facade computed ``j = 0`` in every thread of ``i, j = wp.tid()``).
LAUNCH_SHAPES = {1: ((THREADS,),), 2: ((2, 2), (1, 4)), 3: ((2, 1, 2), (1, 2, 2))}


def unravel(flat: int, launch: tuple) -> tuple:
    """The multi-index of thread (or element) ``flat`` in a row-major ``launch`` shape."""
    index = []
    for extent in reversed(launch):
        index.append(flat % extent)
        flat //= extent
    return tuple(reversed(index))


def ravel(index: tuple, launch: tuple) -> int:
    """The flat (row-major) position of ``index`` in ``launch``."""
    flat = 0
    for k, extent in zip(index, launch):
        flat = flat * extent + k
    return flat


def shifted(flat: int, offset: int, launch: tuple) -> int:
    """The element thread ``flat`` loads at ``offset``: ``(i + offset) % THREADS`` in 1-D; in more dimensions,
    each index moved by its part of ``unravel(offset)`` modulo its extent (``x[(i0 + 1) % 2, i1]``)."""
    if len(launch) == 1:
        return (flat + offset) % THREADS
    moved = tuple((k + o) % n for k, o, n in zip(unravel(flat, launch), unravel(offset, launch), launch))
    return ravel(moved, launch)


@dataclass(frozen=True)
class Const:
    value: float


@dataclass(frozen=True)
class Local:
    name: str
    type: str


@dataclass(frozen=True)
class LoopIndex:
    """A loop counter, read as a float of the kernel's dtype."""

    name: str


@dataclass(frozen=True)
class Load:
    """``x[(i + offset) % THREADS]``, ``xv[...]``, or ``y[i]`` (a read-back of this thread's own element; in a
    multi-dimensional launch ``x[(i0 + o0) % S0, i1]`` and ``y[i0, i1]``: `shifted`); with
    ``index`` (constant trailing indices, feature "arrays2d") ``xm[(i + offset) % THREADS, c]``,
    ``xt[..., c0, c1]``, or ``ym[i, c]`` (a read-back of one of this thread's own elements)."""

    array: str
    offset: int = 0
    index: Tuple[int, ...] = ()


@dataclass(frozen=True)
class StaticConst:
    """``wp.static(lhs * rhs)`` cast to the kernel's dtype: a constant that Warp evaluates at codegen (feature
    "static"); its value is ``lhs * rhs`` (exact: both are multiples of a power of two)."""

    lhs: float
    rhs: float


@dataclass(frozen=True)
class Unary:
    op: str  # sin cos tanh neg exp log sqrt (the last three in safe forms); of a mat33: transpose det spdinv;
    # asin (safe form); of a vec3: length length_sq normalize (length and normalize in safe forms)
    arg: Expr


@dataclass(frozen=True)
class Binary:
    op: str  # add sub mul div (safe), vadd vsub, scale (scalar * vec3), dot, cross; madd mmul (mat33), matvec;
    # pow atan2 (safe forms)
    lhs: Expr
    rhs: Expr


@dataclass(frozen=True)
class Kink:
    """``min(lhs, rhs + t)``, ``max(lhs, rhs + t)``, ``abs(lhs - t)`` or ``rhs * sign(lhs - t)`` (op "sign") with
    ``t`` the threshold of ``site``; on vec3 operands (ops "vmin", "vmax", "vabs", "vsign", feature "vec_builtins")
    the same componentwise, ``t`` broadcast (``wp.min(a, b + wp.vec3(t))``, ``wp.cw_mul(b, wp.sign(a - wp.vec3(t)))``),
    every component kept away from it."""

    op: str
    lhs: Expr
    rhs: Expr
    site: int


@dataclass(frozen=True)
class Component:
    """``vec[index]``, or ``m[row, col]`` of a mat33 (``index`` a pair)."""

    vec: Expr
    index: Union[int, Tuple[int, int]]


@dataclass(frozen=True)
class MakeVec:
    items: Tuple[Expr, ...]


@dataclass(frozen=True)
class MakeMat:
    """``wp.mat33(...)`` of nine scalars, row by row."""

    items: Tuple[Expr, ...]


@dataclass(frozen=True)
class Rotate:
    """``vec`` rotated by the quaternion of ``angle`` about a unit axis made of ``axis`` in a safe form
    (``printer.SAFE_AXIS``): ``wp.quat_rotate`` (op "quat_rotate"), or through ``wp.transform(offset, q)``
    (``transform_point``, ``transform_vector``)."""

    op: str
    axis: Expr
    angle: Expr
    vec: Expr
    offset: Expr


#: The fields of the kernel's ``@wp.struct`` (feature "structs"), in declaration order, with their types.
STRUCT_FIELDS = (("a", SCALAR), ("b", SCALAR), ("v", VEC3))


@dataclass(frozen=True)
class Field:
    """``s.a``, ``s.b`` (scalars) or ``s.v`` (a vec3) of the struct local or struct parameter named ``struct``,
    or of the struct a `StructCall` returns (``h(...).a``, feature "struct_helpers")."""

    struct: Union[str, StructCall]
    field: str


@dataclass(frozen=True)
class MakeStruct:
    """The kernel's struct built field by field from ``items`` (the values of a, b, v, `STRUCT_FIELDS`' order):
    only the body of a struct-returning helper, printed as ``r = S(); r.a = ...; r.b = ...; r.v = ...; return r``
    (feature "struct_helpers")."""

    items: Tuple[Expr, Expr, Expr]


@dataclass(frozen=True)
class StructArg:
    """The struct local ``name`` passed whole to a helper that takes a struct (its last argument)."""

    name: str


@dataclass(frozen=True)
class Call:
    """A call of the kernel's ``helper``-th ``@wp.func`` (a `StructArg` last for a helper that takes a struct)."""

    helper: int
    args: Tuple[Expr, ...]


@dataclass(frozen=True)
class StructCall(Call):
    """A call of a helper whose body is a `MakeStruct`: a struct, never a scalar; read through a `Field`
    (``h(...).a``, ``h(...).v[1]``) or assigned whole to the struct local (``Assign(s0, STRUCT, "=", call)``)."""


@dataclass(frozen=True)
class Cond:
    """``i % 2 == 0`` (kind "parity", no kink at all), ``expr > t`` with ``t`` the threshold of ``site`` (kind
    "threshold"), or ``var == value`` on an enclosing loop's counter (kind "counter", no kink: an integer)."""

    kind: str
    expr: Expr = None
    site: int = -1
    var: str = ""
    value: int = 0


@dataclass(frozen=True)
class Select:
    """``lhs if cond else rhs`` (form "ternary") or ``wp.where(cond, lhs, rhs)`` (form "where"): a scalar chosen
    by a threshold condition, whose threshold the oracle places like a branch's."""

    form: str
    cond: Cond
    lhs: Expr
    rhs: Expr


@dataclass(frozen=True)
class TileLoad:
    """``wp.tile_load(x, shape=TILE_SIZE)`` (array "x": the whole of ``x``) or ``wp.tile_load(yt, shape=TILE_SIZE,
    offset=i * TILE_SIZE)`` (array "yt": this thread's own region of the tile output, a read-back)."""

    array: str


@dataclass(frozen=True)
class TileMap:
    """``wp.tile_map(wp.<op>, tile)``: an elementwise builtin (sin, cos, tanh) over a tile."""

    op: str
    arg: Expr


@dataclass(frozen=True)
class TileBinary:
    """Elementwise ``lhs + rhs``, ``lhs - rhs`` (ops "add", "sub"), ``wp.tile_map(wp.mul, lhs, rhs)`` ("mul") of two
    tiles, or ``lhs * rhs`` of a scalar and a tile (op "scale")."""

    op: str
    lhs: Expr
    rhs: Expr


@dataclass(frozen=True)
class TileReduce:
    """A scalar from a tile: ``wp.tile_extract(wp.tile_sum(tile), 0)`` (op "sum") or ``wp.tile_extract(tile,
    index)`` (op "extract")."""

    op: str
    tile: Expr
    index: int = 0


Expr = Union[
    Const,
    StaticConst,
    Local,
    LoopIndex,
    Load,
    Unary,
    Binary,
    Kink,
    Component,
    MakeVec,
    MakeMat,
    Rotate,
    Call,
    Select,
    Field,
    StructArg,
    TileLoad,
    TileMap,
    TileBinary,
    TileReduce,
    StructCall,
    MakeStruct,
]


@dataclass(frozen=True)
class Assign:
    """``name = expr`` or ``name += expr`` on a local declared at the top; of type `STRUCT`, ``s0 = h(...)`` (a
    `StructCall`) on the struct local."""

    name: str
    type: str
    op: str
    expr: Expr


@dataclass(frozen=True)
class SetComponent:
    """``v[index] op expr`` (op ``=``, ``+=``, ``-=``, ``*=``) on a local vec3, or ``m[row, col] ...`` on a mat33 (a
    pair)."""

    name: str
    index: Union[int, Tuple[int, int]]
    op: str
    expr: Expr


@dataclass(frozen=True)
class SetField:
    """``s.f = expr`` on the field ``field`` of the struct local ``struct``; op "+=" ("*=", a scalar field only)
    prints as ``s.f = s.f + expr`` (``s.f * expr``): an update that reads the field it writes; op "-=" (a scalar
    field) prints as the augmented assignment ``s.f -= expr``, which Warp generates through another path."""

    struct: str
    field: str
    op: str
    expr: Expr


@dataclass(frozen=True)
class Store:
    """``y[i] = e``, ``y[i] += e`` (op "=" / "+="), or ``wp.atomic_add(acc, i % ACC, e)`` (op "atomic"); with
    ``index`` (feature "arrays2d") ``ym[i, c] = e`` or ``ym[i, c] += e``. Feature "augops": ``y[i] -= e``,
    ``y[i] *= e`` and ``y[i] /= wp.cosh(e)`` (never 0). Feature "vec_stores": ``yv[i] = v``, ``yv[i] += v`` (a vec3)
    and, with ``index`` ``(c,)``, the component ``yv[i].x = e``, ``+= e``, ``-= e``."""

    array: str
    op: str
    expr: Expr
    index: Tuple[int, ...] = ()


@dataclass(frozen=True)
class If:
    cond: Cond
    body: Tuple[Stmt, ...]
    orelse: Tuple[Stmt, ...]


@dataclass(frozen=True)
class For:
    """``for var in range(count)``, or ``range(n)`` when ``runtime``: ``n`` is the kernel argument, whose value is
    the program's ``loop_count`` (``count`` is then unused); with ``static`` (feature "static") the constant bound
    prints as ``range(wp.static((count - 1) + 1))``, evaluated at codegen."""

    var: str
    count: int
    runtime: bool
    body: Tuple[Stmt, ...]
    static: bool = False


@dataclass(frozen=True)
class While:
    """``var = int(0)``, then ``while var < count:`` whose body starts with ``var = var + 1`` (the counter moves
    before the body, so a ``continue`` cannot skip it); ``LoopIndex(var)`` reads 1 ... count."""

    var: str
    count: int
    body: Tuple[Stmt, ...]


@dataclass(frozen=True)
class Jump:
    """``break`` or ``continue`` (``kind``) of the innermost enclosing loop; drawn only as an ``If``'s body."""

    kind: str


@dataclass(frozen=True)
class Unpack:
    """``t0, t1 = h(args)``: a call of the ``helper``-th ``@wp.func``, which returns two values (a tuple helper),
    unpacked into the scalar locals ``targets`` (two distinct names)."""

    helper: int
    args: Tuple[Expr, ...]
    targets: Tuple[str, str]


@dataclass(frozen=True)
class CallStore:
    """A call of the ``helper``-th ``@wp.func``, which stores its result into ``y[i]`` (helpers that store)."""

    helper: int
    args: Tuple[Expr, ...]


@dataclass(frozen=True)
class TileStore:
    """``wp.tile_store(yt, tile, offset=i * TILE_SIZE)`` (op "=") or ``wp.tile_atomic_add(yt, tile, offset=...)``
    (op "atomic"): this thread's own region of the tile output ``yt``."""

    op: str
    tile: Expr


Stmt = Union[Assign, SetComponent, SetField, Store, If, For, While, Jump, CallStore, Unpack, TileStore]


@dataclass(frozen=True)
class Helper:
    """``@wp.func`` of scalar parameters ``p0 ... p{arity-1}`` returning ``body``; with ``stores``, it takes
    ``y`` and ``i`` too and stores ``body`` into ``y[i]`` instead of returning it; with ``second``, it returns
    ``body, second`` (a tuple helper, called only by `Unpack`); with ``grad``, it has a hand-written
    ``@wp.func_grad`` whose adjoint the printer derives from ``body`` (``printer.derivative``: ``body`` is then
    made of parameters, constants, add/sub/mul, sin/cos and neg only); with ``struct``, it takes the kernel's
    struct as a last parameter ``s`` whose fields its body reads (feature "structs"); with ``replay``, it has a
    ``@wp.func_replay`` that computes ``body`` again (feature "func_replay"). A ``body`` that is a `MakeStruct`
    returns the kernel's struct (feature "struct_helpers": `returns_struct`), called only by `StructCall`."""

    arity: int
    body: Expr
    stores: bool = False
    second: Expr = None
    grad: bool = False
    struct: bool = False
    replay: bool = False

    @property
    def returns_struct(self) -> bool:
        """Whether the helper returns the kernel's struct (its body a `MakeStruct`)."""
        return isinstance(self.body, MakeStruct)


@dataclass(frozen=True)
class Program:
    dtype: str  # "float32" or "float64"
    scalars: Tuple[Tuple[str, Expr], ...]  # locals declared at the top, with their initial values
    vectors: Tuple[Tuple[str, Expr], ...]
    helpers: Tuple[Helper, ...]
    body: Tuple[Stmt, ...]
    loop_count: int = 2  # the runtime bound n
    matrices: Tuple[Tuple[str, Expr], ...] = ()  # mat33 locals declared at the top (feature "mat33")
    arrays: bool = False  # the kernel takes xm (2-D), xt (3-D) and ym (2-D) too (feature "arrays2d")
    # struct locals declared at the top (feature "structs"): name, initial values of the fields a, b, v
    structs: Tuple[Tuple[str, Tuple[Expr, Expr, Expr]], ...] = ()
    tiles: bool = False  # the kernel takes yt too and is launched tiled (feature "tiles")
    vec_out: bool = False  # the kernel takes yv too (after acc), a vec3 array of its own elements ("vec_stores")
    # the launch shape (feature "multidim": 1 to 3 dimensions, `LAUNCH_SHAPES`); x, xv and y have this shape, the
    # kernel unpacks ``i0, i1 = wp.tid()`` and its flat thread index ``i`` (parity, acc, xm/xt/ym) is row-major
    launch: Tuple[int, ...] = (THREADS,)
