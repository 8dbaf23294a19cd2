"""The reference: a drawn program run in NumPy float64, not through Warp, and its central differences.

One run evaluates the program at many input points at once (each value is a NumPy array over *variants*):
the unperturbed inputs and, for every input element, the two central-difference neighbours. Kinks are placed
away from every value by `place_thresholds`, so all variants take the same branches; a run where they do
not is reported as `Kinked` (never as a bug).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .nodes import (
    ACC,
    COLS,
    STRUCT,
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
    TileBinary,
    TileLoad,
    TileMap,
    TileReduce,
    TileStore,
    Unpack,
    While,
    shifted,
)

#: Input arrays of every drawn kernel, with their element shapes, and the outputs compared.
INPUTS = {"x": (THREADS,), "xv": (THREADS, 3), "y": (THREADS,), "acc": (ACC,)}
OUTPUTS = ("y", "acc")
#: The arrays a kernel of feature "arrays2d" takes too (after ``acc``), and the output among them.
ARRAY_INPUTS = {"xm": (THREADS, COLS), "xt": (THREADS, COLS, COLS), "ym": (THREADS, COLS)}
ARRAY_OUTPUTS = ("ym",)
#: The vec3 array of a kernel of feature "vec_stores" (after ``acc``): each thread stores and reads its own element.
VEC_INPUTS = {"yv": (THREADS, 3)}
VEC_OUTPUTS = ("yv",)
#: The tile output a kernel of feature "tiles" takes last (thread ``i`` owns ``TILE_SIZE`` elements of it).
TILE_INPUTS = {"yt": (THREADS * TILE_SIZE,)}
TILE_OUTPUTS = ("yt",)


def inputs_of(program: Program) -> dict:
    """The input arrays of ``program``'s kernel, in argument order, with their shapes."""
    return {
        **INPUTS,
        **(VEC_INPUTS if program.vec_out else {}),
        **(ARRAY_INPUTS if program.arrays else {}),
        **(TILE_INPUTS if program.tiles else {}),
    }


def outputs_of(program: Program) -> tuple:
    """The output arrays of ``program``'s kernel, whose cotangents the gradient check pulls back."""
    return (
        OUTPUTS
        + (VEC_OUTPUTS if program.vec_out else ())
        + (ARRAY_OUTPUTS if program.arrays else ())
        + (TILE_OUTPUTS if program.tiles else ())
    )


#: Smallest distance of every kink quantity from its threshold, relative to ``max(1, |threshold|)``.
MARGIN = 0.05
STEP = 1e-6  # central-difference step in float64, relative to max(1, |x|)
TOLERANCE = {"float32": 2e-3, "float64": 1e-5}  # rtol = atol, the values check_gradients uses
ROUNDING_ULPS = 8


def _safe_vec(a):
    """The vector of ``printer.SAFE_FORMS["length"]``: ``a`` with its first component through cosh (length >= 1)."""
    a = np.asarray(a, dtype=np.float64)
    return np.stack(np.broadcast_arrays(np.cosh(a[..., 0]), a[..., 1], a[..., 2]), axis=-1)


UNARY = {
    "sin": np.sin,
    "cos": np.cos,
    "tanh": np.tanh,
    "neg": np.negative,
    "exp": lambda a: np.exp(np.tanh(a)),
    "log": lambda a: np.log(np.cosh(a)),
    "sqrt": lambda a: np.sqrt(np.cosh(a)),
    "transpose": lambda m: np.swapaxes(m, -1, -2),
    "det": lambda m: np.linalg.det(m),
    "spdinv": lambda m: np.linalg.inv(m @ np.swapaxes(m, -1, -2) + np.eye(3)),
    "asin": lambda a: np.arcsin(0.5 * np.tanh(a)),
    "length": lambda a: np.linalg.norm(_safe_vec(a), axis=-1),
    "length_sq": lambda a: np.sum(np.asarray(a) * np.asarray(a), axis=-1),
    "normalize": lambda a: _safe_vec(a) / np.linalg.norm(_safe_vec(a), axis=-1, keepdims=True),
}


def _dot(a, b):
    return np.sum(a * b, axis=-1)


BINARY = {
    "add": np.add,
    "sub": np.subtract,
    "mul": np.multiply,
    "div": lambda a, b: a / np.cosh(b),
    "vadd": np.add,
    "vsub": np.subtract,
    "scale": lambda s, v: s[..., None] * v,
    "dot": _dot,
    "cross": lambda a, b: np.cross(a, b),
    "madd": np.add,
    "mmul": np.matmul,
    "matvec": lambda m, v: np.einsum("...ij,...j->...i", m, v),
    "pow": lambda a, b: (1.5 + np.tanh(a)) ** b,
    "atan2": lambda a, b: np.arctan2(a, np.cosh(b)),
    "cw_mul": np.multiply,
}


#: What a store does to the element (feature "augops": ``-=``, ``*=`` and ``/=``, the divisor printed as a cosh).
UPDATES = {
    "=": lambda old, v: v,
    "+=": lambda old, v: old + v,
    "-=": lambda old, v: old - v,
    "*=": lambda old, v: old * v,
    "/=": lambda old, v: old / np.cosh(v),
}
#: The componentwise kinks of vec3 operands (feature "vec_builtins").
VEC_KINKS = ("vmin", "vmax", "vabs", "vsign")


def rotate(a, angle, v):
    """``v`` rotated by ``angle`` about the unit axis of ``printer.SAFE_AXIS`` (Rodrigues' formula, no quaternion)."""
    a = np.asarray(a, dtype=np.float64)
    axis = np.stack(np.broadcast_arrays(np.cosh(a[..., 0]), a[..., 1], a[..., 2]), axis=-1)
    u = axis / np.linalg.norm(axis, axis=-1, keepdims=True)
    c, s = np.cos(angle)[..., None], np.sin(angle)[..., None]
    return v * c + np.cross(u, v) * s + u * _dot(u, v)[..., None] * (1.0 - c)


class Kinked(Exception):
    """Variants of one run took different sides of a kink: the program is not differentiable there."""


class _Break(Exception):
    """``break``: leaves the innermost loop (all variants at once: the condition that led here is uniform)."""


class _Continue(Exception):
    """``continue``: on to the innermost loop's next iteration."""


@dataclass
class Run:
    """Final ``y`` and ``acc`` of every variant, and the values each kink site met (unperturbed variant)."""

    outputs: dict
    sites: dict


class Interpreter:
    """Runs one kernel over the variants. ``inputs`` maps each parameter to its array ``(variants, *shape)``; `run`
    reads and writes it in place when given as ``memory`` (a launch sequence's arrays, two parameters possibly one
    array: ``programs.oracle``), else copies. With ``track``, the elements each parameter's loads read and its
    stores wrote are collected (``reads``, ``writes``: sets of ``(parameter, flat element)``)."""

    def __init__(self, program: Program, thresholds, inputs: dict, track: bool = False):
        self.program = program
        self.thresholds = thresholds
        self.inputs = inputs  # name -> array (variants, *INPUTS[name])
        self.sites = {}
        self.track = track
        self.reads: set = set()
        self.writes: set = set()
        self.overwrites: dict = {}  # (parameter, element) -> how many stores replaced it (not +=, -=, atomics)

    def run(self, memory: dict | None = None) -> Run:
        """The launch over every thread; ``memory``: the arrays to read and write in place (default: copies)."""
        memory = {k: v.copy() for k, v in self.inputs.items()} if memory is None else memory
        self.inputs = memory
        variants = memory["x"].shape[0]
        y, acc = memory["y"], memory["acc"]
        ym, yt, self.yv = memory.get("ym"), memory.get("yt"), memory.get("yv")
        for i in range(THREADS):
            self.i, self.y, self.acc, self.ym, self.yt, self.loops = i, y, acc, ym, yt, {}
            self.env = {}
            for name, init in self.program.scalars:
                self.env[name] = self.scalar(self.expr(init), variants)
            for name, init in self.program.vectors:
                self.env[name] = np.broadcast_to(self.expr(init), (variants, 3)).astype(np.float64)
            for name, init in self.program.matrices:
                self.env[name] = np.broadcast_to(self.expr(init), (variants, 3, 3)).astype(np.float64)
            for name, inits in self.program.structs:  # a struct: a dict of its fields, replaced on every update
                self.env[name] = {
                    field: self.field_value(kind, self.expr(init), variants)
                    for (field, kind), init in zip(STRUCT_FIELDS, inits)
                }
            self.block(self.program.body)
        outputs = {"y": y, "acc": acc, "yv": self.yv, "ym": ym, "yt": yt}
        return Run({k: v for k, v in outputs.items() if v is not None}, self.sites)

    def _read(self, name: str, element: int) -> None:
        if self.track:
            self.reads.add((name, element))

    def _wrote(self, name: str, element: int, op: str = "=") -> None:
        if self.track:
            self.writes.add((name, element))
            if op not in ("+=", "-=", "atomic"):
                self.overwrites[(name, element)] = self.overwrites.get((name, element), 0) + 1

    @staticmethod
    def field_value(kind, value, variants):
        """A struct field's value over the variants: a scalar or a vec3."""
        shape = (variants,) if kind == "f" else (variants, 3)
        return np.broadcast_to(np.asarray(value, dtype=np.float64), shape).astype(np.float64)

    @staticmethod
    def scalar(value, variants):
        return np.broadcast_to(np.asarray(value, dtype=np.float64), (variants,)).copy()

    def side(self, site: int, q: np.ndarray) -> np.ndarray:
        """Which side of its threshold ``q`` lies on (per variant); record ``q`` for threshold placement."""
        self.sites.setdefault(site, []).append(float(q[0]))
        t = self.thresholds.get(site)
        if t is None:  # not placed yet: take the upper side
            return np.ones(q.shape, dtype=bool)
        above = q > t
        return above

    def expr(self, e):
        if isinstance(e, Const):
            return np.float64(e.value)
        if isinstance(e, StaticConst):
            return np.float64(e.lhs * e.rhs)
        if isinstance(e, Local):
            return self.env[e.name]
        if isinstance(e, LoopIndex):
            return np.float64(self.loops[e.name])
        if isinstance(e, Load):
            if e.array == "y":
                self._read("y", self.i)
                return self.y[:, self.i].copy()
            if e.array == "yv":
                self._read("yv", self.i)
                return self.yv[:, self.i].copy()
            if e.array == "ym":
                return self.ym[(slice(None), self.i) + tuple(e.index)].copy()
            if e.array in ("x", "xv"):  # the launch's shape decides which element (`nodes.shifted`)
                element = shifted(self.i, e.offset, self.program.launch)
                self._read(e.array, element)
                return self.inputs[e.array][:, element].copy()  # a copy: x may be y's array (a program's alias)
            return self.inputs[e.array][(slice(None), (self.i + e.offset) % THREADS) + tuple(e.index)]
        if isinstance(e, Binary):
            return BINARY[e.op](self.expr(e.lhs), self.expr(e.rhs))
        if isinstance(e, Kink) and e.op in VEC_KINKS:
            return self.vec_kink(e)
        if isinstance(e, Kink):
            a = self.expr(e.lhs)
            if e.op == "abs":
                above = self.side(e.site, np.atleast_1d(a) * np.ones(self.inputs["x"].shape[0]))
                _uniform(above)
                t = self.thresholds.get(e.site, 0.0)
                return a - t if above[0] else t - a
            if e.op == "sign":  # rhs * sign(a - t): sign is 1 above the threshold, -1 below (t is never met)
                above = self.side(e.site, np.atleast_1d(a) * np.ones(self.inputs["x"].shape[0]))
                _uniform(above)
                return self.expr(e.rhs) * (1.0 if above[0] else -1.0)
            rhs = self.expr(e.rhs)
            above = self.side(e.site, (a - rhs) * np.ones(self.inputs["x"].shape[0]))  # a > rhs + t
            _uniform(above)
            b = rhs + self.thresholds.get(e.site, 0.0)
            return (a if above[0] else b) if e.op == "max" else (b if above[0] else a)
        if isinstance(e, Component):
            return self.expr(e.vec)[_at(e.index)]
        if isinstance(e, (MakeVec, MakeMat)):
            variants = self.inputs["x"].shape[0]
            items = np.stack([self.scalar(self.expr(a), variants) for a in e.items], axis=-1)
            return items if isinstance(e, MakeVec) else items.reshape(variants, 3, 3)
        if isinstance(e, Rotate):
            moved = rotate(self.expr(e.axis), self.expr(e.angle), self.expr(e.vec))
            return moved + self.expr(e.offset) if e.op == "transform_point" else moved
        if isinstance(e, Field):  # of a struct local or parameter, or of a struct a helper returns
            return (self.env[e.struct] if isinstance(e.struct, str) else self.expr(e.struct))[e.field]
        if isinstance(e, MakeStruct):  # a struct-returning helper's body: a new dict of its fields
            variants = self.inputs["x"].shape[0]
            return {
                field: self.field_value(kind, self.expr(item), variants)
                for (field, kind), item in zip(STRUCT_FIELDS, e.items)
            }
        if isinstance(e, StructArg):  # passed by value: the helper only reads it
            return self.env[e.name]
        if isinstance(e, Call):
            helper = self.program.helpers[e.helper]
            return self.call(helper, [self.expr(a) for a in e.args])
        if isinstance(e, Select):  # both sides are pure, so evaluating only the chosen one is exact
            return self.expr(e.lhs if self.holds(e.cond) else e.rhs)
        if isinstance(e, (TileLoad, TileMap, TileBinary, TileReduce)):
            return self.tile(e)
        return UNARY[e.op](self.expr(e.arg))

    def vec_kink(self, e):
        """A componentwise kink of vec3 operands (feature "vec_builtins"): each component on one side of the
        broadcast threshold for every variant (else `Kinked`)."""
        a = np.asarray(self.expr(e.lhs), dtype=np.float64) * np.ones((self.inputs["x"].shape[0], 3))
        t = self.thresholds.get(e.site, 0.0)
        if e.op in ("vabs", "vsign"):
            q = a
        else:
            b = self.expr(e.rhs) * np.ones_like(a)
            q = a - b
        self.sites.setdefault(e.site, []).extend(float(v) for v in q[0])
        above = q > t if e.site in self.thresholds else np.ones(q.shape, dtype=bool)
        for c in range(3):
            _uniform(above[:, c])
        if e.op == "vabs":
            return np.where(above, a - t, t - a)
        if e.op == "vsign":
            return self.expr(e.rhs) * np.where(above, 1.0, -1.0)
        if e.op == "vmax":
            return np.where(above, a, b + t)
        return np.where(above, b + t, a)  # vmin

    def tile(self, e):
        """A tile expression's value over the variants, ``(variants, TILE_SIZE)``; a `TileReduce`'s, a scalar's."""
        if isinstance(e, TileLoad):
            if e.array == "yt":
                return self.yt[:, self._region()].copy()
            return self.inputs[e.array][:, :TILE_SIZE]
        if isinstance(e, TileMap):
            return UNARY[e.op](self.expr(e.arg))
        if isinstance(e, TileReduce):
            value = self.expr(e.tile)
            return value.sum(axis=-1) if e.op == "sum" else value[..., e.index]
        if e.op == "scale":
            return np.asarray(self.expr(e.lhs), dtype=np.float64)[..., None] * self.expr(e.rhs)
        return BINARY[e.op](self.expr(e.lhs), self.expr(e.rhs))

    def _region(self) -> slice:
        return slice(self.i * TILE_SIZE, (self.i + 1) * TILE_SIZE)

    def call(self, helper, args):
        """The helper's value at ``args``; a tuple helper's two values as a pair."""
        saved = self.env
        self.env = {f"p{j}": a for j, a in enumerate(args[: helper.arity])}
        if helper.struct:
            self.env["s"] = args[helper.arity]
        try:
            if helper.second is not None:
                return self.expr(helper.body), self.expr(helper.second)
            return self.expr(helper.body)
        finally:
            self.env = saved

    def stmt(self, s):
        if isinstance(s, Assign) and s.type == STRUCT:  # s0 = h(...): the struct replaced whole
            self.env[s.name] = dict(self.expr(s.expr))
        elif isinstance(s, Assign):
            value = self.expr(s.expr)
            value = value if s.op == "=" else self.env[s.name] + value
            self.env[s.name] = np.broadcast_to(value, self.env[s.name].shape).astype(np.float64)
        elif isinstance(s, SetComponent):
            v = self.env[s.name].copy()
            value = self.expr(s.expr)
            v[_at(s.index)] = UPDATES[s.op](v[_at(s.index)], value)
            self.env[s.name] = v
        elif isinstance(s, SetField):
            fields = dict(self.env[s.struct])
            value = self.expr(s.expr)
            value = UPDATES[s.op](fields[s.field], value)
            kind = dict(STRUCT_FIELDS)[s.field]
            fields[s.field] = self.field_value(kind, value, self.inputs["x"].shape[0])
            self.env[s.struct] = fields
        elif isinstance(s, Store):
            value = self.expr(s.expr)
            if s.op == "atomic":
                self._read("acc", self.i % ACC)
                self._wrote("acc", self.i % ACC, "atomic")
                self.acc[:, self.i % ACC] += value
            elif s.array == "ym":
                at = (slice(None), self.i) + tuple(s.index)
                self.ym[at] = value if s.op == "=" else self.ym[at] + value
            elif s.array == "yv":  # a component (index (c,)) or the whole vector
                at = (slice(None), self.i) + tuple(s.index)
                self.yv[at] = UPDATES[s.op](self.yv[at], value)
                self._wrote("yv", self.i, s.op)
            else:
                self.y[:, self.i] = UPDATES[s.op](self.y[:, self.i], value)
                self._wrote("y", self.i, s.op)
        elif isinstance(s, TileStore):
            value = self.expr(s.tile)
            region = (slice(None), self._region())
            self.yt[region] = value if s.op == "=" else self.yt[region] + value
        elif isinstance(s, CallStore):
            self.y[:, self.i] = self.call(self.program.helpers[s.helper], [self.expr(a) for a in s.args])
            self._wrote("y", self.i)
        elif isinstance(s, Unpack):  # both values are computed before either local is assigned
            values = self.call(self.program.helpers[s.helper], [self.expr(a) for a in s.args])
            for name, value in zip(s.targets, values):
                self.env[name] = np.broadcast_to(value, self.env[name].shape).astype(np.float64)
        elif isinstance(s, If):
            self.block(s.body if self.holds(s.cond) else s.orelse)
        elif isinstance(s, For):
            self.loop(s.var, range(self.program.loop_count if s.runtime else s.count), s.body)
        elif isinstance(s, While):  # the counter moves first: iterations read 1 ... count
            self.loop(s.var, range(1, s.count + 1), s.body)
        elif isinstance(s, Jump):
            raise _Break() if s.kind == "break" else _Continue()
        else:
            raise TypeError(f"oracle: unknown statement {s!r}")

    def block(self, stmts):
        for s in stmts:
            self.stmt(s)

    def holds(self, cond) -> bool:
        """Whether ``cond`` holds on this thread (the same for every variant, or `Kinked`)."""
        if cond.kind == "parity":
            return self.i % 2 == 0
        if cond.kind == "counter":
            return self.loops[cond.var] == cond.value
        above = self.side(cond.site, self.expr(cond.expr) * np.ones(self.inputs["x"].shape[0]))
        return bool(_uniform(above))

    def loop(self, var: str, counts, body):
        for k in counts:
            self.loops[var] = k
            try:
                self.block(body)
            except _Continue:
                continue
            except _Break:
                break
        self.loops.pop(var, None)


def _at(index) -> tuple:
    """A component's index over the variants axis: ``v[..., 1]``, ``m[..., 0, 2]``."""
    return (Ellipsis,) + (index if isinstance(index, tuple) else (index,))


def _uniform(above: np.ndarray) -> bool:
    if above.all():
        return True
    if not above.any():
        return False
    raise Kinked("central-difference neighbours fall on different sides of a kink")


def run(program: Program, thresholds, inputs: dict) -> Run:
    """Run ``program`` on one point: ``inputs`` maps each of ``INPUTS`` to its array (float64)."""
    batched = {k: np.asarray(v, dtype=np.float64)[None] for k, v in inputs.items()}
    result = Interpreter(program, thresholds, batched).run()
    return Run({k: v[0] for k, v in result.outputs.items()}, result.sites)


def place_thresholds(program: Program, inputs: dict, placements) -> dict | None:
    """Thresholds for every kink site, each at least ``MARGIN`` away from every value its site meets.

    Sites are placed one at a time in the order the program meets them; ``placements`` (one int per site,
    drawn) picks below all values, above all, or in the widest gap. Returns None when no placement keeps
    every margin (rare: a later site moved an earlier one's values).
    """
    thresholds = {}
    for _ in range(64):
        sites = run(program, thresholds, inputs).sites
        todo = [s for s in sites if s not in thresholds]
        if not todo:
            break
        site = todo[0]
        thresholds[site] = _place(sorted(sites[site]), placements[site % len(placements)])
    sites = run(program, thresholds, inputs).sites
    for site, values in sites.items():
        t = thresholds[site]
        if min(abs(q - t) for q in values) < MARGIN * max(1.0, abs(t)) or not np.isfinite(values).all():
            return None
    return thresholds


def _place(values: list, placement: int) -> float:
    lo, hi = values[0], values[-1]
    gaps = [(b - a, (a + b) / 2) for a, b in zip(values, values[1:])]
    width, middle = max(gaps, default=(0.0, 0.0))
    choice = placement % 3
    if choice == 2 and width > 4 * MARGIN * max(1.0, abs(middle)):
        t = middle
    elif choice == 1:
        t = hi + 0.25 + 0.1 * abs(hi)
    else:
        t = lo - 0.25 - 0.1 * abs(lo)
    return float(np.round(t, 3))


@dataclass
class Reference:
    """Forward values and central-difference vector-Jacobian products of one program at one point."""

    outputs: dict  # name -> final values (float64)
    grads: dict  # input name -> d(sum(c * outputs)) / d input, by central differences
    rounding: dict  # input name -> rounding allowance of each difference


def reference(program: Program, thresholds, inputs: dict, cotangents: dict) -> Reference:
    """Forward run plus central differences of ``sum(c * outputs)`` along every input element, in one batch."""
    shapes, outputs = inputs_of(program), outputs_of(program)
    names = list(shapes)
    sizes = [int(np.prod(shapes[n])) for n in names]
    total = sum(sizes)
    flat = np.concatenate([np.asarray(inputs[n], dtype=np.float64).ravel() for n in names])
    steps = STEP * np.maximum(1.0, np.abs(flat))
    points = np.repeat(flat[None], 2 * total + 1, axis=0)
    points[1 + np.arange(total), np.arange(total)] += steps
    points[1 + total + np.arange(total), np.arange(total)] -= steps
    batched, start = {}, 0
    for name, size in zip(names, sizes):
        batched[name] = points[:, start : start + size].reshape((-1,) + shapes[name])
        start += size
    result = Interpreter(program, thresholds, batched).run()
    flat_sum = lambda a: a.reshape(a.shape[0], -1).sum(axis=1)  # noqa: E731
    terms = sum(flat_sum(cotangents[n] * result.outputs[n]) for n in outputs)
    scale = sum(flat_sum(np.abs(cotangents[n] * result.outputs[n])) for n in outputs)
    fd = (terms[1 : 1 + total] - terms[1 + total :]) / (2 * steps)
    rounding = ROUNDING_ULPS * np.finfo(np.float64).eps * scale[0] / steps
    grads, rounds, start = {}, {}, 0
    for name, size in zip(names, sizes):
        grads[name] = fd[start : start + size].reshape(shapes[name])
        rounds[name] = rounding[start : start + size].reshape(shapes[name])
        start += size
    return Reference({n: result.outputs[n][0] for n in outputs}, grads, rounds)


def mismatch(actual: np.ndarray, expected: np.ndarray, dtype: str, rounding=0.0) -> float:
    """Largest ``|actual - expected| / tolerance`` (> 1 is a mismatch), the tolerance per element as
    ``check_gradients`` derives it: ``atol * max(1, max|expected|) + rtol * |expected| + rounding``."""
    tol = TOLERANCE[dtype]
    expected = np.asarray(expected, dtype=np.float64)
    actual = np.asarray(actual, dtype=np.float64)
    if not np.isfinite(actual).all():
        return float("inf")
    allowed = tol * max(1.0, float(np.max(np.abs(expected), initial=0.0))) + tol * np.abs(expected) + rounding
    return float(np.max(np.abs(actual - expected) / allowed, initial=0.0))
