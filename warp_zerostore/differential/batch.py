"""Build many drawn programs per Warp build: their kernels (stock and flagged) and host functions in generated
modules, built at once (one module per core where Warp builds from several threads, as the kernel fuzzer does).

Programs whose module option is ``enable_backward=False`` (``Program.module_backward``) go into a module of their
own, the option set at its top. A build that fails is split in halves until the failing program is alone.
"""

from __future__ import annotations

import importlib.util
import itertools
import os
import sys
import traceback

import warp

from .. import _compat
from ..tape import read_twin
from ..testing.fuzz import batch as kernel_batch
from ..testing.fuzz.programs import printer
from ..testing.fuzz.programs.nodes import Launch

HEADER = "import numpy as np\nimport warp as wp\n\nimport warp_zerostore as wpz\n\nwp.set_module_options({options!r})\n"

_counter = itertools.count()


def module_source(cases, indices=None, backward: bool = True) -> str:
    """The module of ``cases`` (program ``p{j}`` for each ``j`` of ``indices``, default 0, 1, ...): each program's
    definitions and host functions; ``backward`` False sets the module option ``enable_backward=False``."""
    indices = range(len(cases)) if indices is None else indices
    options = dict(kernel_batch.build_options())
    if not backward:
        options["enable_backward"] = False
    lines = [HEADER.format(options=options)]
    for j, case in zip(indices, cases):
        lines += printer.definitions(case.program, case.thresholds, f"p{j}")
        lines += printer.host(case.program, case.thresholds, f"p{j}")
    return "\n".join(lines)


def kernels_of(module, cases, indices) -> list:
    names = [
        printer.kernel_name(f"p{j}", m, variant)
        for j, case in zip(indices, cases)
        for m in range(len(case.program.kernels))
        for variant in printer.VARIANTS
    ]
    return [getattr(module, name) for name in names]


def write(cases, workdir: str, indices, backward: bool = True, twins: bool = True):
    """Write and import the module of ``cases`` (the read twins the snapshot Tape wants built into it)."""
    name = f"warp_zerostore_programs_{os.getpid()}_{next(_counter)}"
    path = os.path.join(workdir, name + ".py")
    with open(path, "w") as f:
        f.write(module_source(cases, indices, backward))
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    if twins:
        prepare_twins(module, cases, indices)
    return module


def prepare_twins(module, cases, indices) -> None:
    """Every kernel's read twin (the check and snapshot Tapes run one per launch), and the aliased variant of those
    launched with one array under two parameters, built with the batch's module: one compile, not one each."""
    aliased = set()
    for j, case in zip(indices, cases):
        for step in case.program.body:
            if isinstance(step, Launch):
                args = step.binding()
                if args.get("x") == args.get("y") or ("yv" in args and args.get("xv") == args.get("yv")):
                    aliased |= {printer.kernel_name(f"p{j}", step.kernel, v) for v in printer.VARIANTS}
    with read_twin.built_into(module):
        for kernel in kernels_of(module, cases, indices):
            read_twin.twin(kernel)
            if _compat.kernel_key(kernel) in aliased:
                read_twin.twin(kernel, aliased=True)


def build(chunks, workdir: str) -> list:
    """Each chunk ``(cases, indices, backward)``'s module, built (or the exception its build raised); two or more
    compile in threads where Warp allows (`kernel_batch.parallel_builds`)."""
    written = []
    for cases, indices, backward in chunks:
        try:
            written.append(write(cases, workdir, indices, backward))
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

    if len(written) > 1 and kernel_batch.parallel_builds() > 1:
        pool = kernel_batch._pool(len(written) - 1)
        others = [pool.submit(load, module) for module in written[1:]]
        return [load(written[0])] + [future.result() for future in others]
    return [load(module) for module in written]


def chunks_of(cases, parts: int) -> list:
    """``(cases, indices, backward)`` chunks: programs with the module option ``enable_backward=False`` in one of
    their own, the others in up to ``parts`` modules; ``indices`` are the programs' places in the batch."""
    indexed = list(enumerate(cases))
    plain = [(j, c) for j, c in indexed if c.program.module_backward]
    forward_only = [(j, c) for j, c in indexed if not c.program.module_backward]
    chunks = []
    size = max(1, -(-len(plain) // max(1, parts)))
    for k in range(0, len(plain), size):
        chunks.append((plain[k : k + size], True))
    if forward_only:
        chunks.append((forward_only, False))
    return [([c for _, c in chunk], [j for j, _ in chunk], backward) for chunk, backward in chunks]


def short(error: Exception) -> str:
    lines = traceback.format_exception_only(type(error), error)
    return "".join(lines).strip().splitlines()[-1][:300]


__all__ = ["build", "chunks_of", "module_source", "write"]
