"""hypothesis strategies that draw launch sequences (`programs.nodes`) over the kernel grammar (``fuzz.grammar``).

A program draws its dtype and launch shape, its arrays, a few ``@wp.func`` helpers every kernel may call, 1 to 3
kernels (each a kernel of the kernel grammar, smaller) and 1 to 6 launches of them over the shared arrays, with
copies and constant writes between them, before the Tape and after it. Every drawn program is deterministic and
differentiable at its data: kinks are placed away from the values every launch meets (`oracle.place_thresholds`),
no thread reads an element another thread writes (an array passed under two parameters only to a kernel that
reads it at the thread's own element), outputs stay below ``OUTPUT_BOUND``, and a ``retain_grad`` array is never
stored over after a recorded step used the element (`oracle`'s rule 4).
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

import numpy as np
from hypothesis import assume
from hypothesis import strategies as st

from .... import _compat
from .. import grammar as kernel_grammar
from ..grammar import (
    _BOOL,
    _INDEX,
    _VALUES,
    CONSTANTS,
    MULTIDIM_DRAWS,
    OUTPUT_BOUND,
    _item,
    _pick,
    kernel_program,
    number_sites,
)
from ..nodes import ACC, THREADS, Binary, Call, Load, Store
from ..walk import iter_nodes, rebuild
from . import oracle
from .nodes import ALIASES, PARAMETER_KINDS, Array, Copy, Fill, Kernel, Launch, Program, SetData
from .shrink import normalized

#: What a kernel's body may use (passed to the kernel grammar), then the launch sequence's own constructs.
KERNEL_FEATURES = (
    "float32",
    "float64",
    "vec3",
    "smooth",
    "kinks",
    "locals",
    "branches",
    "stores",
    "augstores",
    "readback",
    "atomics",
    "helpers",
    "helper_stores",
    "augops",
    "vec_stores",
    "vec_builtins",
)
SEQUENCE_FEATURES = (
    "multidim",  # launches of 1 to 3 dimensions (every launch of a program has its shape)
    "aliasing",  # one array passed as x and y (or xv and yv) to a kernel that reads it at the thread's own element
    "copies",  # wp.copy(dest, src, dest_offset=, src_offset=, count=) between launches, recorded
    "constant_writes",  # fill_, zero_, assign between launches inside the Tape (never recorded)
    "setup",  # copies, fill_, zero_, assign before the Tape
    "mutations",  # fill_, zero_, assign, wp.copy after the Tape, before backward() (mutation after record)
    "retain_grad",  # arrays with retain_grad=True (Warp >= 1.13)
    "struct_arrays",  # kernels reaching some array parameters through a @wp.struct argument (s.y[i])
    "forward_only",  # kernels with enable_backward=False, calling the helpers the differentiated ones call
    "module_forward_only",  # the module's enable_backward=False, one kernel opting back in (enable_backward=True)
)
PROGRAM_FEATURES = KERNEL_FEATURES + SEQUENCE_FEATURES
#: Drawn when none are named: everything.
DEFAULT_PROGRAM_FEATURES = frozenset(PROGRAM_FEATURES)
#: What the shared helpers may use: no kink sites (a helper's thresholds would be one per kernel calling it).
HELPER_FEATURES = frozenset({"float32", "float64", "smooth", "helpers", "helper_stores"})


@dataclass(frozen=True)
class ProgramCase:
    """A drawn program and the point it is checked at: thresholds (``(kernel, site)`` -> t), the arrays' drawn
    data and the cotangents of their final values (array name -> flat float64 values, exact in float32)."""

    program: Program
    thresholds: dict
    data: dict
    cotangents: dict

    def __hash__(self):
        return hash(self.program)

    def __eq__(self, other):
        return isinstance(other, ProgramCase) and self.program == other.program


def programs(features=None, *, max_launches: int = 6, max_kernels: int = 3) -> st.SearchStrategy:
    """Whole launch sequences (`ProgramCase`) using ``features`` (a subset of `PROGRAM_FEATURES`).

    Args:
        features: None: `DEFAULT_PROGRAM_FEATURES` ("retain_grad" only where Warp has it, >= 1.13).
        max_launches: The most launches in the recorded body (at least 1).
        max_kernels: The most distinct kernels.

    Returns:
        A hypothesis strategy of `ProgramCase`s.

    Raises:
        ValueError: ``features`` names something not in `PROGRAM_FEATURES`.

    Example:
        ```python
        from hypothesis import given, settings
        from warp_zerostore.testing.fuzz.programs import programs

        @settings(max_examples=3, deadline=None)
        @given(programs({"float32", "stores", "readback", "copies"}))
        def test_drawn(case):
            assert 1 <= sum(1 for s in case.program.body if hasattr(s, "kernel")) <= 6

        test_drawn()
        ```
    """
    features = frozenset(DEFAULT_PROGRAM_FEATURES if features is None else features)
    unknown = sorted(features - set(PROGRAM_FEATURES))
    if unknown:
        raise ValueError(f"programs: unknown features {unknown}; choose from {list(PROGRAM_FEATURES)}.")
    if not _compat.HAS_RETAIN_GRAD:
        features -= {"retain_grad"}
    dtypes = tuple(d for d in ("float32", "float64") if d in features) or ("float32",)
    return _program_cases(features, dtypes, max(1, max_launches), max(1, max_kernels))


@st.composite
def _program_cases(draw, features, dtypes, max_launches, max_kernels):
    has = features.__contains__
    dtype = _item(draw, dtypes)
    launch = _item(draw, MULTIDIM_DRAWS) if has("multidim") else (THREADS,)
    arrays = _arrays(draw, features)
    helper_list = kernel_grammar.helpers(draw, HELPER_FEATURES & features)
    kernels = tuple(_kernel(draw, features, dtype, helper_list, launch) for _ in range(1 + draw(_INDEX[max_kernels])))
    module_backward = not (has("module_forward_only") and draw(_INDEX[6]) == 1)
    if not module_backward:  # one kernel opts back in; the others are forward-only by the module's option
        kernels = (dataclasses.replace(kernels[0], backward=True),) + tuple(
            dataclasses.replace(k, backward=None) for k in kernels[1:]
        )
    program = Program(dtype, launch, arrays, kernels, helpers=helper_list, module_backward=module_backward)
    body = []
    count = 1 if draw(_INDEX[6]) == 1 else 2 + draw(_INDEX[2]) + draw(_INDEX[2]) + draw(_INDEX[3])  # 1 to 6
    for _ in range(min(max_launches, count)):
        body.append(_launch(draw, features, program))
        if has("copies") and draw(_INDEX[4]) == 1:
            body.append(_copy(draw, program))
        if has("constant_writes") and draw(_INDEX[5]) == 1:
            body.append(_constant_write(draw, program))
    setup = tuple(_between(draw, features, program) for _ in range(draw(_INDEX[3]))) if has("setup") else ()
    after = (_between(draw, features, program),) if has("mutations") and draw(_INDEX[4]) == 1 else ()
    program = normalized(dataclasses.replace(program, body=tuple(body), setup=setup, after=after))
    data = {a.name: _values(draw, a.flat_shape()) for a in arrays}
    cotangents = {a.name: _values(draw, a.flat_shape()) for a in arrays}
    placements = [draw(_INDEX[3]) for _ in range(8)]
    thresholds = oracle.place_thresholds(program, data, placements)
    assume(thresholds is not None)
    with np.errstate(over="raise", invalid="raise"):  # no intermediate overflows, even in float64
        try:
            run = oracle.run(program, thresholds, data)
        except (FloatingPointError, oracle.Kinked):
            run = None
    assume(run is not None and not run.trace.retain_conflict)
    assume(all(np.all(np.abs(v) < OUTPUT_BOUND) for v in run.outputs.values()))
    return ProgramCase(program, thresholds, data, cotangents)


def _arrays(draw, features) -> tuple:
    retain = "retain_grad" in features
    scalars = tuple(Array(f"s{k}", "f", retain and draw(_INDEX[8]) == 3) for k in range(2 + draw(_INDEX[2])))
    vectors = tuple(Array(f"v{k}", "v", retain and draw(_INDEX[8]) == 3) for k in range(2 + draw(_INDEX[2])))
    return scalars + vectors + (Array("c0", "acc"),)


def _kernel(draw, features, dtype, helper_list, launch) -> Kernel:
    kfeatures = frozenset(f for f in features if f in KERNEL_FEATURES)
    program = kernel_program(draw, kfeatures, dtype, helper_list, max_statements=3, max_depth=1, expr_depth=2)
    program = _calls_a_helper(draw, program, helper_list)
    own = "aliasing" in features and draw(_BOOL)
    if own:  # every load of x and xv at the thread's own element: x may then be y's array
        program = rebuild(program, lambda n: dataclasses.replace(n, offset=0) if _shifted_load(n) else n)
    program = number_sites(dataclasses.replace(program, launch=tuple(launch)))
    backward = False if "forward_only" in features and draw(_INDEX[4]) == 2 else None
    held = ()
    if "struct_arrays" in features and draw(_INDEX[4]) == 2:
        params = [p for p in PARAMETER_KINDS if p != "yv" or program.vec_out]
        held = tuple(sorted({_item(draw, tuple(params)) for _ in range(1 + draw(_INDEX[2]))}))
    return Kernel(program, backward, held, own)


def _shifted_load(node) -> bool:
    return isinstance(node, Load) and node.array in ("x", "xv") and node.offset != 0


def _calls_a_helper(draw, program, helper_list):
    """``program`` calling its first value helper (added to its last top-level store of ``y`` if it calls none), so
    that helpers are shared between the kernels of a program, forward-only ones among them."""
    values = [k for k, h in enumerate(helper_list) if kernel_grammar._returns_one(h)]
    if not values or any(isinstance(n, Call) for n in iter_nodes(program.body)):
        return program
    k = values[0]
    last = max((j for j, s in enumerate(program.body) if isinstance(s, Store) and s.array == "y"), default=None)
    if last is None:
        return program
    args = tuple(Load("x", draw(_INDEX[THREADS])) for _ in range(helper_list[k].arity))
    store = program.body[last]
    body = program.body[:last] + (dataclasses.replace(store, expr=Binary("add", store.expr, Call(k, args))),)
    return dataclasses.replace(program, body=body + program.body[last + 1 :])


def _arrays_of(program: Program, kind: str) -> tuple:
    return tuple(a.name for a in program.arrays if a.kind == kind)


def _launch(draw, features, program: Program) -> Launch:
    k = draw(_INDEX[len(program.kernels)])
    kernel = program.kernels[k]
    params = [p for p in PARAMETER_KINDS if p != "yv" or kernel.program.vec_out]
    args = {p: _item(draw, _arrays_of(program, PARAMETER_KINDS[p])) for p in params}
    for read, written in ALIASES:  # one array under both only where the kernel reads it at its own elements
        if written not in args or (kernel.own and "aliasing" in features and draw(_BOOL)):
            if written in args:
                args[written] = args[read]
            continue
        others = tuple(n for n in _arrays_of(program, PARAMETER_KINDS[written]) if n != args[read])
        args[written] = _item(draw, others)
    return Launch(k, tuple((p, args[p]) for p in params))


def _copy(draw, program: Program) -> Copy:
    kind = _item(draw, ("f", "v"))
    names = _arrays_of(program, kind)
    dest = _item(draw, names)
    others = tuple(n for n in names if n != dest)
    src = _item(draw, others) if others else dest
    if src == dest:  # one array of the kind: copy a scalar array into another
        names = _arrays_of(program, "f")
        dest, src = names[0], names[1]
    count = 1 + draw(_INDEX[THREADS])
    return Copy(dest, src, draw(_INDEX[THREADS - count + 1]), draw(_INDEX[THREADS - count + 1]), count)


def _constant_write(draw, program: Program):
    dest = program.arrays[draw(_INDEX[len(program.arrays)])]
    form = _item(draw, ("fill_", "zero_", "assign"))
    if form == "fill_":
        return Fill(dest.name, "fill_", _item(draw, CONSTANTS))
    if form == "zero_":
        return Fill(dest.name, "zero_", 0.0)
    return SetData(dest.name, tuple(_values(draw, dest.flat_shape()).ravel().tolist()))


def _between(draw, features, program: Program):
    """A step before the Tape or after it: a copy or a constant write."""
    options = [lambda: _constant_write(draw, program)]
    if "copies" in features:
        options.append(lambda: _copy(draw, program))
    return _pick(draw, options)


def _values(draw, shape) -> np.ndarray:
    size = int(np.prod(shape))
    return np.array(draw(st.lists(_VALUES, min_size=size, max_size=size))).reshape(shape)


def with_program(case: ProgramCase, program: Program, placements=(0,)) -> ProgramCase | None:
    """``case`` with another program (for shrinking): the data of its arrays kept, thresholds placed again."""
    kernels = tuple(dataclasses.replace(k, program=number_sites(k.program)) for k in program.kernels)
    program = dataclasses.replace(program, kernels=kernels)
    names = {a.name for a in program.arrays}
    data = {n: v for n, v in case.data.items() if n in names}
    cotangents = {n: v for n, v in case.cotangents.items() if n in names}
    thresholds = oracle.place_thresholds(program, data, list(placements) or [0])
    if thresholds is None:
        return None
    try:
        run = oracle.run(program, thresholds, data)
    except oracle.Kinked:
        return None
    if run.trace.retain_conflict:
        return None
    return ProgramCase(program, thresholds, data, cotangents)


__all__ = [
    "ACC",
    "DEFAULT_PROGRAM_FEATURES",
    "KERNEL_FEATURES",
    "PROGRAM_FEATURES",
    "ProgramCase",
    "SEQUENCE_FEATURES",
    "programs",
    "with_program",
]
