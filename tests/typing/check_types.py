"""``make lint``'s type check: mypy and pyright see the package as a user does.

* ``warp_script.py`` (plain Warp) gets no more errors through ``import warp_zerostore as wp`` than through
  ``import warp as wp``;
* ``user_script.py`` (this package's names: ``kernel(zero_store=)``, ``Tape(check=, snapshot=)``,
  ``config.zero_store``, ``rollout(schedule=, check=)``) gets only the errors Warp's own stub gives every Warp
  script (``wp.array(dtype=...)`` annotations are calls; ``array.grad`` may be None; see ALLOWED);
* ``bad_script.py``: every line marked ``# expect:`` is flagged by both checkers.

mypy runs with ``--follow-imports=silent``: the package's own modules are analysed for their types, not reported
on (a user's mypy does not report errors inside an installed package either).

``--outside``: copy the scripts to a temporary folder and check them there, so that the installed package (a
wheel) is what the checkers see, not this checkout. The checkers run as ``python -m mypy`` / ``python -m pyright``
of this interpreter, or from ``$TYPECHECK_BIN`` when set. Prints the error counts; exits 1 on a failure.
"""

from __future__ import annotations

import json
import os
import pathlib
import re
import shutil
import subprocess
import sys
import tempfile

HERE = pathlib.Path(__file__).resolve().parent
ROOT = HERE.parents[1]
SCRIPTS = ("warp_script.py", "user_script.py", "bad_script.py")

# Errors Warp's own typing gives every Warp script (the same through `import warp`).
ALLOWED = {
    "mypy": ("Invalid type comment or annotation", "Need type annotation for"),
    "pyright": ("Call expression not allowed in type expression", 'is not a known attribute of "None"'),
}


def _tool(name: str) -> list:
    folder = os.environ.get("TYPECHECK_BIN")
    return [os.path.join(folder, name)] if folder else [sys.executable, "-m", name]


def mypy(path: pathlib.Path, cwd: pathlib.Path) -> list:
    """``[(line, message), ...]`` of mypy's errors in ``path``."""
    done = subprocess.run(
        [*_tool("mypy"), "--python-executable", sys.executable, "--no-error-summary", "--follow-imports=silent",
         str(path.relative_to(cwd))],
        capture_output=True, text=True, cwd=cwd,
    )  # fmt: skip
    found = re.findall(rf"^{re.escape(str(path.relative_to(cwd)))}:(\d+): error: (.*)$", done.stdout, flags=re.M)
    if done.returncode not in (0, 1) or (done.returncode == 1 and not found):
        raise RuntimeError(f"mypy failed on {path}:\n{done.stdout}{done.stderr}")
    return [(int(line), message) for line, message in found]


def pyright(path: pathlib.Path, cwd: pathlib.Path) -> list:
    done = subprocess.run(
        [*_tool("pyright"), "--outputjson", "--pythonpath", sys.executable, str(path.relative_to(cwd))],
        capture_output=True, text=True, cwd=cwd,
    )  # fmt: skip
    try:
        report = json.loads(done.stdout)
    except ValueError:
        raise RuntimeError(f"pyright failed on {path}:\n{done.stdout}{done.stderr}") from None
    return [
        (d["range"]["start"]["line"] + 1, d["message"].splitlines()[0])
        for d in report["generalDiagnostics"]
        if d["severity"] == "error"
    ]


def _expected_lines(path: pathlib.Path, checker: str) -> dict:
    """``{line: what}`` of the lines marked ``  # expect: what`` (both checkers) or ``  # expect[mypy]: what``."""
    out = {}
    for n, line in enumerate(path.read_text().splitlines(), 1):
        found = re.search(r"\s{2}# expect(?:\[(\w+)\])?: (.+)$", line)
        if found and found.group(1) in (None, checker):
            out[n] = found.group(2)
    return out


def run(folder: pathlib.Path, cwd: pathlib.Path) -> list:
    """The failures (empty when all is well); prints the counts."""
    failures = []
    warp_script = folder / "warp_script.py"
    facade = folder / "_warp_script_through_facade.py"
    facade.write_text(warp_script.read_text().replace("import warp as wp\n", "import warp_zerostore as wp\n"))
    try:
        for name, check in (("mypy", mypy), ("pyright", pyright)):
            through_warp, through_facade = check(warp_script, cwd), check(facade, cwd)
            user, bad = check(folder / "user_script.py", cwd), check(folder / "bad_script.py", cwd)
            print(
                f"{name}: warp_script.py {len(through_warp)} error(s) through warp, {len(through_facade)} through "
                f"warp_zerostore; user_script.py {len(user)}; bad_script.py {len(bad)}"
            )
            if sorted(through_facade) != sorted(through_warp):
                failures.append(
                    f"{name}: warp_script.py differs through warp_zerostore: {through_facade} vs {through_warp}"
                )
            unexpected = [e for e in user if not any(a in e[1] for a in ALLOWED[name])]
            if unexpected:
                failures.append(f"{name}: user_script.py: {unexpected}")
            flagged = {line for line, _ in bad}
            for line, what in _expected_lines(folder / "bad_script.py", name).items():
                if line not in flagged:
                    failures.append(f"{name}: bad_script.py:{line} ({what}) was not flagged")
    finally:
        facade.unlink()
    return failures


def main(argv: list) -> int:
    if "--outside" in argv:
        with tempfile.TemporaryDirectory() as tmp:
            folder = pathlib.Path(tmp)
            for name in SCRIPTS:
                shutil.copy(HERE / name, folder / name)
            failures = run(folder, folder)
    else:
        failures = run(HERE, ROOT)  # the checkout's package, found from its root
    for failure in failures:
        print("FAIL", failure)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
