"""The reference of a launch sequence: NumPy float64, launch by launch, with central differences of the whole
program; no Warp.

The rules, each a decision about what a program means (docs/testing.md, "The program oracle's rules"):

1. **Inputs** are the arrays' values when the Tape is entered, after the ``setup`` steps (which run once, at the
   drawn data). Every array's final value (when the Tape is left) is an output, with a drawn cotangent; the loss
   is the sum of cotangent times output over all arrays. Its central differences with respect to every input
   element are the reference gradients.
2. **Recorded steps** are differentiated: launches of kernels whose backward Warp builds, and ``wp.copy`` (a
   window of ``count`` elements from ``src_offset`` to ``dest_offset``, in row-major order).
3. **Constant writes**: ``fill_``, ``zero_`` and ``assign`` inside the Tape are never recorded, and a launch of an
   ``enable_backward=False`` kernel is recorded without a backward. Each is a constant write: every element it
   writes takes, in every central-difference variant, the value it takes at the unperturbed inputs. So nothing
   flows into what it read, and what it overwrote has no gradient through it.
4. **Dead inputs**: an input element overwritten by a constant write before any recorded step read or wrote it
   is not compared (Warp reports the gradient with respect to the written value, by design: the Tape never saw
   the write). A ``retain_grad=True`` array's own gradient is not compared either (Warp keeps there what the
   backward pass left, by design); the grammar draws ``retain_grad`` only on arrays no recorded step stores over
   after a recorded step read or stored the element (else the retained gradient would flow on).
5. **Mutation after record**: the ``after`` steps (between leaving the Tape and ``backward()``) are not part of
   the program: the reference is the gradient at the recorded values. Where a step that is not a launch (a
   constant write after the Tape or inside it, or a recorded ``wp.copy``) changes an element a differentiated
   launch read before, the program is ``mutated``: a path may refuse it instead, naming the mutation
   (``Tape(snapshot=True)`` raises ``OverwriteError``, a rollout ``CheckpointError``).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from ..oracle import MARGIN, ROUNDING_ULPS, STEP, Interpreter, Kinked, _place
from .nodes import Copy, Fill, Launch, Program, SetData


@dataclass
class Run:
    """One run of a program over variants: the final arrays (at the Tape's exit), the kink values met (keyed by
    ``(kernel, site)``) and what the rules need (`Trace`)."""

    outputs: dict
    sites: dict
    trace: Trace


@dataclass
class Trace:
    """Per element ``(array, flat index)``: ``used`` by a recorded step (read or written), ``read`` by a
    differentiated launch, ``dead`` (rule 4), and the rule flags."""

    used: set = field(default_factory=set)
    read: set = field(default_factory=set)
    dead: set = field(default_factory=set)
    mutated: bool = False  # rule 5
    retain_conflict: bool = False  # a recorded store over a used element of a retain_grad array (rule 4)


def _kernel_thresholds(thresholds: dict, kernel: int) -> dict:
    return {site: t for (k, site), t in thresholds.items() if k == kernel}


class ProgramInterpreter:
    """Runs a program's steps on ``memory`` (array name -> ``(variants, *flat shape)``), in place."""

    def __init__(self, program: Program, thresholds: dict, memory: dict):
        self.program = program
        self.thresholds = thresholds
        self.memory = memory
        self.sites: dict = {}
        self.trace = Trace()

    def run(self, steps, recorded: bool = True) -> None:
        for step in steps:
            self.step(step, recorded)

    def step(self, step, recorded: bool) -> None:
        if isinstance(step, Launch):
            self.launch(step, recorded)
        elif isinstance(step, Copy):
            self.copy(step, recorded)
        elif isinstance(step, Fill):
            self.constant(step.dest, np.full(self.memory[step.dest].shape[1:], step.value), recorded)
        elif isinstance(step, SetData):
            shape = self.memory[step.dest].shape[1:]
            self.constant(step.dest, np.asarray(step.values, dtype=np.float64).reshape(shape), recorded)
        else:
            raise TypeError(f"programs.oracle: unknown step {step!r}")

    def launch(self, launch: Launch, recorded: bool) -> None:
        kernel = self.program.kernels[launch.kernel]
        binding = launch.binding()
        differentiated = recorded and self.program.differentiated(launch.kernel)
        if differentiated:
            params = {p: self.memory[a] for p, a in binding.items()}  # aliases: one array object
        else:  # rule 3: run at the unperturbed point, then write what it wrote as constants
            collapsed = {a: self.memory[a][:1].copy() for a in set(binding.values())}
            params = {p: collapsed[a] for p, a in binding.items()}
        interpreter = Interpreter(kernel.program, _kernel_thresholds(self.thresholds, launch.kernel), params, True)
        interpreter.run(memory=params)
        for site, values in interpreter.sites.items():
            self.sites.setdefault((launch.kernel, site), []).extend(values)
        reads = {(binding[p], e) for p, e in interpreter.reads}
        writes = {(binding[p], e) for p, e in interpreter.writes}
        if differentiated:
            self.trace.read |= reads
            overwrites = {}
            for (p, e), n in interpreter.overwrites.items():
                overwrites[(binding[p], e)] = overwrites.get((binding[p], e), 0) + n
            self._recorded_writes(writes, reads, overwrites)
        else:
            for array, element in sorted(writes):
                self._constant_element(array, element, collapsed[array][0, element], recorded)

    def copy(self, copy: Copy, recorded: bool) -> None:
        src = self.memory[copy.src][:, copy.src_offset : copy.src_offset + copy.count].copy()
        window = slice(copy.dest_offset, copy.dest_offset + copy.count)
        if recorded and any((copy.dest, e) in self.trace.read for e in range(window.start, window.stop)):
            # a copy is recorded, but not as a launch: what it overwrites, a launch read is re-read by that
            # launch's backward (a stale read no snapshot can undo: Tape(snapshot=True) refuses it by name)
            changed = not np.array_equal(self.memory[copy.dest][:1, window], src[:1])
            self.trace.mutated |= changed
        self.memory[copy.dest][:, window] = src
        if recorded:
            reads = {(copy.src, copy.src_offset + k) for k in range(copy.count)}
            writes = {(copy.dest, copy.dest_offset + k) for k in range(copy.count)}
            self._recorded_writes(writes, reads, dict.fromkeys(writes, 1))

    def _recorded_writes(self, writes: set, reads: set, overwrites: dict) -> None:
        """Rule 4's condition: a store that replaces an element of a ``retain_grad`` array (not ``+=``, ``-=``, an
        atomic) where a recorded step used it before, this step read it, or this step replaced it twice."""
        for (array, element), count in overwrites.items():
            if not self.program.array(array).retain_grad:
                continue
            if count > 1 or (array, element) in self.trace.used or (array, element) in reads:
                self.trace.retain_conflict = True
        self.trace.used |= reads | writes

    def constant(self, array: str, values: np.ndarray, recorded: bool) -> None:
        for element in range(values.shape[0]):
            self._constant_element(array, element, values[element], recorded)

    def _constant_element(self, array: str, element: int, value, recorded: bool) -> None:
        current = self.memory[array][:, element]
        if recorded:
            key = (array, element)
            if key not in self.trace.used:
                self.trace.dead.add(key)
            if key in self.trace.read and not np.array_equal(current[0], value):
                self.trace.mutated = True
        self.memory[array][:, element] = value

    def after(self, steps) -> None:
        """The ``after`` steps at the unperturbed point: only whether they change what a launch read (rule 5)."""
        memory = {a: v[:1].copy() for a, v in self.memory.items()}
        probe = ProgramInterpreter(self.program, self.thresholds, memory)
        probe.trace = Trace(used=set(self.trace.used), read=set(self.trace.read))
        probe.run(steps, recorded=True)
        self.trace.mutated |= probe.trace.mutated


def entry_values(program: Program, data: dict) -> dict:
    """The arrays' values when the Tape is entered: ``data`` (array name -> flat values) after ``setup``."""
    memory = {a: np.asarray(v, dtype=np.float64)[None].copy() for a, v in data.items()}
    ProgramInterpreter(program, {}, memory).run(program.setup, recorded=False)
    return {a: v[0] for a, v in memory.items()}


def run(program: Program, thresholds: dict, data: dict) -> Run:
    """Run ``program`` once at the drawn ``data``: setup, body (recorded), the ``after`` steps' rule-5 check."""
    entry = entry_values(program, data)
    memory = {a: v[None].copy() for a, v in entry.items()}
    interpreter = ProgramInterpreter(program, thresholds, memory)
    interpreter.run(program.body)
    outputs = {a: v[0].copy() for a, v in memory.items()}
    interpreter.after(program.after)
    return Run(outputs, interpreter.sites, interpreter.trace)


def place_thresholds(program: Program, data: dict, placements) -> dict | None:
    """Thresholds for every kink site of every kernel (``(kernel, site)`` -> t), each at least ``MARGIN`` away from
    every value its site meets over all launches and threads; None when no placement keeps every margin."""
    thresholds: dict = {}
    placements = list(placements) or [0]
    for _ in range(256):
        sites = run(program, thresholds, data).sites
        todo = [key for key in sites if key not in thresholds]
        if not todo:
            break
        key = todo[0]
        thresholds[key] = _place(sorted(sites[key]), placements[len(thresholds) % len(placements)])
    sites = run(program, thresholds, data).sites
    for key, values in sites.items():
        t = thresholds.get(key)
        if t is None or not np.isfinite(values).all():
            return None
        if min(abs(q - t) for q in values) < MARGIN * max(1.0, abs(t)):
            return None
    return thresholds


@dataclass
class Reference:
    """Forward values, central-difference gradients and what is compared, of one program at one point."""

    outputs: dict  # array name -> final values at the Tape's exit (flat)
    grads: dict  # array name -> d loss / d its value at the Tape's entry
    rounding: dict  # array name -> rounding allowance per element
    compared: dict  # array name -> bool mask of the gradient elements compared (rules 4)
    entry: dict  # array name -> its value at the Tape's entry
    mutated: bool  # rule 5: a path may refuse, naming the mutation
    dead: set = field(default_factory=set)
    retain_conflict: bool = False  # rule 4's condition met (the grammar draws none; a repeated body may)


def reference(program: Program, thresholds: dict, data: dict, cotangents: dict) -> Reference:
    """Forward run plus central differences of ``sum(c * outputs)`` along every input element, in one batch."""
    entry = entry_values(program, data)
    names = [a.name for a in program.arrays]
    shapes = {a.name: a.flat_shape() for a in program.arrays}
    sizes = [int(np.prod(shapes[n])) for n in names]
    total = sum(sizes)
    flat = np.concatenate([entry[n].ravel() for n in names])
    steps = STEP * np.maximum(1.0, np.abs(flat))
    points = np.repeat(flat[None], 2 * total + 1, axis=0)
    points[1 + np.arange(total), np.arange(total)] += steps
    points[1 + total + np.arange(total), np.arange(total)] -= steps
    memory, start = {}, 0
    for name, size in zip(names, sizes):
        memory[name] = points[:, start : start + size].reshape((-1,) + shapes[name]).copy()
        start += size
    interpreter = ProgramInterpreter(program, thresholds, memory)
    interpreter.run(program.body)
    outputs = {n: memory[n][0].copy() for n in names}
    interpreter.after(program.after)
    trace = interpreter.trace
    flat_sum = lambda a: a.reshape(a.shape[0], -1).sum(axis=1)  # noqa: E731
    terms = sum(flat_sum(cotangents[n] * memory[n]) for n in names)
    scale = sum(flat_sum(np.abs(cotangents[n] * memory[n])) for n in names)
    fd = (terms[1 : 1 + total] - terms[1 + total :]) / (2 * steps)
    rounding = ROUNDING_ULPS * np.finfo(np.float64).eps * scale[0] / steps
    grads, rounds, compared, start = {}, {}, {}, 0
    for name, size in zip(names, sizes):
        grads[name] = fd[start : start + size].reshape(shapes[name])
        rounds[name] = rounding[start : start + size].reshape(shapes[name])
        mask = np.ones(shapes[name][0], dtype=bool)
        for array, element in trace.dead:
            if array == name:
                mask[element] = False
        if program.array(name).retain_grad:
            mask[:] = False
        compared[name] = mask
        start += size
    return Reference(outputs, grads, rounds, compared, entry, trace.mutated, set(trace.dead), trace.retain_conflict)


__all__ = ["Kinked", "Reference", "Run", "Trace", "entry_values", "place_thresholds", "reference", "run"]
