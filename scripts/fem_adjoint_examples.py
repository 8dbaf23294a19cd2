"""The adjoint method in the warp.fem examples that ship inside the installed warp-lang wheel, on every Tape.

``example_darcy_ls_optimization`` and ``example_elastic_shape_optimization`` record a residual, solve for its state
outside the Tape (``bsr_cg``), and let the backward read the solution on purpose. Each example runs (short
arguments, CPU), every mode in a child process of its own:

* ``stock``: plain Warp, the package not imported; every gradient after every ``backward()`` kept.
* ``snapshot``: unmodified, every Tape ``Tape(snapshot=True)``: it must refuse by name (the solve after record), with
  no "read before and after write" warning and no wrong gradient.
* ``check``: unmodified, under ``python -m warp_zerostore check``: exactly one report, the change after record, real,
  its advice naming both cases (a bug; the adjoint method: declare it).
* ``declared check`` / ``declared snapshot``: a copy with one line added after the solve,
  ``warp_zerostore.read_at_backward(state)``: check exits 0; the snapshot Tape's gradients are bitwise stock's.
* ``forced``: unmodified, ``warp_zerostore.config.zero_store = True`` on a plain Tape: gradients bitwise stock's,
  and no ``AdjointWarning`` (none is about a kernel no backward runs, nor about an integer local).

    python scripts/fem_adjoint_examples.py [--resolution 10] [--iters 2] [--json results.json]

Exit status 0 when every expectation above holds, 1 otherwise (the table says which).
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import os
import pathlib
import re
import runpy
import subprocess
import sys
import tempfile
import warnings

EXAMPLES = ("example_darcy_ls_optimization", "example_elastic_shape_optimization")
MODES = ("stock", "snapshot", "check", "declared check", "declared snapshot", "forced")
_SOLVE = re.compile(r"^(?P<indent>\s+)fem_example_utils\.bsr_cg\(\w+, b=\w+, x=(?P<state>\w+),")


def example_path(name: str) -> pathlib.Path:
    import warp  # noqa: PLC0415

    return pathlib.Path(warp.__file__).parent / "examples" / "fem" / f"{name}.py"


def declared_copy(source: pathlib.Path, folder: pathlib.Path) -> pathlib.Path:
    """The example with ``warp_zerostore.read_at_backward(state)`` after its solve (the first ``bsr_cg`` into the
    state), and the import it needs."""
    lines, done = [], False
    for line in source.read_text(encoding="utf-8").splitlines():
        lines.append(line)
        if line.strip() == "import warp as wp":
            lines.append("import warp_zerostore")
        found = _SOLVE.match(line)
        if found and not done:
            lines.append(
                f"{found['indent']}warp_zerostore.read_at_backward({found['state']})"
                "  # the residual's backward must read the solution"
            )
            done = True
    if not done:
        raise RuntimeError(f"{source.name}: no solve (fem_example_utils.bsr_cg(..., x=state, ...)) found")
    copy = folder / source.name
    copy.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return copy


# -- one mode, in a child process


def _recording(base, options: dict, grads: list):
    class Recording(base):
        def __init__(self, *args, **kwargs):
            super().__init__(*args, **{**options, **kwargs})

        def backward(self, *args, **kwargs):
            super().backward(*args, **kwargs)
            grads.append([_grad(a) for a in _arrays(self)])

    return Recording


def _grad(arr):
    return None if arr.grad is None else arr.grad.numpy().tolist()


def _arrays(tape) -> list:
    """The arrays of a Tape's launches (struct fields included), each once, in recording order."""
    import warp  # noqa: PLC0415

    seen: dict = {}
    stack = []
    for entry in tape.launches:
        if isinstance(entry, (list, tuple)) and entry and hasattr(entry[0], "key"):
            stack.extend(list(entry[3]) + list(entry[4]))
    for value in stack:
        if isinstance(value, warp.array):
            seen.setdefault(id(value), value)
        elif hasattr(value, "_cls"):
            stack.extend(getattr(value, name) for name in value._cls.vars)
    return list(seen.values())


def child(mode: str, path: str, args: list) -> dict:
    import warp  # noqa: PLC0415

    warp.config.quiet = True
    out: dict = {"mode": mode, "status": "ok", "warnings": []}
    grads: list = []
    sys.argv = [path, *args]
    sys.path.insert(0, os.path.dirname(path))
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            if mode == "stock":
                warp.Tape = _recording(warp.Tape, {}, grads)
                runpy.run_path(path, run_name="__main__")
            elif mode.endswith("check"):
                from warp_zerostore.cli import check  # noqa: PLC0415
                from warp_zerostore.tape import hazard_listener  # noqa: PLC0415

                found = []
                report = io.StringIO()
                with hazard_listener(found.append), contextlib.redirect_stdout(report):
                    out["exit"] = int(check.run(path, args))
                out["hazards"] = [
                    {"kind": h.kind, "real": h.real, "message": h.message()}
                    for h in {h.key(): h for h in found}.values()
                ]
            else:
                import warp_zerostore  # noqa: PLC0415
                from warp_zerostore import _compat  # noqa: PLC0415

                options = {"snapshot": True} if mode.endswith("snapshot") else {}
                if mode == "forced":
                    warp_zerostore.config.zero_store = True
                with _compat.tape_class_replaced(_recording(warp_zerostore.Tape, options, grads)):
                    runpy.run_path(path, run_name="__main__")
        except BaseException as error:  # noqa: BLE001 - the refusal is an expected outcome, reported by name
            out["status"] = f"{type(error).__name__}: {error}"
        out["warnings"] = [{"category": w.category.__name__, "message": str(w.message)} for w in caught]
    out["grads"] = grads
    return out


# -- the parent: each mode, judged


def run_child(mode: str, path: pathlib.Path, args: list) -> dict:
    command = [sys.executable, __file__, "--child", mode, str(path), "--", *args]
    done = subprocess.run(command, capture_output=True, text=True, check=False)
    last = done.stdout.strip().splitlines()[-1] if done.stdout.strip() else ""
    if not last.startswith("{"):
        return {"mode": mode, "status": f"child failed: {done.stderr[-2000:]}", "warnings": [], "grads": []}
    return json.loads(last)


def judge(name: str, results: dict) -> list:
    """``[(mode, passed, what was seen)]``."""
    stock = results["stock"]["grads"]
    rows = []

    def count(result, category, text=""):
        return sum(1 for w in result["warnings"] if w["category"] == category and text in w["message"])

    snap = results["snapshot"]
    refused = snap["status"].startswith("OverwriteError") and "mutated after record" in snap["status"]
    replays = count(snap, "OverwriteWarning", "read before and after write")
    wrong = any(g != s for g, s in zip(snap["grads"], stock))
    rows.append(
        (
            "snapshot",
            refused and replays == 0 and not wrong,
            f"refused by name: {refused}; "
            f"'read before and after write': {replays}; gradients handed back before: {len(snap['grads'])}",
        )
    )
    check = results["check"]
    hazards = check.get("hazards", [])
    one = len(hazards) == 1 and hazards[0]["kind"] == "mutated after record" and hazards[0]["real"]
    advice = one and "bug" in hazards[0]["message"] and "read_at_backward" in hazards[0]["message"]
    rows.append(
        (
            "check",
            one and advice,
            f"{len(hazards)} report(s): {[h['kind'] for h in hazards]}, exit "
            f"{check.get('exit')}, both cases in the advice: {bool(advice)}",
        )
    )
    declared = results["declared check"]
    rows.append(
        (
            "declared check",
            declared.get("exit") == 0,
            f"exit {declared.get('exit')}, {len(declared.get('hazards', []))} report(s)",
        )
    )
    for mode in ("declared snapshot", "forced"):
        mine = results[mode]
        adjoint = count(mine, "AdjointWarning")
        same = mine["status"] == "ok" and mine["grads"] == stock and len(stock) > 0 and adjoint == 0
        seen = f"{len(mine['grads'])} backward(s), gradients bitwise stock's: {same}"
        if mode == "forced":
            seen += f"; AdjointWarnings: {adjoint}"
            seen += "".join(
                f"\n      {w['message'][:160]}" for w in mine["warnings"] if w["category"] == "AdjointWarning"
            )
        rows.append((mode, same, seen + ("" if mine["status"] == "ok" else f"; {mine['status'][:200]}")))
    return rows


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--resolution", type=int, default=10)
    parser.add_argument("--iters", type=int, default=2)
    parser.add_argument("--json", help="write every mode's outcome here")
    parser.add_argument("--child", nargs=2, metavar=("MODE", "PATH"), help=argparse.SUPPRESS)
    parser.add_argument("rest", nargs="*", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        print(json.dumps(child(args.child[0], args.child[1], args.rest)))
        return 0
    import warp  # noqa: PLC0415

    example_args = ["--resolution", str(args.resolution), "--num-iters", str(args.iters), "--headless"]
    everything, failed = {}, False
    with tempfile.TemporaryDirectory() as folder:
        for name in EXAMPLES:
            source = example_path(name)
            copy = declared_copy(source, pathlib.Path(folder))
            results = {
                mode: run_child(mode, copy if mode.startswith("declared") else source, example_args) for mode in MODES
            }
            everything[name] = results
            print(f"{name} (warp-lang {warp.config.version}, {' '.join(example_args)})")
            for mode, passed, seen in judge(name, results):
                failed |= not passed
                print(f"  {'ok  ' if passed else 'FAIL'} {mode:18} {seen}")
    if args.json:
        pathlib.Path(args.json).write_text(json.dumps(everything, indent=1), encoding="utf-8")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
