"""``python -m warp_zerostore check``: the script's folder on sys.path, ``check -m``, each hazard once per run,
and launches under graph capture reported as not checked (never a silent "0 hazard(s)")."""

import os
import subprocess
import sys

import pytest
import warp

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

KERNELS = """
import warp as wp

wp.config.quiet = True


@wp.kernel
def square_in_place(x: wp.array(dtype=float)):
    i = wp.tid()
    x[i] = x[i] * x[i]


@wp.kernel
def double(x: wp.array(dtype=float), y: wp.array(dtype=float)):
    y[wp.tid()] = 2.0 * x[wp.tid()]
"""

# Three Tapes, one in-place launch site: one hazard in the report (found by 3 Tapes).
THREE_TAPES = """
import warp as wp
from sibling_kernels import square_in_place

x = wp.array([2.0], dtype=float, requires_grad=True)
for _ in range(3):
    with wp.Tape():
        wp.launch(square_in_place, dim=1, inputs=[x])
print("ran three tapes")
"""

CLEAN = """
import sys
import warp as wp
from sibling_kernels import double

x = wp.ones(3, dtype=float, requires_grad=True)
y = wp.zeros(3, dtype=float, requires_grad=True)
with wp.Tape() as tape:
    wp.launch(double, dim=3, inputs=[x, y])
print("args", sys.argv[1:])
"""

CAPTURED = """
import warp as wp
from sibling_kernels import square_in_place

x = wp.array([2.0], dtype=float, requires_grad=True)
with wp.Tape():
    with wp.ScopedCapture(device="cpu"):
        wp.launch(square_in_place, dim=1, inputs=[x], device="cpu")
print("captured")
"""


def run_check(*args, cwd):
    env = dict(os.environ, PYTHONPATH=ROOT)
    return subprocess.run(
        [sys.executable, "-m", "warp_zerostore", "check", *args],
        capture_output=True,
        text=True,
        env=env,
        cwd=cwd,
        timeout=300,
    )


@pytest.fixture
def programs(tmp_path):
    folder = tmp_path / "prog"
    folder.mkdir()
    (folder / "sibling_kernels.py").write_text(KERNELS)
    for name, text in (("three_tapes", THREE_TAPES), ("clean", CLEAN), ("captured", CAPTURED)):
        (folder / f"{name}.py").write_text(text)
    (folder / "__init__.py").write_text("")
    return folder


def test_script_imports_a_sibling_and_each_hazard_is_reported_once_per_run(programs, tmp_path):
    done = run_check(str(programs / "three_tapes.py"), cwd=tmp_path)  # run from elsewhere: the folder is added
    assert done.returncode == 1, done.stdout + done.stderr
    assert "ran three tapes" in done.stdout
    assert "warp_zerostore check: 1 hazard(s)" in done.stdout
    assert "== stale read: 1" in done.stdout and "(found by 3 Tapes)" in done.stdout


def test_module_form_runs_with_arguments_and_passes_a_clean_program(programs):
    done = run_check("-m", "clean", "--steps", "3", cwd=programs)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "args ['--steps', '3']" in done.stdout
    assert "warp_zerostore check: 0 hazard(s)" in done.stdout and "NOT CHECKED" not in done.stdout


@pytest.mark.skipif(
    tuple(int(p) for p in warp.__version__.split(".")[:2]) < (1, 19), reason="CPU graph capture needs warp-lang >= 1.19"
)
def test_launches_under_capture_are_reported_not_checked(programs):
    done = run_check(str(programs / "captured.py"), cwd=programs)
    assert done.returncode == 3, done.stdout + done.stderr
    assert "captured" in done.stdout
    assert "1 launch site(s) NOT CHECKED" in done.stdout
    assert "kernel 'square_in_place'" in done.stdout and "without graph capture" in done.stdout
