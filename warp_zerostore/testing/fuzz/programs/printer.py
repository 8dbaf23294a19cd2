"""Warp source of a drawn launch sequence: its helpers, structs and kernels (stock and flagged), and its host steps
as functions of a dict of arrays.

For program ``p3``: ``p3_setup(a)`` (before the Tape), ``p3_body_stock(a)`` and ``p3_body_zero_store(a)`` (the
recorded steps, launching the stock or the flagged kernels; the flagged body records its copies under
``wpz.copy_zero_store(True)``), ``p3_after(a)`` (after the Tape, before ``backward()``), and
``p3_op_zero_store(s0: ..., ...)``, the flagged body as a function of annotated arrays (what the PyTorch and JAX
bridges take). The flagged kernels name the facade (``wpz.tid()``), as users write them.
"""

from __future__ import annotations

import numpy as np

from ..printer import SCALAR_TYPE, VEC_TYPE, Printer, literal
from .nodes import Copy, Fill, Launch, Program, SetData

VARIANTS = ("stock", "zero_store")
NAMESPACES = {"stock": "wp", "zero_store": "wpz"}


def kernel_thresholds(thresholds: dict, kernel: int) -> dict:
    """The thresholds of one kernel's sites (the program's are keyed ``(kernel, site)``)."""
    return {site: t for (k, site), t in thresholds.items() if k == kernel}


def struct_name(prefix: str, m: int) -> str:
    return f"{prefix}_k{m}_S"


def printers(program: Program, thresholds: dict, prefix: str) -> list:
    """One kernel `Printer` per kernel, its helpers named ``{prefix}_h{k}`` (shared by all of them)."""
    return [
        Printer(k.program, kernel_thresholds(thresholds, m), f"{prefix}_h", k.held, struct_name(prefix, m))
        for m, k in enumerate(program.kernels)
    ]


def decorator(program: Program, m: int, variant: str) -> str:
    """``@wp.kernel(...)`` for the stock variant, ``@wpz.kernel(zero_store=True, ...)`` for the flagged one; a
    kernel Warp builds without a backward is never flagged (the package refuses the flag there)."""
    option = program.kernels[m].backward
    options = [] if option is None else [f"enable_backward={option}"]
    if variant == "zero_store" and program.differentiated(m):
        options.insert(0, "zero_store=True")
    module = NAMESPACES[variant]
    return f"@{module}.kernel({', '.join(options)})" if options else f"@{module}.kernel"


def kernel_name(prefix: str, m: int, variant: str) -> str:
    return f"{prefix}_k{m}_{variant}"


def definitions(program: Program, thresholds: dict, prefix: str, variants=VARIANTS) -> list:
    """The helpers, each kernel's struct of held arrays, and the kernels of ``variants``."""
    kernel_printers = printers(program, thresholds, prefix)
    lines = kernel_printers[0].helpers() if kernel_printers else []
    for m, printer in enumerate(kernel_printers):
        if printer.held:
            annotations = dict(printer.parameters())
            lines += ["@wp.struct", f"class {struct_name(prefix, m)}:"]
            lines += [f"    {name}: {annotations[name]}" for name in printer.held] + [""]
    for m, printer in enumerate(kernel_printers):
        for variant in variants:
            name = kernel_name(prefix, m, variant)
            lines += printer.kernel(name, decorator(program, m, variant), NAMESPACES[variant])
    return lines


def dim(program: Program) -> str:
    return str(program.launch[0]) if len(program.launch) == 1 else str(tuple(program.launch))


def step_lines(program: Program, thresholds: dict, prefix: str, step, variant: str, k: int) -> list:
    """One host step as lines of a function body (``a``: the dict of arrays); ``k`` numbers struct instances."""
    dtype = program.dtype
    if isinstance(step, Launch):
        kernel = program.kernels[step.kernel]
        printer = printers(program, thresholds, prefix)[step.kernel]
        binding = step.binding()
        lines, inputs = [], []
        if kernel.held:
            lines.append(f"s{k} = {struct_name(prefix, step.kernel)}()")
            lines += [f"s{k}.{p} = a[{binding[p]!r}]" for p in kernel.held]
        for name, _ in printer.parameters():
            if name not in kernel.held:
                inputs.append(f"a[{binding[name]!r}]")
            elif f"s{k}" not in inputs:
                inputs.append(f"s{k}")
        inputs.append(str(kernel.program.loop_count))
        name = kernel_name(prefix, step.kernel, variant)
        return lines + [f"wp.launch({name}, dim={dim(program)}, inputs=[{', '.join(inputs)}])"]
    if isinstance(step, Copy):
        call = (
            f"wp.copy(a[{step.dest!r}], a[{step.src!r}], dest_offset={step.dest_offset}, "
            f"src_offset={step.src_offset}, count={step.count})"
        )
        return ["with wpz.copy_zero_store(True):", f"    {call}"] if variant == "zero_store" else [call]
    if isinstance(step, Fill):
        if step.form == "zero_":
            return [f"a[{step.dest!r}].zero_()"]
        value = literal(step.value, dtype)
        if program.array(step.dest).kind == "v":
            value = f"{VEC_TYPE[dtype]}({value}, {value}, {value})"
        return [f"a[{step.dest!r}].fill_({value})"]
    if isinstance(step, SetData):
        array = program.array(step.dest)
        shape = array.shape(program.launch)
        values = np.asarray(step.values).reshape(shape).tolist()
        return [f"a[{step.dest!r}].assign(np.array({values}, dtype=np.{dtype}))"]
    raise TypeError(f"programs.printer: unknown step {step!r}")


def function(name: str, program: Program, thresholds: dict, prefix: str, steps, variant: str) -> list:
    lines = [f"def {name}(a):"]
    for k, step in enumerate(steps):
        lines += [f"    {line}" for line in step_lines(program, thresholds, prefix, step, variant, k)]
    return lines + (["    pass"] if not steps else []) + [""]


def annotation(program: Program, name: str) -> str:
    """A program array's annotation: ``wp.array2d(dtype=wp.vec3)``."""
    array = program.array(name)
    t = VEC_TYPE[program.dtype] if array.kind == "v" else SCALAR_TYPE[program.dtype]
    dims = 1 if array.kind == "acc" else len(program.launch)
    return f"wp.array(dtype={t})" if dims == 1 else f"wp.array{dims}d(dtype={t})"


def host(program: Program, thresholds: dict, prefix: str, variants=VARIANTS) -> list:
    """The host functions: setup, a body per variant, after, and the flagged body as an op of annotated arrays."""
    lines = function(f"{prefix}_setup", program, thresholds, prefix, program.setup, "stock")
    for variant in variants:
        lines += function(f"{prefix}_body_{variant}", program, thresholds, prefix, program.body, variant)
    lines += function(f"{prefix}_after", program, thresholds, prefix, program.after, "stock")
    for variant in variants:
        params = ", ".join(f"{a.name}: {annotation(program, a.name)}" for a in program.arrays)
        arrays = ", ".join(f"{a.name!r}: {a.name}" for a in program.arrays)
        lines += [f"def {prefix}_op_{variant}({params}):", f"    {prefix}_body_{variant}({{{arrays}}})", ""]
    return lines


def source(program: Program, thresholds: dict, prefix: str = "p0", variants=VARIANTS) -> str:
    """The program's definitions and host functions (no imports)."""
    return "\n".join(definitions(program, thresholds, prefix, variants) + host(program, thresholds, prefix, variants))


__all__ = ["NAMESPACES", "VARIANTS", "annotation", "decorator", "definitions", "host", "kernel_name", "source"]
