"""Check many drawn kernels per Warp build: one generated module file, each kernel stock and ``zero_store=True``.

Warp compiles a module at a time and reads kernel source through ``inspect``, so a batch is written as one
``.py`` file into a private temporary directory and imported. Each case then runs four times, each kernel on a
plain ``wp.Tape()`` and on ``Tape(snapshot=True)`` (`PATHS`; the same build), and its forward values and
gradients are compared with `oracle`'s reference (forward first, so a forward bug is not reported as a gradient
bug). A package path (`PACKAGE_PATHS`) that fails where stock Warp on a plain Tape is right for the same case is
**worse than stock** (``Failure.worse``): always this package's defect. A batch whose build fails is split in
halves until the failing kernel is alone.
"""

from __future__ import annotations

import concurrent.futures
import importlib.util
import itertools
import os
import shutil
import sys
import tempfile
import traceback
import warnings
from dataclasses import dataclass, field

import numpy as np
import warp

from ... import _compat, codegen
from ...codegen import adjoint_lints, replay, replay_records
from . import oracle
from .nodes import THREADS
from .printer import VEC_TYPE, Printer

#: The kernel variants each case is checked in: name suffix -> decorator line in the generated module.
VARIANTS = {"stock": "@wp.kernel", "zero_store": "@wpz.kernel(zero_store=True)"}
#: The module each variant's kernel body names: stock Warp's kernels name ``warp`` (``wp``); the flagged ones the
#: facade (``wpz``), as a user's ``import warp_zerostore as wp`` does (Warp 1.17.0 computed ``j = 0`` in every
#: thread of ``i, j = wp.tid()`` through the facade until the package resolved it to ``warp``).
NAMESPACES = {"stock": "wp", "zero_store": "wpz"}
#: The Tapes each variant is recorded on: stock Warp's plain ``wp.Tape()`` (what a flagged kernel must match
#: wherever stock is right: its POST backward), and the package's remedy for a thread that reads an element
#: before storing over it (an in-place update), ``Tape(snapshot=True)``, which restores what the launch read
#: before its adjoint runs (a flagged kernel's PRE backward). An in-place update is wrong on a plain Tape for
#: stock and flagged kernels alike, and ``Tape(check=...)`` reports it as a stale read (tests/test_fuzz.py).
TAPES = {"plain": "wp.Tape()", "snapshot": "wpz.Tape(snapshot=True)"}
#: Every (variant, tape) a case is checked on: the reference path first, stock Warp as users run it.
STOCK_PATH = ("stock", "plain")
PATHS = (STOCK_PATH, ("zero_store", "plain"), ("stock", "snapshot"), ("zero_store", "snapshot"))
#: The paths through this package: each must be right wherever `STOCK_PATH` is (else worse than stock).
PACKAGE_PATHS = PATHS[1:]
#: The Tape of a `Failure` made without one: each variant's only Tape before the four checks (stock on a plain
#: Tape, flagged on the snapshot Tape), so that ``Failure(case, "zero_store", kind)`` keeps its meaning.
DEFAULT_TAPE = {"stock": "plain", "zero_store": "snapshot"}
HEADER = "import warp as wp\n\nimport warp_zerostore as wpz\n\nwp.set_module_options({options!r})\n"
#: The snapshot Tape runs a read twin (tape/read_twin.py) of each kernel that reads ``y`` after storing it, built
#: by default in a module of its own: one compile per kernel, most of a batch's time. The batch makes them
#: before it loads, into its own module: one compile. Generated code, as the Tape is: testing does not import tape.
PREPARE = """
def prepare_twins(module, kernels):
    with wpz.tape.read_twin.built_into(module):  # the stock and the flagged kernels: both run on the snapshot Tape
        for kernel in kernels:
            if any(a.reads_after_store for a in wpz.access.argument_access(kernel).values()):
                wpz.tape.read_twin.twin(kernel)
"""


def build_options() -> dict:
    """Module options that make the C++ compile fast: ``-O0`` where Warp has the option (1.12+), else the
    debug mode (also ``-O0``, plus bounds checks). Builds, not runs, are what a fuzzer waits for."""
    if "optimization_level" in warp.get_module_options():
        return {"optimization_level": 0}
    return {"mode": "debug"}


_counter = itertools.count()


@dataclass
class Failure:
    """One case that failed in one variant on one Tape: ``kind`` is build, crash, forward or gradient."""

    case: object
    variant: str
    kind: str
    worst: float = float("inf")  # |warp - reference| / tolerance at the worst element
    array: str = ""  # the input (gradient) or output (forward) holding the worst element
    detail: str = ""
    warned: str = ""  # a ReplayWarning or AdjointWarning the package gave for this kernel (not a silent failure)
    warp_value: dict = field(default_factory=dict)  # what Warp computed, by array
    reference: dict = field(default_factory=dict)  # what the reference computed, by array
    tape: str = ""  # "plain" or "snapshot" (`TAPES`); "" means the variant's `DEFAULT_TAPE`
    worse: bool = False  # a package path wrong where stock Warp on a plain Tape is right for the same case
    stock: dict = field(default_factory=dict)  # with ``worse``: what stock on a plain Tape computed, by array
    tape_warned: str = ""  # a warning the Tape gave while the case ran (an OverwriteWarning; never an excuse)

    def __post_init__(self):
        if not self.tape:
            self.tape = DEFAULT_TAPE.get(self.variant, "plain")

    @property
    def path(self) -> tuple:
        """``(variant, tape)``: one of `PATHS`."""
        return (self.variant, self.tape)

    def describe(self) -> str:
        """``zero_store on a plain Tape``, ``stock on the snapshot Tape``."""
        return f"{self.variant} on {'a plain' if self.tape == 'plain' else 'the snapshot'} Tape"


def module_source(cases, prelude: str = "", first: int = 0) -> str:
    """The batch's module: ``prelude`` (extra source, e.g. a mutant's helpers), then each case's helpers and
    kernels ``c{j}_stock``, ``c{j}_zero_store`` (``j`` counted from ``first``)."""
    lines = [HEADER.format(options=build_options()), prelude]
    lines += [f"def tape_{name}():\n    return {tape}\n" for name, tape in TAPES.items()]
    lines.append(PREPARE)
    for j, case in enumerate(cases, first):
        printer = Printer(case.program, case.thresholds, f"c{j}_h")
        lines += printer.helpers()
        for variant, decorator in VARIANTS.items():
            lines += printer.kernel(f"c{j}_{variant}", decorator, NAMESPACES[variant])
    return "\n".join(lines)


def build(cases, workdir: str, prelude: str = "", first: int = 0, twins: bool = True):
    """Write and import the batch's module and build it for the CPU; the Python module."""
    module = _write(cases, workdir, prelude, first, twins)
    warp.load_module(module, device="cpu")
    return module


def _write(cases, workdir: str, prelude: str, first: int, twins: bool = True):
    """Write and import the module of ``cases`` (with the read twins, unless not ``twins``), not built yet."""
    name = f"warp_zerostore_fuzz_{os.getpid()}_{next(_counter)}"
    path = os.path.join(workdir, name + ".py")
    with open(path, "w") as f:
        f.write(module_source(cases, prelude, first))
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    if twins:
        kernels = [getattr(module, f"c{j}_{variant}") for j in range(first, first + len(cases)) for variant in VARIANTS]
        module.prepare_twins(module, kernels)
    return module


def parallel_builds() -> int:
    """How many modules a batch builds at once: one per CPU core (at most 4) where Warp builds modules from
    several threads (1.19: the C++ compile, nearly all of a batch's time, runs outside its codegen lock), else 1."""
    return min(4, os.cpu_count() or 1) if _compat.THREADED_BUILDS else 1


def check_batch(cases, device: str = "cpu", prelude: str = "", parts: int | None = None, stop=None, each=None) -> list:
    """Build ``cases`` in ``parts`` modules at once (default `parallel_builds`; bisecting on a build error) and
    check each; the failures found. ``each(case)`` is called after a case is checked on every path; once
    ``stop()`` is true, the cases not checked yet are left so (a campaign's deadline: `budget.Budget.expired`)."""
    cases = list(cases)
    parts = max(1, min(parts or parallel_builds(), len(cases) // MIN_PART or 1))
    workdir = tempfile.mkdtemp(prefix="warp_zerostore_fuzz_")
    try:
        with warnings.catch_warnings(record=True) as caught:  # the package's warnings while building, per kernel
            warnings.simplefilter("always")
            size = -(-len(cases) // parts)
            chunks = [(cases[k : k + size], k) for k in range(0, len(cases), size)]
            modules = _build_all(chunks, workdir, prelude)
        failures = []
        for (chunk, first), module in zip(chunks, modules):
            if isinstance(module, Exception):  # a kernel Warp cannot build: find it
                failures += _bisect(chunk, first, workdir, device, prelude, stop=stop, each=each)
            else:
                failures += _check_module(chunk, first, module, caught, device, stop, each)
        return failures
    finally:
        shutil.rmtree(workdir, ignore_errors=True)


#: Fewest cases per module when a batch is split for parallel builds (each module compiles Warp's headers).
MIN_PART = 8


def _build_all(chunks, workdir, prelude) -> list:
    """Each chunk's module, built (or the exception its build raised); two or more compile in threads."""
    written = []
    for chunk, first in chunks:  # Python-side work (exec, read twins) one at a time: it holds the GIL anyway
        try:
            written.append(_write(chunk, workdir, prelude, first))
        except Exception as error:  # noqa: BLE001 - reported by bisecting the chunk
            written.append(error)

    def load(module):
        if isinstance(module, Exception):
            return module
        try:
            warp.load_module(module, device="cpu")
            return module
        except Exception as error:  # noqa: BLE001 - reported by bisecting the chunk
            return error

    # Warp keeps a precompiled header per thread (seconds to make): the main thread builds the first module
    # and long-lived pool threads the others, so each thread makes it once per process, not once per batch.
    others = [_pool(len(written) - 1).submit(load, module) for module in written[1:]] if len(written) > 1 else []
    return [load(written[0])] + [future.result() for future in others]


_POOLS: dict = {}


def _pool(workers: int) -> concurrent.futures.ThreadPoolExecutor:
    if workers not in _POOLS:
        _POOLS[workers] = concurrent.futures.ThreadPoolExecutor(workers, thread_name_prefix="warp_zerostore_fuzz")
    return _POOLS[workers]


def _bisect(cases, first, workdir, device, prelude, twins=True, stop=None, each=None) -> list:
    if not cases or (stop is not None and stop()):
        return []
    try:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            module = build(cases, workdir, prelude, first, twins)
    except Exception as error:  # a kernel Warp cannot build: find it
        if len(cases) == 1 and twins:  # perhaps its read twin: the Tape copes without one (whole-array reads)
            return _bisect(cases, first, workdir, device, prelude, False, stop, each)
        if len(cases) == 1:  # one build for every path: never worse than stock
            if each is not None:
                each(cases[0])
            return [Failure(cases[0], v, "build", detail=_short(error), tape=t) for v, t in PATHS]
        half = len(cases) // 2
        return _bisect(cases[:half], first, workdir, device, prelude, True, stop, each) + _bisect(
            cases[half:], first + half, workdir, device, prelude, True, stop, each
        )
    return _check_module(cases, first, module, caught, device, stop, each)


def _check_module(cases, first, module, caught, device, stop=None, each=None) -> list:
    """Each case on every path of `PATHS`; a package path's failure is worse than stock where stock's passed
    (``stop``, ``each``: `check_batch`'s)."""
    failures = []
    for j, case in enumerate(cases, first):
        if stop is not None and stop():
            break
        ref = oracle.reference(case.program, case.thresholds, case.inputs, case.cotangents)
        stock_values, stock_right = {}, False
        for variant, tape in PATHS:  # STOCK_PATH first
            kernel, make_tape = getattr(module, f"c{j}_{variant}"), getattr(module, f"tape_{tape}")
            failure = check_case(case, kernel, ref, variant, device, make_tape, tape=tape, values=stock_values)
            if (variant, tape) == STOCK_PATH:
                stock_right = failure is None
            if failure is not None:
                failure.warned = (
                    _replay_warning(kernel, tape)
                    or next((message for message, _, _ in adjoint_lints.messages(kernel)), "")
                    or next((str(w.message) for w in caught if f"'c{j}_{variant}'" in str(w.message)), "")
                )
                if stock_right and (variant, tape) != STOCK_PATH:
                    failure.worse, failure.stock = True, stock_values.get(failure.kind, {})
                failures.append(failure)
        if each is not None:
            each(case)
    return failures


def _replay_warning(kernel, tape: str) -> str:
    """The first `ReplayWarning` the package gives where ``kernel``'s backward runs on ``tape``: the snapshot Tape
    runs its PRE backward where that replays exactly (then there is none), else its POST one, as a plain Tape does
    (`codegen.replay_records`)."""
    memory = replay.PRE if tape == "snapshot" and codegen.replays_exactly(kernel) else replay.POST
    found = replay_records.issues(kernel, memory) or []
    return found[0]["message"] if found else ""


#: The block size of a tiled launch (feature "tiles"): one thread a tile, so that the kernel's scalar statements
#: (``y[i] += ...``, atomics) run once per tile on a GPU as on the CPU, where Warp runs a tile on one thread.
TILE_BLOCK_DIM = 1


def launch(program, kernel, inputs, device="cpu"):
    """Launch ``kernel`` over the fuzzer's threads: tiled, one tile a thread, when ``program`` uses tiles; over
    ``program.launch`` (1 to 3 dimensions, feature "multidim") otherwise."""
    if program.tiles:
        warp.launch_tiled(kernel, dim=[THREADS], inputs=inputs, block_dim=TILE_BLOCK_DIM, device=device)
    else:
        warp.launch(kernel, dim=launch_dim(program), inputs=inputs, device=device)


def launch_dim(program):
    """``dim=`` of the program's launch: ``THREADS``, or its shape of 2 or 3 dimensions."""
    return THREADS if len(program.launch) == 1 else tuple(program.launch)


#: The arrays shaped like the launch (feature "multidim"): one element per thread, vec3 for xv.
LAUNCH_SHAPED = ("x", "xv", "y", "yv")


def warp_shape(program, name: str, shape: tuple) -> tuple:
    """The shape of the Warp array ``name`` (the reference keeps every array flat): x, xv and y have the launch's
    shape (xv's vec3 as a trailing 3 in NumPy); the others their reference shape."""
    if name in LAUNCH_SHAPED and len(program.launch) > 1:
        return tuple(program.launch) + tuple(shape[1:])
    return tuple(shape)


def run_case(case, kernel, device="cpu", make_tape=warp.Tape):
    """Run ``kernel`` on ``case`` on a ``make_tape()`` Tape and pull its cotangents back: (outputs, gradients),
    float64."""
    dtype = warp.float32 if case.program.dtype == "float32" else warp.float64
    vec = warp.vec3 if case.program.dtype == "float32" else warp.vec3d
    shapes, names = oracle.inputs_of(case.program), oracle.outputs_of(case.program)
    types = {n: vec if n in ("xv", "yv") else dtype for n in shapes}  # x, xv, y, acc (yv, xm, xt, ym, yt: features)
    arrays = {
        n: warp.array(
            np.reshape(case.inputs[n], warp_shape(case.program, n, shapes[n])),
            dtype=types[n],
            device=device,
            requires_grad=True,
        )
        for n in types
    }
    tape = make_tape()
    with tape:
        launch(case.program, kernel, [*arrays.values(), case.program.loop_count], device)
    outputs = {n: arrays[n].numpy().astype(np.float64).reshape(shapes[n]) for n in names}
    grads = {
        n: warp.array(
            np.reshape(case.cotangents[n], warp_shape(case.program, n, shapes[n])), dtype=types[n], device=device
        )
        for n in names
    }
    tape.backward(grads={arrays[n]: grads[n] for n in names})
    gradients = {n: arrays[n].grad.numpy().astype(np.float64).reshape(shapes[n]) for n in types}
    return outputs, gradients


def check_case(case, kernel, ref, variant: str, device="cpu", make_tape=warp.Tape, tape: str = "", values=None):
    """None when ``kernel``'s forward values and gradients match ``ref``; else the `Failure`. With ``values`` (a
    dict) and the case run, what Warp computed goes into it too: ``{"forward": ..., "gradient": ...}``."""
    tape = tape or DEFAULT_TAPE.get(variant, "plain")
    try:
        with warnings.catch_warnings(record=True) as seen:  # the snapshot Tape's runtime warnings, kept
            warnings.simplefilter("always")
            outputs, gradients = run_case(case, kernel, device, make_tape)
    except Exception as error:
        return Failure(case, variant, "crash", detail=_short(error), tape=tape)
    if values is not None and (variant, tape) == STOCK_PATH:
        values.update(forward=outputs, gradient=gradients)
    said = next((str(w.message) for w in seen if issubclass(w.category, UserWarning)), "")
    dtype = case.program.dtype
    for kind, got, want, rounding in (
        ("forward", outputs, ref.outputs, {}),
        ("gradient", gradients, ref.grads, ref.rounding),
    ):
        scores = {n: oracle.mismatch(got[n], want[n], dtype, rounding.get(n, 0.0)) for n in want}
        name = max(scores, key=scores.get)
        if scores[name] > 1.0:
            failure = Failure(case, variant, kind, scores[name], name, warp_value=got, reference=want, tape=tape)
            failure.tape_warned = said[:300]
            return failure
    return None


def _short(error: Exception) -> str:
    lines = traceback.format_exception_only(type(error), error)
    return "".join(lines).strip().splitlines()[-1][:300]


__all__ = [
    "DEFAULT_TAPE",
    "Failure",
    "PACKAGE_PATHS",
    "PATHS",
    "STOCK_PATH",
    "VARIANTS",
    "build",
    "check_batch",
    "check_case",
    "launch",
    "module_source",
    "run_case",
    "TAPES",
    "VEC_TYPE",
]
