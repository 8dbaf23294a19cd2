"""A launch sequence's constructs (what its failures are filed by) and its one-step simplifications (what the
program shrinker, ``warp_zerostore.differential.shrink``, builds a round of): drop a step, an alias, a struct, an
option, ``retain_grad``, a dimension, an unused kernel or array; shorten a copy; and every one-step
simplification of one kernel's body (``fuzz.shrink``).
"""

from __future__ import annotations

import dataclasses

from ..nodes import THREADS, Call, CallStore, Load, Store
from ..shrink import constructs as kernel_constructs
from ..shrink import expression_candidates, statement_candidates
from ..shrink import size as kernel_size
from ..walk import iter_nodes
from .nodes import CONSTANT_WRITES, Copy, Fill, Launch, Program, SetData

#: Candidates per shrinking round (one build).
MAX_CANDIDATES = 40


def size(program: Program) -> int:
    """Nodes of the launched kernels, plus one per step, array, option and launch dimension beyond the first."""
    launched = {s.kernel for s in program.steps() if isinstance(s, Launch)}
    total = sum(kernel_size(k.program) for m, k in enumerate(program.kernels) if m in launched)
    total += 3 * len(program.steps()) + len(program.arrays) + len(program.kernels) + len(program.launch)
    total += sum(len(k.held) + (k.backward is not None) for k in program.kernels) + (not program.module_backward)
    total += sum(a.retain_grad for a in program.arrays) + sum(_aliases(s) for s in program.steps())
    total += sum(s.count + (s.dest_offset > 0) + (s.src_offset > 0) for s in program.steps() if isinstance(s, Copy))
    return total


def _aliases(step) -> int:
    if not isinstance(step, Launch):
        return 0
    args = step.binding()
    return int(args.get("x") == args.get("y")) + int("yv" in args and args.get("xv") == args.get("yv"))


def _step_label(step, where: str) -> str:
    if isinstance(step, Copy):
        name = "copy"
    elif isinstance(step, Fill):
        name = step.form
    elif isinstance(step, SetData):
        name = "assign"
    else:
        name = "launch"
    return name if where == "in the Tape" else f"{name} {where}"


def reads(kernel) -> set:
    """The array parameters a kernel's body reads (``x``, ``xv``; ``y``/``yv`` read back or updated in place)."""
    found = set()
    for node in iter_nodes(kernel.program):
        if isinstance(node, Load) and node.array in ("x", "xv", "y", "yv"):
            found.add(node.array)
        elif isinstance(node, Store) and node.op not in ("=", "atomic"):
            found.add(node.array)
    return found


def writes(kernel) -> set:
    found = set()
    for node in iter_nodes(kernel.program.body):
        if isinstance(node, CallStore):
            found.add("y")
        elif isinstance(node, Store):
            found.add("acc" if node.op == "atomic" else node.array)
    return found


def constructs(program: Program) -> tuple:
    """The constructs a program uses, as sorted labels: its launched kernels' (``fuzz.shrink.constructs``), its steps'
    (``copy``, ``fill_``, ``assign after the Tape``, ...) and its options'."""
    labels = set()
    launched = sorted({s.kernel for s in program.steps() if isinstance(s, Launch)})
    for m in launched:
        kernel = program.kernels[m]
        inner = set(kernel_constructs(kernel.program))
        labels |= inner
        if kernel.held:
            labels.add("array in a struct")
            if "y" in kernel.held:  # a store form applied to s.y[i]: how Warp's codegen takes a struct's array
                labels |= {f"{label} through a struct" for label in inner & {"mulstore", "divstore", "augstore"}}
        if not program.differentiated(m):
            labels.add("module enable_backward=False" if kernel.backward is None else "enable_backward=False")
        elif kernel.backward is True and not program.module_backward:
            labels.add("enable_backward=True in a forward-only module")
    for where, steps in (
        ("before the Tape", program.setup),
        ("in the Tape", program.body),
        ("after the Tape", program.after),
    ):
        for step in steps:
            labels.add(_step_label(step, where))
            if isinstance(step, Copy) and (step.count < THREADS or step.dest_offset or step.src_offset):
                labels.add("copy window")
    for step in program.body:
        if isinstance(step, Launch):
            args = step.binding()
            if args.get("x") == args.get("y"):
                labels.add("x = y (one array)")
            if "yv" in args and args.get("xv") == args.get("yv"):
                labels.add("xv = yv (one array)")
    if any(a.retain_grad for a in program.arrays):
        labels.add("retain_grad")
    labels |= _relations(program)
    callers = {
        m: {n.helper for n in iter_nodes(program.kernels[m].program.body) if isinstance(n, Call)} for m in launched
    }
    forward_only = set().union(*(callers[m] for m in launched if not program.differentiated(m)))
    differentiated = set().union(*(callers[m] for m in launched if program.differentiated(m)))
    if forward_only & differentiated:
        labels.add("helper shared by a forward-only kernel")
    labels.discard("launch")
    return tuple(sorted(labels))


def _relations(program: Program) -> set:
    """Between launches: a later launch writing what an earlier one read (``overwrite after read``) or wrote; a
    constant write (``fill_``, ``zero_``, ``assign`` in the Tape) over what a recorded step wrote."""
    labels = set()
    seen_reads, seen_writes, copied = set(), set(), set()
    for step in program.body:
        if isinstance(step, Launch):
            kernel, args = program.kernels[step.kernel], step.binding()
            read = {args[p] for p in reads(kernel) if p in args}
            wrote = {args[p] for p in writes(kernel) if p in args}
        elif isinstance(step, Copy):
            read, wrote = {step.src}, {step.dest}
            copied.add(step.src)
        else:
            if step.dest in seen_writes:
                labels.add("constant write over a recorded write")
            if step.dest in copied:
                labels.add("constant write over a copy's source")
            continue
        if wrote & seen_reads:
            labels.add("overwrite after read (launches)")
        if wrote & seen_writes:
            labels.add("write after write (launches)")
        seen_reads |= read
        seen_writes |= wrote
    return labels


def candidates(program: Program):
    """Every one-step simplification of ``program`` (not all of them smaller: the shrinker keeps smaller ones): big
    steps first (one launch alone, no step but launches, every option off), then one thing at a time."""
    launches = [s for s in program.body if isinstance(s, Launch)]
    if len(program.body) > 1:
        for launch in launches:
            yield dataclasses.replace(program, body=(launch,), setup=(), after=())
        if len(launches) < len(program.body):
            yield dataclasses.replace(program, body=tuple(launches))
    plain = tuple(dataclasses.replace(k, held=(), backward=None) for k in program.kernels)
    if plain != program.kernels or not program.module_backward:
        yield dataclasses.replace(program, kernels=plain, module_backward=True)
    if program.setup or program.after:
        yield dataclasses.replace(program, setup=(), after=())
    for field in ("setup", "body", "after"):
        steps = getattr(program, field)
        for k in range(len(steps)):
            rest = steps[:k] + steps[k + 1 :]
            if field != "body" or rest:  # a body keeps one step
                yield dataclasses.replace(program, **{field: rest})
            step = steps[k]
            if isinstance(step, Copy):
                for smaller in (
                    dataclasses.replace(step, count=step.count - 1) if step.count > 1 else None,
                    dataclasses.replace(step, dest_offset=0) if step.dest_offset else None,
                    dataclasses.replace(step, src_offset=0) if step.src_offset else None,
                ):
                    if smaller is not None:
                        yield dataclasses.replace(program, **{field: steps[:k] + (smaller,) + steps[k + 1 :]})
            if isinstance(step, Launch):
                yield from _unaliased(program, field, k, step)
    if len(program.launch) > 1:
        kernels = tuple(
            dataclasses.replace(k, program=dataclasses.replace(k.program, launch=(THREADS,))) for k in program.kernels
        )
        yield dataclasses.replace(program, launch=(THREADS,), kernels=kernels)
    if not program.module_backward:
        kernels = tuple(dataclasses.replace(k, backward=None) for k in program.kernels)
        yield dataclasses.replace(program, module_backward=True, kernels=kernels)
    for m, kernel in enumerate(program.kernels):
        if kernel.held:
            yield _with_kernel(program, m, dataclasses.replace(kernel, held=()))
        if kernel.backward is not None and program.module_backward:
            yield _with_kernel(program, m, dataclasses.replace(kernel, backward=None))
    for k, array in enumerate(program.arrays):
        if array.retain_grad:
            arrays = program.arrays[:k] + (dataclasses.replace(array, retain_grad=False),) + program.arrays[k + 1 :]
            yield dataclasses.replace(program, arrays=arrays)
    yield from _unused_dropped(program)
    launched = {s.kernel for s in program.steps() if isinstance(s, Launch)}
    for m, kernel in enumerate(program.kernels):
        if m not in launched:
            continue
        for body in list(statement_candidates(kernel.program)) + list(expression_candidates(kernel.program)):
            if body.helpers == kernel.program.helpers:  # helpers are the program's, shared
                yield _with_kernel(program, m, dataclasses.replace(kernel, program=body))


def _with_kernel(program: Program, m: int, kernel) -> Program:
    return dataclasses.replace(program, kernels=program.kernels[:m] + (kernel,) + program.kernels[m + 1 :])


def _unaliased(program: Program, field: str, k: int, step: Launch):
    args = step.binding()
    for read, written in (("x", "y"), ("xv", "yv")):
        if written in args and args[written] == args[read]:
            kind = program.array(args[read]).kind
            other = next((a.name for a in program.arrays if a.kind == kind and a.name != args[read]), None)
            if other is not None:
                new = dict(args, **{written: other})
                launch = dataclasses.replace(step, args=tuple((p, new[p]) for p, _ in step.args))
                steps = getattr(program, field)
                yield dataclasses.replace(program, **{field: steps[:k] + (launch,) + steps[k + 1 :]})


def normalized(program: Program) -> Program:
    """``program`` without the kernels no step launches (a shrunk build error keeps the kernel that fails)."""
    launched = sorted({s.kernel for s in program.steps() if isinstance(s, Launch)})
    if len(launched) == len(program.kernels):
        return program
    return next(_unused_dropped(program))


def _unused_dropped(program: Program):
    """``program`` without the kernels no step launches, and without the arrays no step names."""
    launched = sorted({s.kernel for s in program.steps() if isinstance(s, Launch)})
    if len(launched) < len(program.kernels):
        renumber = {old: new for new, old in enumerate(launched)}
        kernels = tuple(program.kernels[m] for m in launched)

        def moved(steps):
            return tuple(
                dataclasses.replace(s, kernel=renumber[s.kernel]) if isinstance(s, Launch) else s for s in steps
            )

        yield dataclasses.replace(
            program, kernels=kernels, setup=moved(program.setup), body=moved(program.body), after=moved(program.after)
        )
    named = set()
    for step in program.steps():
        if isinstance(step, Launch):
            named |= set(step.binding().values())
        elif isinstance(step, Copy):
            named |= {step.dest, step.src}
        elif isinstance(step, CONSTANT_WRITES):
            named.add(step.dest)
    kept = tuple(a for a in program.arrays if a.name in named)
    if len(kept) < len(program.arrays) and kept:
        yield dataclasses.replace(program, arrays=kept)
    if program.helpers and not any(
        isinstance(n, (Call, CallStore)) for k in program.kernels for n in iter_nodes(k.program.body)
    ):
        kernels = tuple(
            dataclasses.replace(k, program=dataclasses.replace(k.program, helpers=())) for k in program.kernels
        )
        yield dataclasses.replace(program, helpers=(), kernels=kernels)


__all__ = ["MAX_CANDIDATES", "candidates", "constructs", "normalized", "reads", "size", "writes"]
