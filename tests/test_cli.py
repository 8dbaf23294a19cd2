"""The command line: one exit status per outcome (``warp_zerostore.cli.status.ExitStatus``), one-line errors,
``--version``, plain ``--help``, ``prog`` as invoked. Most run in-process (``cli.main``); one runs the real
``python -m warp_zerostore`` to see that a missing script prints no traceback."""

import os
import subprocess
import sys

import pytest

import warp_zerostore
from warp_zerostore import cli
from warp_zerostore.cli import ExitStatus

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def exit_status(argv, capsys):
    try:
        status = cli.main(argv, prog="warp-zerostore")
    except SystemExit as exit_:
        status = exit_.code
    out, err = capsys.readouterr()
    return status, out, err


def test_exit_statuses_are_distinct():
    assert len({int(s) for s in ExitStatus}) == len(ExitStatus)
    assert [int(s) for s in ExitStatus] == list(range(7))


def test_version(capsys):
    status, out, _ = exit_status(["--version"], capsys)
    assert status == 0 and out.strip().startswith(f"warp-zerostore {warp_zerostore.__version__} (warp-lang ")


def test_help_is_plain_text_and_lists_the_exit_statuses(capsys):
    for argv in (["--help"], ["check", "--help"]):
        status, out, _ = exit_status(argv, capsys)
        assert status == 0
        assert "``" not in out and ":class:" not in out and ":mod:" not in out
        assert "exit status:" in out and "4  check: the script or module was not found" in out


def test_prog_is_how_the_command_was_invoked(monkeypatch, capsys):
    monkeypatch.setattr(sys, "argv", ["/usr/local/bin/warp-zerostore", "--version"])
    assert cli.build_parser().prog == "warp-zerostore"
    monkeypatch.setattr(sys, "argv", ["/x/warp_zerostore/__main__.py"])
    assert cli.build_parser().prog == "python -m warp_zerostore"


def test_usage_error_is_2(capsys):
    status, _, err = exit_status(["no-such-command"], capsys)
    assert status == ExitStatus.USAGE and "invalid choice" in err


def test_demo_on_a_device_that_is_not_there_is_a_one_line_usage_error(capsys):
    status, out, err = exit_status(["demo", "--device", "cuda:7"], capsys)
    assert status == ExitStatus.USAGE
    assert "Traceback" not in err and "demo: device 'cuda:7' is not available here" in err and out == ""


@pytest.fixture
def scripts(tmp_path):
    (tmp_path / "exits_7.py").write_text("import sys\nprint('ran')\nsys.exit(7)\n")
    (tmp_path / "exits_message.py").write_text("import sys\nsys.exit('bad input')\n")
    (tmp_path / "exits_0.py").write_text("import sys\nsys.exit(0)\n")
    (tmp_path / "raises.py").write_text("def f():\n    raise ValueError('boom')\n\nf()\n")
    return tmp_path


@pytest.mark.parametrize(
    "name, status, line",
    [
        ("exits_0.py", ExitStatus.OK, "0 hazard(s)"),
        ("exits_7.py", ExitStatus.PROGRAM_FAILED, "the program exited with status 7"),
        ("exits_message.py", ExitStatus.PROGRAM_FAILED, "the program exited with status 1"),
        ("raises.py", ExitStatus.PROGRAM_RAISED, "the program raised an exception"),
    ],
)
def test_check_reports_the_programs_own_outcome_apart_from_hazards(scripts, capsys, name, status, line):
    got, out, err = exit_status(["check", str(scripts / name)], capsys)
    assert got == status and line in out
    if status == ExitStatus.PROGRAM_RAISED:
        # the program's traceback, starting at its own frame: none of runpy's or this package's
        assert err.startswith("Traceback") and 'raises.py", line 4' in err and "ValueError: boom" in err
        assert "runpy" not in err and "warp_zerostore" not in err


def test_check_a_missing_script_or_module_is_4(tmp_path, capsys):
    status, out, err = exit_status(["check", str(tmp_path / "missing.py")], capsys)
    assert (
        status == ExitStatus.NOT_FOUND
        and out == ""
        and err.strip().endswith("script not found: " + str(tmp_path / "missing.py"))
    )
    status, out, err = exit_status(["check", "-m", "no_such_module_here"], capsys)
    assert status == ExitStatus.NOT_FOUND and "module not found: no_such_module_here" in err


def test_a_missing_script_through_python_m_is_one_line_without_traceback(tmp_path):
    done = subprocess.run(
        [sys.executable, "-m", "warp_zerostore", "check", "missing.py"],
        capture_output=True,
        text=True,
        env=dict(os.environ, PYTHONPATH=ROOT),
        cwd=tmp_path,
        timeout=300,
    )
    assert done.returncode == ExitStatus.NOT_FOUND, done.stdout + done.stderr
    assert "Traceback" not in done.stderr and "warp_zerostore check: error: script not found: missing.py" in done.stderr
    assert "hazard" not in done.stdout


def test_hazards_win_over_the_programs_own_exit_status(tmp_path, capsys):
    script = tmp_path / "hazard_then_exit.py"
    script.write_text(
        "import sys\n"
        "import warp as wp\n"
        "from helpers import kernels_tape_reads as k\n"
        "x = wp.array([2.0], dtype=float, requires_grad=True)\n"
        "with wp.Tape():\n"
        "    wp.launch(k.square_in_place, dim=1, inputs=[x])\n"
        "sys.exit(7)\n"
    )
    status, out, _ = exit_status(["check", str(script)], capsys)
    assert status == ExitStatus.HAZARDS
    assert "warp_zerostore check: 1 hazard(s)" in out and "the program exited with status 7" in out
