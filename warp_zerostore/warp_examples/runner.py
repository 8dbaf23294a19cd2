"""Each example in each mode, one process a run, compared with stock: the table and its JSON.

For every example of `discover.find` that can run here, `run_example` runs `probe` once per mode (stock first,
twice: what two stock runs do not agree on, memory the program never writes say, is not compared),
each in a new process in a folder of its own (fresh Warp state; the check mode as ``python -m warp_zerostore check
probe.py ...``, as a user runs it), then compares each mode with stock:

* **gradients**: every gradient array after every backward, bitwise (digests); where they differ, the relative
  L2 difference of the first backward's arrays (the runs keep those);
* **forward**: the values of the same arrays, and what the example printed;
* **reports**: the Tape's hazards (real, and the others: notes) and the warnings, by kind and category.

A mode is **bitwise** where every gradient equals stock's, **refused** where it raised `OverwriteError` (the
snapshot Tape refusing by name), and **differs** or **raised** otherwise: those two fail the run
(`Summary.failed`). Stock is checked against central differences of the whole program where the example allows
it (`central_differences`); where they disagree with stock, a mode that differs from stock and agrees with them at
those elements is **right where stock is off**, not a failure (`agrees_with_central`).
"""

from __future__ import annotations

import dataclasses
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time

import numpy as np

from .discover import Example
from .probe import MODES, PERTURB

PROBE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "probe.py")

#: the relative step of a central difference, per float width in bytes, and the agreement asked for
FD_STEP = {2: 1e-1, 4: 1e-2, 8: 1e-6}
FD_RTOL = 0.05
#: the rounding of a float32 loss, in units of its value (a central difference cannot be finer than this)
LOSS_EPSILON = 2.0**-23


@dataclasses.dataclass
class ModeRun:
    """One example in one mode, compared with stock.

    Attributes:
        mode: One of `probe.MODES`.
        status: ``"ran"``, ``"raised"``, ``"exited"``, ``"failed"`` (no result: the process died or timed out).
        error: What it raised, one line.
        exit_status: The process's exit status (for ``check``, the check command's).
        seconds: The example's own run, less the probe's work.
        backwards: How many backward passes (``Tape.backward`` and adjoint launches) it made.
        verdict: ``"stock"`` (the stock run), ``"bitwise"``, ``"refused"``, ``"differs"``, ``"raised"``, ``"right
            where stock is off"``.
        gradients: ``[equal, compared]`` gradient arrays over all backwards.
        first_difference: The first backward whose gradients differ from stock's (None: none differ).
        largest_difference: ``(relative L2 difference, array label)`` of the first backward, where it differs.
        values_equal: The arrays' values after every backward are stock's.
        stdout_equal: The example printed what stock printed.
        hazards: Each distinct hazard (a dict: kind, real, cause, sites, message).
        warnings: Each distinct warning (category, message, where, count).
    """

    mode: str
    status: str = "failed"
    error: str = ""
    exit_status: int = 0
    seconds: float = 0.0
    backwards: int = 0
    verdict: str = ""
    gradients: list = dataclasses.field(default_factory=lambda: [0, 0])
    first_difference: int | None = None
    largest_difference: tuple | None = None
    values_equal: bool = True
    stdout_equal: bool = True
    hazards: list = dataclasses.field(default_factory=list)
    warnings: list = dataclasses.field(default_factory=list)

    @property
    def real_hazards(self) -> list:
        return [h for h in self.hazards if h["real"] and not h["kind"].startswith("not checked")]

    @property
    def notes(self) -> list:
        return [h for h in self.hazards if not h["real"]]


@dataclasses.dataclass
class ExampleResult:
    """Every mode of one example (``skip``: why none ran; ``noise``: what two stock runs do not agree on, not
    compared)."""

    example: Example
    runs: dict = dataclasses.field(default_factory=dict)
    central: dict = dataclasses.field(default_factory=dict)
    skip: str = ""
    noise: list = dataclasses.field(default_factory=list)  # what differs between two stock runs (`noise`)


@dataclasses.dataclass
class Summary:
    """The results of one runner invocation."""

    results: list
    warp_version: str
    modes: tuple
    seconds: float

    @property
    def failed(self) -> list:
        """``[(example, mode, verdict)]`` where a mode differs from stock or raised where stock ran."""
        return [
            (r.example.name, run.mode, run.verdict)
            for r in self.results
            for run in r.runs.values()
            if run.verdict in ("differs", "raised")
        ]


def _command(mode: str, out: str, example: Example, python: str) -> list:
    probe = [PROBE, mode, out, example.path, *example.arguments]
    return [python, "-m", "warp_zerostore", "check", *probe] if mode == "check" else [python, *probe]


def run_probe(
    example: Example, mode: str, folder: str, timeout: float, python: str = sys.executable, name: str = ""
) -> tuple:
    """Run the probe for one mode in its own process and folder (``name``, default the mode's): ``(record or None,
    arrays, exit status, tail of its output)``."""
    out = os.path.join(folder, name or mode.replace(":", "_"))
    os.makedirs(out, exist_ok=True)
    try:
        done = subprocess.run(
            _command(mode, out, example, python),
            cwd=out,
            capture_output=True,
            text=True,
            timeout=timeout,
            check=False,
        )
        status, output = done.returncode, (done.stdout + done.stderr)[-3000:]
    except subprocess.TimeoutExpired:
        status, output = -1, f"timed out after {timeout:.0f} s"
    path = os.path.join(out, "result.json")
    if not os.path.exists(path):
        return None, {}, status, output
    with open(path, encoding="utf-8") as f:
        record = json.load(f)
    record["check_report"] = output if mode == "check" else ""
    with np.load(os.path.join(out, "arrays.npz")) as saved:
        arrays = {k: saved[k] for k in saved.files}
    return record, arrays, status, output


def _distinct(hazards: list) -> list:
    """Each hazard once (a hazard found by several Tapes is heard once per Tape), with how many Tapes found it."""
    found: dict = {}
    for h in hazards:
        sites = tuple(
            None if h[s] is None else (h[s]["kernel"], h[s]["argument"], h[s]["location"])
            for s in ("writer", "reader", "earlier")
        )
        key = (h["kind"], h["real"], h["cause"], sites)
        if key in found:
            found[key]["tapes"] += 1
        else:
            found[key] = {**h, "tapes": 1}
    return list(found.values())


def _from_record(mode: str, record: dict | None, status: int, output: str) -> ModeRun:
    if record is None:
        return ModeRun(
            mode,
            status="failed",
            error=output.strip().splitlines()[-1] if output.strip() else "",
            exit_status=status,
            verdict="raised",
        )
    return ModeRun(
        mode,
        status=record["status"],
        error=record["error"],
        exit_status=status,
        seconds=max(0.0, record["seconds"] - record["overhead_seconds"]),
        backwards=len(record["backwards"]),
        hazards=_distinct(record["hazards"]),
        warnings=record["warnings"],
    )


def _digests(record: dict) -> dict:
    """``{(backward, array, "grad" or "value"): digest}`` of a run."""
    return {
        (number, position, field): entry[field]
        for number, backward in enumerate(record["backwards"])
        for position, entry in enumerate(backward["arrays"])
        for field in ("grad", "value")
        if field in entry
    }


def noise(stock: dict, again: dict) -> set:
    """What differs between two stock runs of one example (memory a program never writes, say): not compared.
    The stdout is ``("stdout",)`` in the set where it differs."""
    a, b = _digests(stock), _digests(again)
    noisy = {key for key in a.keys() | b.keys() if a.get(key) != b.get(key)}
    if stock["stdout"] != again["stdout"]:
        noisy.add(("stdout",))
    return noisy


def compare(
    run: ModeRun, stock: dict, stock_arrays: dict, record: dict, arrays: dict, noisy: set = frozenset()
) -> None:
    """Fill ``run``'s comparison with stock (see the module docstring) and its verdict; what differs between two
    stock runs (``noisy``) is not compared."""
    if run.status != "ran":
        refused = run.error.startswith("OverwriteError")
        run.verdict = "refused" if refused else "raised"
        return
    mine, theirs = record["backwards"], stock["backwards"]
    equal = compared = 0
    for number in range(max(len(mine), len(theirs))):
        a = mine[number]["arrays"] if number < len(mine) else []
        b = theirs[number]["arrays"] if number < len(theirs) else []
        for position in range(max(len(a), len(b))):
            x = a[position] if position < len(a) else {}
            y = b[position] if position < len(b) else {}
            if ("grad" in x or "grad" in y) and (number, position, "grad") not in noisy:
                compared += 1
                if x.get("grad") == y.get("grad") and x.get("shape") == y.get("shape"):
                    equal += 1
                else:
                    run.first_difference = number if run.first_difference is None else run.first_difference
                    if number == 0 and "saved" in x and "saved" in y:
                        difference = _relative_difference(arrays[x["saved"]], stock_arrays[y["saved"]])
                        if run.largest_difference is None or difference > run.largest_difference[0]:
                            run.largest_difference = (difference, y.get("label", ""))
            if x.get("value") != y.get("value") and (number, position, "value") not in noisy:
                run.values_equal = False
    run.gradients = [equal, compared]
    run.stdout_equal = ("stdout",) in noisy or record["stdout"] == stock["stdout"]
    run.verdict = "bitwise" if run.first_difference is None and len(mine) == len(theirs) else "differs"


def _relative_difference(mine: np.ndarray, stock: np.ndarray) -> float:
    a, b = np.asarray(mine, dtype=np.float64), np.asarray(stock, dtype=np.float64)
    if a.shape != b.shape:
        return float("inf")
    scale = np.linalg.norm(b.reshape(-1))
    difference = np.linalg.norm((a - b).reshape(-1))
    return float(difference / scale) if scale > 0 else float(difference)


def _central(example: Example, element: dict, h: float, folder: str, timeout: float, python: str) -> tuple:
    """``(central difference, its rounding bound)`` at one element with step ``h``, or ``(None, why)``."""
    losses, values = [], []
    for value in (element["value"] + h, element["value"] - h):
        mode = f"{PERTURB}:{element['array']}:{element['element']}:{value!r}"
        record, _, _, output = run_probe(example, mode, folder, timeout, python)
        perturbed = (record or {}).get("perturbed", {})
        if not perturbed.get("found") or perturbed.get("loss") is None:
            return None, f"a perturbed run did not reach its backward ({output[-200:]})"
        losses.append(perturbed["loss"])
        values.append(perturbed["set"])  # as the array's type holds it
    step = values[0] - values[1]
    return (losses[0] - losses[1]) / step, 4.0 * LOSS_EPSILON * max(abs(v) for v in losses) / abs(step)


def central_differences(example: Example, stock: dict, folder: str, timeout: float, python: str) -> dict:
    """Stock's gradient at the elements the stock run chose, against central differences of the whole program:
    each element set to ``x + h`` and ``x - h`` where its array is first passed, in a stock run stopped at its
    first backward, whose loss it reads; at two steps (``h`` and ``h / 10``), which must agree with each other
    (else a kink or rounding: inconclusive), and above the float32 loss's rounding (else inconclusive)."""
    chosen = stock["central_differences"]
    if chosen.get("status") != "ready":
        return {"status": "not available", "reason": chosen.get("reason", "")}
    checked = []
    for element in chosen["elements"]:
        h = FD_STEP.get(element["width"], 1e-2) * max(1.0, abs(element["value"]))
        (coarse, coarse_noise), (fine, fine_noise) = (
            _central(example, element, step, folder, timeout, python) for step in (h, h / 10.0)
        )
        if coarse is None or fine is None:
            return {"status": "not available", "reason": coarse_noise if coarse is None else fine_noise}
        backward = element["backward"]
        error, scale = abs(coarse - backward), max(abs(backward), abs(coarse))
        if abs(coarse - fine) > FD_RTOL * max(abs(coarse), abs(fine)) + coarse_noise + fine_noise:
            verdict = "inconclusive"  # the two steps disagree: a kink within h, or rounding
        elif coarse_noise > 0.5 * max(abs(backward), abs(coarse)):
            verdict = "inconclusive"  # below what a float32 loss resolves
        else:
            verdict = "agrees" if error <= FD_RTOL * scale + coarse_noise else "differs"
        checked.append(
            {
                **element,
                "central": coarse,
                "central_fine": fine,
                "noise": coarse_noise,
                "relative_error": error / scale if scale else 0.0,
                "verdict": verdict,
            }
        )
    verdicts = {c["verdict"] for c in checked}
    status = "differs" if "differs" in verdicts else "agrees" if "agrees" in verdicts else "inconclusive"
    return {"status": status, "elements": checked, "tolerance": FD_RTOL}


def agrees_with_central(run_arrays: dict, record: dict, central: dict) -> bool:
    """Whether a mode's first-backward gradient agrees with central differences at every element where stock's
    does not (a mode that differs from stock there may be right where stock is off)."""
    off = [e for e in central.get("elements", []) if e["verdict"] == "differs"]
    if not off or not record["backwards"]:
        return False
    saved = {a["label"]: a.get("saved") for a in record["backwards"][0]["arrays"]}
    for element in off:
        key = saved.get(element["label"])
        if key is None or key not in run_arrays:
            return False
        value = float(np.asarray(run_arrays[key], dtype=np.float64).reshape(-1)[element["element"]])
        if abs(value - element["central"]) > FD_RTOL * max(abs(value), abs(element["central"])) + element["noise"]:
            return False
    return True


def run_example(
    example: Example,
    modes: tuple = MODES,
    timeout: float = 900.0,
    python: str = sys.executable,
    keep: str | None = None,
    central: bool = True,
    progress=None,
) -> ExampleResult:
    """Every mode of one example, compared with stock (stock always runs first)."""
    result = ExampleResult(example, skip=example.skip)
    if example.skip:
        return result
    folder = os.path.join(keep, example.short_name) if keep else tempfile.mkdtemp(prefix="warp-examples-")
    try:
        stock, stock_arrays, status, output = run_probe(example, "stock", folder, timeout, python)
        result.runs["stock"] = _from_record("stock", stock, status, output)
        result.runs["stock"].verdict = "stock" if stock is not None and stock["status"] == "ran" else "raised"
        if stock is not None:
            result.runs["stock"].gradients = [
                sum(1 for b in stock["backwards"] for a in b["arrays"] if "grad" in a)
            ] * 2
        if stock is None or stock["status"] != "ran":
            result.skip = f"stock Warp does not run it here: {result.runs['stock'].error or output[-300:]}"
            return result
        again, _, _, _ = run_probe(example, "stock", folder, timeout, python, name="stock_again")
        result.noise = sorted(noise(stock, again)) if again is not None else [("stock run again failed",)]
        if progress:
            progress(example, result.runs["stock"])
        if central:
            result.central = central_differences(example, stock, folder, timeout, python)
        for mode in modes:
            if mode == "stock":
                continue
            record, arrays, status, output = run_probe(example, mode, folder, timeout, python)
            run = result.runs[mode] = _from_record(mode, record, status, output)
            if record is not None:
                compare(run, stock, stock_arrays, record, arrays, set(map(tuple, result.noise)))
                if run.verdict == "differs" and agrees_with_central(arrays, record, result.central):
                    run.verdict = "right where stock is off"
            if progress:
                progress(example, run)
    finally:
        if not keep:
            shutil.rmtree(folder, ignore_errors=True)
    return result


def run_all(examples: list, modes: tuple = MODES, **options) -> Summary:
    """`run_example` for each example, in order."""
    start = time.perf_counter()
    results = [run_example(e, modes, **options) for e in examples]
    from .. import _compat  # noqa: PLC0415 - the Warp these processes ran

    return Summary(results, _compat.WARP_VERSION_TEXT, tuple(modes), time.perf_counter() - start)
