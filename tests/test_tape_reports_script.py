"""``scripts/tape_reports.py`` regenerates the worked reports of docs/tape-safety.md: each cause's program gives its
report, and the remedy the report names gives the right gradient (``--check`` exits 1 otherwise)."""

import pathlib
import re
import subprocess
import sys

SCRIPT = pathlib.Path(__file__).resolve().parent.parent / "scripts" / "tape_reports.py"


def test_each_cause_is_reported_and_its_remedy_is_right():
    done = subprocess.run([sys.executable, str(SCRIPT), "--check"], capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    out = done.stdout
    for said in (
        "atomic replay: in kernel 'cube_into_claimed'",
        "through a helper it changes 'cursor' again",
        "by an untaped launch of kernel 'bump' at tape_reports.py:",
        "by no call the Tape watches",
        "Measured: putting back the values it read changes the gradients x.grad by up to 2 (25 %)",
        "Measured: no effect on this run's gradients",
    ):
        assert said in out, said
    # the atomic replay's wrong gradient depends on the Warp release ([1, 0, 0, 0] on 1.19, [4, 0, 0, 0] on 1.9);
    # the remedy's is the right one on every release
    before = re.search(r"gradient before: `\[([^\]]*)\]`; after: `\[1, 4, 9, 16\]`; right: `\[1, 4, 9, 16\]`", out)
    assert before is not None and before.group(1) != "1, 4, 9, 16"
