"""One run of one of Warp's examples in one mode, in a process of its own, watched through read-only hooks.

Run as a script (``python probe.py MODE OUT EXAMPLE [ARGS...]``), never imported by the package: in the
``stock`` mode nothing of warp_zerostore is imported (the package's ``_compat``, which imports only Warp and
the standard library, is loaded alone from its file for the Tape's layout), so stock is Warp as a user without
this package runs it. The modes (`MODES`):

* ``stock``: Warp alone;
* ``imported``: ``import warp_zerostore`` first, nothing else;
* ``zero_store``: imported, with ``config.zero_store = True`` (every kernel flagged);
* ``check``: run by the parent as ``python -m warp_zerostore check probe.py check ...``, as a user runs it;
* ``snapshot``: imported, with every Tape the example makes a ``Tape(snapshot=True)``.

The hooks read and never write what the example computes: after every ``Tape.backward()`` (the outermost call)
and every ``wp.launch(..., adjoint=True)`` the program makes, the gradient (``.grad``) of every array the Tape's
launches passed, and the value of each that has one (the launch's ``adj_inputs``), are copied out (digests; the
arrays themselves for the first backward). A stock run also names the inputs central differences may perturb
(`Probe`); a ``perturb:NUMBER:ELEMENT:VALUE`` run (stock too) sets one element where its array is first passed and
stops at its first backward with the loss's value. The seconds the hooks took are reported apart
(``overhead_seconds``).

Written to ``OUT`` (a folder): ``result.json`` (`write_result`) and ``arrays.npz`` (the copies, keyed
``b0.a<n>``, the first backward's gradients).
"""

from __future__ import annotations

import contextlib
import hashlib
import importlib.util
import inspect
import io
import json
import os
import runpy
import sys
import time
import traceback
import warnings

import numpy as np

MODES = ("stock", "imported", "zero_store", "check", "snapshot")
#: not a mode of the table: a stock run with one element perturbed, stopped at its first backward (see `Probe`)
PERTURB = "perturb"

#: central differences: how many arrays, and elements of each, are perturbed
FD_ARRAYS = 2
FD_ELEMENTS = 2


def _load_compat(mode: str):
    """The package's Warp boundary: ``warp_zerostore._compat`` where the package is imported, else the same file
    loaded alone under another name (it imports only Warp and the standard library, and changes nothing on
    import)."""
    if mode not in ("stock", PERTURB):
        import warp_zerostore  # noqa: F401, PLC0415 - the mode is "the package imported"

        return sys.modules["warp_zerostore._compat"]
    spec = importlib.util.find_spec("warp_zerostore")
    if spec is None or not spec.submodule_search_locations:
        raise ModuleNotFoundError("warp_zerostore is not installed")
    path = os.path.join(list(spec.submodule_search_locations)[0], "_compat.py")
    loader = importlib.util.spec_from_file_location("_warp_examples_stock_compat", path)
    module = importlib.util.module_from_spec(loader)
    sys.modules[loader.name] = module  # its dataclasses look their module up
    loader.loader.exec_module(module)
    return module


def _digest(values: np.ndarray) -> str:
    return hashlib.sha1(np.ascontiguousarray(values).tobytes()).hexdigest()[:16]


class _Stop(BaseException):
    """A perturbed run has read its loss: nothing after it is needed."""


class Probe:
    """The hooks of one run and what they saw.

    Arrays are numbered in the order recorded launches first pass them, up to the first ``Tape.backward()``
    (references are held until then, so the numbers do not depend on Python reusing ids). A stock run notes, at
    that backward when it is given a loss, the inputs whose gradient central differences can check: arrays the
    forward left unchanged (their bytes at backward are those a recorded launch first saw), of a float type, with
    a non-zero gradient. Of those, the parameters are the ones the program changes after that backward (an
    optimizer's step), seen at the end of the run (`choose`). A ``perturb`` run (``target``: number, flat element,
    value) sets that element when its array is first passed, and stops at the first backward with the loss's value.
    """

    def __init__(self, compat, mode: str, target: tuple | None = None):
        self.compat = compat
        self.mode = mode
        self.target = target
        self.depth = 0
        self.backwards: list = []
        self.arrays: dict = {}
        self.overhead = 0.0
        self.counting = mode in ("stock", PERTURB)  # numbering arrays, until the first backward
        self.seen: dict = {}  # id -> (number, array, digest of its bytes when first passed)
        self.candidates: dict = {"status": "not available", "reason": "no Tape.backward() in the run"}
        self.perturbed: dict = {"found": False}

    # -- the hooks

    def install(self, tape_classes: list) -> None:
        import warp  # noqa: PLC0415

        for cls in tape_classes:
            cls.backward = self._backward_hook(cls.backward)
        for name in ("launch", "launch_tiled"):
            setattr(warp, name, self._launch_hook(getattr(warp, name)))

    def _backward_hook(self, original):
        probe = self

        def backward(tape, *args, **kwargs):
            loss = args[0] if args else kwargs.get("loss")
            if probe.depth == 0 and probe.mode == PERTURB:
                probe.perturbed["loss"] = None if loss is None else float(np.asarray(loss.numpy()).reshape(-1)[0])
                raise _Stop
            probe.depth += 1
            try:
                result = original(tape, *args, **kwargs)
            finally:
                probe.depth -= 1
            if probe.depth == 0:
                start = time.perf_counter()
                probe.after_backward(tape, loss)
                probe.overhead += time.perf_counter() - start
            return result

        backward.__wrapped__ = original  # type: ignore[attr-defined]
        return backward

    def _launch_hook(self, original):
        probe = self
        signature = inspect.signature(original)

        def launch(*args, **kwargs):
            try:
                bound = signature.bind(*args, **kwargs)
            except TypeError:
                return original(*args, **kwargs)  # Warp's own error, as without the hook
            a = bound.arguments
            if probe.counting and not a.get("adjoint") and probe.compat.active_tape() is not None:
                start = time.perf_counter()
                probe.number(list(a.get("inputs") or ()) + list(a.get("outputs") or ()))
                probe.overhead += time.perf_counter() - start
            result = original(*args, **kwargs)
            if a.get("adjoint") and probe.depth == 0:  # an adjoint launched by the program, not by a backward
                start = time.perf_counter()
                probe.after_adjoint_launch(a)
                probe.overhead += time.perf_counter() - start
            return result

        launch.__wrapped__ = original  # type: ignore[attr-defined]
        return launch

    def _arrays_in(self, value) -> list:
        import warp  # noqa: PLC0415

        if isinstance(value, warp.array):
            return [value]
        return self.compat.struct_arrays(value) if self.compat.is_struct_instance(value) else []

    def number(self, values: list) -> None:
        """Number the arrays a recorded launch passes that no earlier one did (and perturb the target)."""
        for value in values:
            for arr in self._arrays_in(value):
                if id(arr) in self.seen:
                    continue
                count = len(self.seen)
                if self.mode == PERTURB:
                    if self.target is not None and count == self.target[0]:
                        self._perturb(arr)
                    self.seen[id(arr)] = (count, arr, "")
                else:
                    self.seen[id(arr)] = (count, arr, _digest(arr.numpy()) if arr.device.is_cpu else "")

    def _perturb(self, arr) -> None:
        _, element, value = self.target
        values = np.array(arr.numpy(), copy=True)
        flat = values.reshape(-1)
        flat[element] = value
        arr.assign(values)
        self.perturbed = {"found": True, "set": float(flat[element])}

    # -- what the hooks copy out

    def _labelled_arrays(self, tape) -> list:
        """``[(label, array)]``: every array the Tape's kernel launches passed, once, in recording order
        (``launch #k kernel 'key' arg``), then those only in ``tape.gradients``."""
        compat, seen, out = self.compat, set(), []
        for index, entry in enumerate(compat.tape_entries(tape)):
            if compat.is_kernel_launch(entry):
                key = compat.kernel_key(compat.launch_kernel(entry))
                for label, value in compat.recorded_arguments(entry):
                    field = "" if self._arrays_in(value) == [value] else " (a struct field)"
                    for arr in self._arrays_in(value):
                        if id(arr) not in seen:
                            seen.add(id(arr))
                            out.append((f"launch #{index} kernel '{key}' {label}{field}", arr))
        for value in list(getattr(tape, "gradients", {})):
            for arr in self._arrays_in(value):
                if id(arr) not in seen:
                    seen.add(id(arr))
                    out.append(("tape.gradients", arr))
        return out

    def _keep(self, number: int, label: str, arr, grad) -> dict:
        """The digests of one array (and of its gradient ``grad``); the gradient itself for the first backward."""
        entry = {"label": label, "shape": list(arr.shape), "dtype": arr.dtype.__name__}
        if arr is not grad and grad is not None:  # the values gradients flow through (index arrays, scratch that
            entry["value"] = _digest(arr.numpy())  # a program leaves unwritten: not results)
        if grad is not None:
            values = np.asarray(grad.numpy())
            entry["grad"] = _digest(values)
            entry["grad_norm"] = float(np.linalg.norm(values.astype(np.float64).reshape(-1)))
            if number == 0:
                self.arrays[f"b{number}.a{len(self.arrays)}"] = np.array(values, copy=True)
                entry["saved"] = f"b{number}.a{len(self.arrays) - 1}"
        return entry

    def after_backward(self, tape, loss) -> None:
        number = len(self.backwards)
        labelled = self._labelled_arrays(tape)
        kept = [self._keep(number, label, arr, arr.grad) for label, arr in labelled]
        self.backwards.append({"kind": "Tape.backward", "loss": loss is not None, "arrays": kept})
        if self.counting:
            self.counting = False
            self.candidates = self._candidates(labelled, loss) if self.mode == "stock" else self.candidates
            self.seen.clear()

    def after_adjoint_launch(self, a: dict) -> None:
        number = len(self.backwards)
        key = self.compat.kernel_key(a["kernel"])
        kept = []
        for position, value in enumerate(list(a.get("adj_inputs") or ())):
            for arr in self._arrays_in(value):  # the adjoint's outputs are the gradients
                kept.append(self._keep(number, f"adjoint of kernel '{key}' adj_inputs[{position}]", arr, arr))
        self.backwards.append({"kind": "adjoint launch", "loss": False, "arrays": kept})

    def _candidates(self, labelled: list, loss) -> dict:
        """The inputs central differences may check (see the class docstring), held with their values and
        gradient at this backward until `choose` picks the parameters among them."""
        if loss is None:
            return {"status": "not available", "reason": "the first backward() is given no loss array"}
        inputs = []
        for label, arr in labelled:
            number, _, before = self.seen.get(id(arr), (None, None, ""))
            if number is None or arr is loss or arr.grad is None or not arr.device.is_cpu:
                continue
            values = np.asarray(arr.numpy())
            if values.dtype.kind != "f" or before != _digest(values):
                continue  # not a float, or the forward changed it
            grad = np.asarray(arr.grad.numpy(), dtype=np.float64).reshape(-1)
            if np.any(grad != 0.0):
                inputs.append((number, label, arr, np.array(values, copy=True).reshape(-1), grad))
        if not inputs:
            return {"status": "not available", "reason": "no input the forward leaves unchanged has a gradient"}
        return {"status": "pending", "inputs": inputs}

    def choose(self) -> None:
        """At the end of the run: the parameters are the inputs the program changed after the first backward
        (an optimizer's step); central differences check up to `FD_ARRAYS` of them, largest gradient first,
        `FD_ELEMENTS` elements each. Where the program changed none, every input is a candidate, said so."""
        if self.candidates.get("status") != "pending":
            return
        inputs = self.candidates["inputs"]
        changed = [i for i in inputs if _digest(i[2].numpy().reshape(-1)) != _digest(i[3])]
        chosen = sorted(changed or inputs, key=lambda i: -float(np.linalg.norm(i[4])))[:FD_ARRAYS]
        rng = np.random.default_rng(0)
        elements = []
        for number, label, _, values, grad in chosen:
            nonzero = np.flatnonzero(grad)
            picks = [int(np.argmax(np.abs(grad)))]
            picks += [int(i) for i in rng.choice(nonzero, size=min(FD_ELEMENTS - 1, len(nonzero)), replace=False)]
            for element in dict.fromkeys(picks):
                elements.append(
                    {
                        "array": number,
                        "label": label,
                        "element": element,
                        "value": float(values[element]),
                        "width": values.dtype.itemsize,
                        "backward": float(grad[element]),
                    }
                )
        self.candidates = {
            "status": "ready",
            "parameters": "changed after the backward" if changed else "unknown",
            "elements": elements,
        }


def _quiet(compat) -> None:
    import warp  # noqa: PLC0415

    warp.config.quiet = True
    if hasattr(warp.config, "log_level") and hasattr(warp, "LOG_WARNING"):
        warp.config.log_level = warp.LOG_WARNING


def _hazard(h) -> dict:
    def site(s):
        return None if s is None else {"kernel": s.kernel, "argument": s.argument, "location": s.location}

    return {
        "kind": h.kind,
        "real": h.real,
        "cause": h.cause,
        "elements": h.elements,
        "writer": site(h.writer),
        "reader": site(h.reader),
        "earlier": site(h.earlier),
        "message": h.message(),
    }


def parse_mode(text: str) -> tuple:
    """``(mode, target)``: one of `MODES` and None, or ``perturb:NUMBER:ELEMENT:VALUE`` as `PERTURB` and
    ``(number, element, value)``."""
    if text in MODES:
        return text, None
    parts = text.split(":")
    if parts[0] == PERTURB and len(parts) == 4:
        return PERTURB, (int(parts[1]), int(parts[2]), float(parts[3]))
    raise SystemExit(f"probe: the mode is one of {', '.join(MODES)} or {PERTURB}:NUMBER:ELEMENT:VALUE, not {text!r}")


def _setup(mode: str, compat, hazards: list) -> tuple:
    """The Tape classes to hook and the context the example runs in, per mode."""
    tape_classes = [compat.WarpTape]
    context = contextlib.ExitStack()
    if mode not in ("stock", PERTURB):
        import warp_zerostore  # noqa: PLC0415
        from warp_zerostore.tape import hazard_listener  # noqa: PLC0415

        tape_classes.append(warp_zerostore.Tape)
        context.enter_context(hazard_listener(hazards.append))
        if mode == "zero_store":
            warp_zerostore.config.zero_store = True
        if mode == "snapshot":
            from warp_zerostore.tape.defaults import every_tape  # noqa: PLC0415

            context.enter_context(every_tape(snapshot=True))
    return tape_classes, context


def run(mode_text: str, out: str, example: str, args: list) -> int:
    """Run ``example`` with ``args`` in a mode (`parse_mode`); write what was seen into the folder ``out``.
    Returns 0, or raises again what the example raised (so the check command reports it as a user sees it)."""
    mode, target = parse_mode(mode_text)
    compat = _load_compat(mode)
    _quiet(compat)
    hazards: list = []
    tape_classes, context = _setup(mode, compat, hazards)
    probe = Probe(compat, mode, target)
    probe.install(tape_classes)
    record: dict = {"mode": mode, "example": example, "args": args, "status": "ran", "error": "", "exit_code": 0}
    stdout = io.StringIO()
    seen_warnings: list = []
    start = time.perf_counter()
    saved_argv, saved_path = list(sys.argv), list(sys.path)
    sys.argv = [example, *args]
    sys.path[0] = os.path.dirname(os.path.abspath(example))  # as `python example.py` has it (not this folder)
    raised: BaseException | None = None
    try:
        with context, warnings.catch_warnings(record=True) as caught, compat.warp_warnings_as_warnings():
            warnings.simplefilter("always")
            with contextlib.redirect_stdout(stdout):
                try:
                    runpy.run_path(example, run_name="__main__")
                except _Stop:
                    record["status"] = "stopped at its first backward"
                except SystemExit as exit_:
                    code = exit_.code
                    if code not in (None, 0):
                        record.update(status="exited", exit_code=code if isinstance(code, int) else 1)
                        raised = exit_
                except BaseException as error:  # noqa: BLE001 - recorded, then raised again
                    record.update(status="raised", error=f"{type(error).__name__}: {error}")
                    record["traceback"] = traceback.format_exc()[-4000:]
                    raised = error
            seen_warnings = list(caught)
    finally:
        sys.argv, sys.path[:] = saved_argv, saved_path
    probe.choose()
    record.update(
        seconds=time.perf_counter() - start,
        overhead_seconds=probe.overhead,
        backwards=probe.backwards,
        central_differences=probe.candidates,
        perturbed=probe.perturbed,
        hazards=[_hazard(h) for h in hazards],
        warnings=_warning_list(seen_warnings),
        stdout=stdout.getvalue(),
        package_imported="warp_zerostore" in sys.modules,
        warp_version=compat.WARP_VERSION_TEXT,
    )
    write_result(out, record, probe.arrays)
    sys.stdout.write(record["stdout"])
    if raised is not None:
        raise raised
    return 0


def _warning_list(caught: list) -> list:
    """Each distinct warning once: category, message (cut), where, how many times."""
    counted: dict = {}
    for w in caught:
        key = (w.category.__name__, str(w.message)[:600], f"{os.path.basename(w.filename)}:{w.lineno}")
        counted[key] = counted.get(key, 0) + 1
    return [{"category": c, "message": m, "where": where, "count": n} for (c, m, where), n in counted.items()]


def write_result(out: str, record: dict, arrays: dict) -> None:
    """``result.json`` and ``arrays.npz`` in the folder ``out``."""
    os.makedirs(out, exist_ok=True)
    np.savez(os.path.join(out, "arrays.npz"), **arrays)
    with open(os.path.join(out, "result.json"), "w", encoding="utf-8") as f:
        json.dump(record, f, indent=1, default=str)


if __name__ == "__main__":
    if len(sys.argv) < 4:
        raise SystemExit("usage: probe.py MODE OUT EXAMPLE [ARGS...]")
    sys.exit(run(sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4:]))
