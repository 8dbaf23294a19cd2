"""Cut a failing case down to a minimal kernel that fails the same way, many candidates per Warp build.

Each round builds every one-step simplification of the current program in one module (``batch``): drop a
statement, inline a branch or a loop body, replace an expression by one of its operands or a constant, drop a
helper's use. The smallest candidate that still fails with the same variant, Tape and kind (and is still worse
than stock, if the failure was) wins; rounds repeat until none does (a local minimum), or the round budget is
spent, or the campaign's time (`budget.Budget`: a round takes only the candidates that fit in it).
"""

from __future__ import annotations

import dataclasses

from . import batch
from .budget import Budget
from .grammar import with_body
from .nodes import (
    MAT33,
    SCALAR,
    STRUCT,
    THREADS,
    TILE,
    VEC3,
    Binary,
    Call,
    CallStore,
    Component,
    Cond,
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
    Rotate,
    Select,
    SetField,
    StaticConst,
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

MAX_CANDIDATES = 48  # per round (one build)
#: A store's label by its op: ``-=`` accumulates as ``+=`` does; ``*=`` and ``/=`` read the element they store.
STORE_LABELS = {
    "=": "store",
    "+=": "augstore",
    "-=": "augstore",
    "*=": "mulstore",
    "/=": "divstore",
    "atomic": "atomic_add",
}


def size(program) -> int:
    """Nodes, plus one per launch dimension beyond the first (a 1-D launch is the smaller program)."""
    return sum(1 for _ in iter_nodes(program)) + len(getattr(program, "launch", (0,))) - 1


def constructs(program) -> tuple:
    """The constructs a program uses, as sorted labels: what a failure is deduplicated by."""
    labels = set()
    for node in iter_nodes(program):
        if isinstance(node, For):
            labels.add("for(runtime)" if node.runtime else "for(static)")
            if node.static:
                labels.add("wp.static")
        elif isinstance(node, StaticConst):
            labels.add("wp.static")
        elif isinstance(node, While):
            labels.add("while")
        elif isinstance(node, Field):
            labels.add("struct field")
        elif isinstance(node, SetField):
            labels.add(f"setfield({node.op})")
        elif isinstance(node, StructArg):
            labels.add("struct arg")
        elif isinstance(node, StructCall):
            labels.add("struct return")
        elif isinstance(node, Jump):
            labels.add(node.kind)
        elif isinstance(node, (Select, Rotate)):
            labels.add(node.form if isinstance(node, Select) else node.op)
        elif isinstance(node, If):
            labels.add(f"if({node.cond.kind})")
        elif isinstance(node, Load) and node.array in ("y", "yv"):
            labels.add(f"readback {node.array}[i]")
        elif isinstance(node, Load) and node.array == "ym":
            labels.add("readback ym[i, c]")
        elif isinstance(node, Load) and node.index:
            labels.add(f"load {node.array}")
        elif isinstance(node, (Unary, Binary, Kink)):
            labels.add(node.op)
        elif type(node).__name__ in ("Store",):
            label = STORE_LABELS[node.op]
            if node.array == "yv":
                labels.add(f"{label} yv.c" if node.index else f"{label} yv")
            else:
                labels.add(f"{label} {node.array}" if node.index else label)
        elif type(node).__name__ == "Assign" and node.type == STRUCT:
            labels.add("assign struct")
        elif type(node).__name__ in ("Assign", "SetComponent"):
            labels.add(f"{type(node).__name__.lower()}({node.op})")
        elif isinstance(node, TileLoad):
            labels.add("tile readback yt" if node.array == "yt" else "tile_load")
        elif isinstance(node, TileMap):
            labels.add(f"tile_map({node.op})")
        elif isinstance(node, TileBinary):
            labels.add(f"tile {node.op}")
        elif isinstance(node, TileReduce):
            labels.add("tile_sum" if node.op == "sum" else "tile_extract")
        elif isinstance(node, TileStore):
            labels.add("tile_store" if node.op == "=" else "tile_atomic_add")
        elif isinstance(node, (CallStore, Call, MakeVec, MakeMat, Component, Unpack)):
            labels.add(type(node).__name__.lower())
    if program.structs:
        labels.add("struct")
    if len(program.launch) > 1:
        labels.add(f"launch {len(program.launch)}d")
    for helper in program.helpers:  # what the helpers are: a func_grad, a call of a helper from a helper
        if helper.grad:
            labels.add("func_grad")
        if helper.replay:
            labels.add("func_replay")
        if helper.returns_struct:
            labels.add("struct return")
        for node in iter_nodes((helper.body, helper.second)):
            if isinstance(node, Call):
                labels.add("nested call(func_grad)" if program.helpers[node.helper].grad else "nested call")
    return tuple(sorted(labels))


def _blocks(program):
    """Every statement block: (path, block), path a tuple of (node-or-program, field) steps."""
    found = []

    def visit(owner_path, stmts):
        found.append((owner_path, stmts))
        for k, s in enumerate(stmts):
            if isinstance(s, If):
                visit(owner_path + ((k, "body"),), s.body)
                visit(owner_path + ((k, "orelse"),), s.orelse)
            elif isinstance(s, (For, While)):
                visit(owner_path + ((k, "body"),), s.body)

    visit((), program.body)
    return found


def _replace_block(stmts, path, new):
    if not path:
        return new
    (k, name), rest = path[0], path[1:]
    inner = _replace_block(getattr(stmts[k], name), rest, new)
    return stmts[:k] + (dataclasses.replace(stmts[k], **{name: inner}),) + stmts[k + 1 :]


def statement_candidates(program):
    for path, stmts in _blocks(program):
        for k, s in enumerate(stmts):
            yield dataclasses.replace(program, body=_replace_block(program.body, path, stmts[:k] + stmts[k + 1 :]))
            if isinstance(s, If):
                for inner in (s.body, s.orelse):
                    new = stmts[:k] + inner + stmts[k + 1 :]
                    yield dataclasses.replace(program, body=_replace_block(program.body, path, new))
                if s.cond.kind == "threshold":
                    new = stmts[:k] + (dataclasses.replace(s, cond=Cond("parity")),) + stmts[k + 1 :]
                    yield dataclasses.replace(program, body=_replace_block(program.body, path, new))
            if isinstance(s, (For, While)) and not _own_jumps(s.body):  # a break must stay in a loop
                body = _inlined(s.body, s.var, 0.0 if isinstance(s, For) else 1.0)
                yield dataclasses.replace(
                    program, body=_replace_block(program.body, path, stmts[:k] + body + stmts[k + 1 :])
                )
            if isinstance(s, While) and s.count > 1:
                new = stmts[:k] + (dataclasses.replace(s, count=s.count - 1),) + stmts[k + 1 :]
                yield dataclasses.replace(program, body=_replace_block(program.body, path, new))
            if isinstance(s, For):
                if s.runtime:
                    new = (
                        stmts[:k] + (dataclasses.replace(s, runtime=False, count=program.loop_count),) + stmts[k + 1 :]
                    )
                    yield dataclasses.replace(program, body=_replace_block(program.body, path, new))
                elif s.count > 1:
                    new = stmts[:k] + (dataclasses.replace(s, count=s.count - 1),) + stmts[k + 1 :]
                    yield dataclasses.replace(program, body=_replace_block(program.body, path, new))
                if s.static:
                    new = stmts[:k] + (dataclasses.replace(s, static=False),) + stmts[k + 1 :]
                    yield dataclasses.replace(program, body=_replace_block(program.body, path, new))
    yield from _unused_dropped(program)
    if len(program.launch) > 1:
        yield dataclasses.replace(program, launch=(THREADS,))
    if program.loop_count > 1:
        yield dataclasses.replace(program, loop_count=program.loop_count - 1)
    if program.vectors:
        yield dataclasses.replace(program, vectors=tuple((n, Load("xv")) for n, _ in program.vectors))
    if program.matrices and any(init != IDENTITY for _, init in program.matrices):
        yield dataclasses.replace(program, matrices=tuple((n, IDENTITY) for n, _ in program.matrices))
    yield dataclasses.replace(program, scalars=tuple((n, Const(1.0)) for n, _ in program.scalars))


def _own_jumps(stmts) -> bool:
    """Whether ``stmts`` hold a ``break``/``continue`` of their own loop (not of a loop nested inside)."""
    for s in stmts:
        if isinstance(s, Jump) or (isinstance(s, If) and (_own_jumps(s.body) or _own_jumps(s.orelse))):
            return True
    return False


def _inlined(body, var: str, first: float):
    """A loop's body run once outside it: its counter reads ``first``; a condition on the counter becomes parity."""

    def replace(n):
        if isinstance(n, LoopIndex) and n.name == var:
            return Const(first)
        if isinstance(n, Cond) and n.kind == "counter" and n.var == var:
            return Cond("parity")
        return n

    return rebuild(body, replace)


def _unused_dropped(program):
    """``program`` without its unused helpers and locals, if it has any."""
    nodes = list(iter_nodes(program.body)) + [
        n for _, init in program.scalars + program.vectors + program.matrices for n in iter_nodes(init)
    ]
    nodes += [n for h in program.helpers for n in iter_nodes((h.body, h.second))]
    called = {n.helper for n in nodes if isinstance(n, (Call, CallStore, Unpack))}
    named = {n.name for n in nodes if isinstance(n, Local)}
    named |= {n.name for n in iter_nodes(program.body) if type(n).__name__ in ("Assign", "SetComponent")}
    named |= {t for n in iter_nodes(program.body) if isinstance(n, Unpack) for t in n.targets}
    if len(called) < len(program.helpers):
        keep = sorted(called)
        renumber = {old: new for new, old in enumerate(keep)}
        helpers = tuple(program.helpers[k] for k in keep)
        body = rebuild(
            program.body,
            lambda n: (
                dataclasses.replace(n, helper=renumber[n.helper]) if isinstance(n, (Call, CallStore, Unpack)) else n
            ),
        )
        helpers = rebuild(
            helpers, lambda n: dataclasses.replace(n, helper=renumber[n.helper]) if isinstance(n, Call) else n
        )
        yield dataclasses.replace(program, helpers=helpers, body=body)
    scalars = tuple((n, e) for n, e in program.scalars if n in named)
    vectors = tuple((n, e) for n, e in program.vectors if n in named)
    matrices = tuple((n, e) for n, e in program.matrices if n in named)
    if scalars != program.scalars or vectors != program.vectors or matrices != program.matrices:
        yield dataclasses.replace(program, scalars=scalars, vectors=vectors, matrices=matrices)


_MATRIX_OPS = {"madd", "mmul", "transpose", "spdinv"}
_VECTOR_OPS = {"vadd", "vsub", "scale", "cross", "matvec", "normalize", "cw_mul", "vmin", "vmax", "vabs", "vsign"}
IDENTITY = MakeMat(tuple(Const(1.0 if k in (0, 4, 8) else 0.0) for k in range(9)))
_LEAF = {SCALAR: Const(1.0), VEC3: Load("xv"), MAT33: IDENTITY, TILE: TileLoad("x")}


def _type(node) -> str:
    """What an expression is: `SCALAR`, `VEC3` or `MAT33`."""
    if isinstance(node, Local):
        return node.type
    if isinstance(node, Field):
        return VEC3 if node.field == "v" else SCALAR
    if isinstance(node, (StructArg, StructCall)):
        return STRUCT  # never an option for a scalar, never replaced
    if isinstance(node, Load):
        return VEC3 if node.array in ("xv", "yv") else SCALAR
    if isinstance(node, Kink):
        return VEC3 if node.op in _VECTOR_OPS else SCALAR
    if isinstance(node, (MakeVec, Rotate)):
        return VEC3
    if isinstance(node, MakeMat):
        return MAT33
    if isinstance(node, (TileLoad, TileMap, TileBinary)):
        return TILE
    if isinstance(node, (Unary, Binary)):
        return MAT33 if node.op in _MATRIX_OPS else VEC3 if node.op in _VECTOR_OPS else SCALAR
    return SCALAR  # Const, LoopIndex, Component, Call, Kink, Select, TileReduce


def expression_candidates(program):
    """Each expression node replaced, one at a time, by an operand of its type or by a constant/leaf (a field of
    a struct a helper returns too, ``h(...).a``; a struct-valued call never: its reads and assignment go instead,
    and the helper with them). In a helper's body only scalars become a leaf (``xv[i]`` is the kernel's)."""
    kinds = (Unary, Binary, Kink, Call, Component, MakeVec, MakeMat, Rotate, Select, StaticConst, TileMap, TileBinary)
    kinds += (TileReduce, TileLoad)
    targets = [n for n in iter_nodes(program) if isinstance(n, kinds) or _returned_field(n)]
    in_helpers = {id(n) for n in iter_nodes(program.helpers)}
    for target in targets:
        kind = _type(target)
        if kind == STRUCT:
            continue
        options = [c for c in _operands(target) if _type(c) == kind]
        if target != _LEAF[kind] and (kind == SCALAR or id(target) not in in_helpers):
            options.append(_LEAF[kind])
        for option in options:
            yield _substitute(program, target, option)


def _returned_field(node) -> bool:
    """Whether ``node`` reads a field of the struct a helper returns (``h(...).a``)."""
    return isinstance(node, Field) and isinstance(node.struct, StructCall)


def _operands(node):
    if isinstance(node, (Unary, TileMap)):
        return [node.arg]
    if isinstance(node, TileReduce):
        return [node.tile]
    if isinstance(node, (Binary, Kink, Select, TileBinary)):
        return [node.lhs, node.rhs]
    if isinstance(node, Rotate):
        return [node.vec, node.axis, node.offset, node.angle]
    if isinstance(node, (Call, MakeVec, MakeMat)):
        return list(node.args if isinstance(node, Call) else node.items)
    if isinstance(node, Component):
        return [node.vec]
    return []


def _substitute(program, target, option):
    """``program`` with the node ``target`` (by identity) replaced by ``option``."""
    return _rebuild_identity(program, target, option)


def _rebuild_identity(node, target, option):
    if node is target:
        return option
    if isinstance(node, tuple):
        return tuple(_rebuild_identity(item, target, option) for item in node)
    if not dataclasses.is_dataclass(node):
        return node
    changes = {}
    for field in dataclasses.fields(node):
        value = getattr(node, field.name)
        new = _rebuild_identity(value, target, option)
        if new is not value:
            changes[field.name] = new
    return dataclasses.replace(node, **changes) if changes else node


def fails_like(found, failure) -> bool:
    """Whether ``found`` (a `batch.Failure`) fails as ``failure`` does: same variant, Tape and kind, and worse
    than stock if ``failure`` is (a package path wrong where stock Warp on a plain Tape is right)."""
    return found.path == failure.path and found.kind == failure.kind and (found.worse or not failure.worse)


def shrink(failure, *, rounds: int = 12, device: str = "cpu", log=None, prelude: str = "", budget=None) -> list:
    """The smallest case found that fails like ``failure`` (`fails_like`: same variant, Tape and kind, still
    worse than stock if it was): its failures, every path's (the first is ``failure``'s own). ``prelude``: extra
    source for each round's module, as `batch.check_batch` takes it (a mutant's helpers or salt). With ``budget``
    (`budget.Budget`), each round takes the candidates that fit in the time left, smallest first; a failure it
    leaves no time for is recorded as cut ("not shrunk", or "shrunk in part" after some rounds)."""
    budget, best = budget or Budget(), [failure]
    for done in range(rounds):
        program = best[0].case.program
        seen, candidates = {program}, []
        programs = sorted(list(statement_candidates(program)) + list(expression_candidates(program)), key=size)
        for candidate in programs:
            if candidate in seen or size(candidate) >= size(program):
                continue
            seen.add(candidate)
            case = with_body(best[0].case, candidate)
            if case is not None:
                candidates.append(case)
            if len(candidates) >= MAX_CANDIDATES:
                break
        if not candidates:
            break
        found, complete = budget.shrink_round(
            candidates,
            lambda cases, stop, each: batch.check_batch(cases, device, prelude=prelude, stop=stop, each=each),
            f"shrinking: round {done + 1} of {rounds}",
        )
        same = [f for f in found or () if fails_like(f, failure)]
        if same:
            winner = min(same, key=lambda f: size(f.case.program))
            best = [winner] + [f for f in found if f.case is winner.case and f is not winner]
            if log is not None:
                log(f"shrunk to {size(winner.case.program)} nodes")
        elif not complete:  # not a local minimum: the time left did not check every candidate
            budget.cut("failure", "shrunk in part" if done else "not shrunk")
            break
        else:
            break
    return best
