"""``warp-examples``: which examples it finds by reading them (and which it does not), why one is skipped, how a
mode is compared with stock, and one whole run of a small example in a folder of its own: stock imports nothing
of the package, central differences show stock off on an in-place update, the snapshot Tape differs from stock
there (not a failure: stock is off), and check reports the stale read at the example's own line."""

import json
import os
import subprocess
import sys

import pytest

from warp_zerostore import _compat
from warp_zerostore.warp_examples import discover, report, runner

IN_PLACE = '''\
"""An in-place update a plain Tape gets wrong: x = p, x = x*x twice, loss = sum(x); two optimizer steps."""
import argparse

import warp as wp


@wp.kernel
def copy(src: wp.array(dtype=float), dst: wp.array(dtype=float)):
    dst[wp.tid()] = src[wp.tid()]


@wp.kernel
def square_in_place(x: wp.array(dtype=float)):
    i = wp.tid()
    x[i] = x[i] * x[i]


@wp.kernel
def total(x: wp.array(dtype=float), loss: wp.array(dtype=float)):
    wp.atomic_add(loss, 0, x[wp.tid()])


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--device", default=None)
    parser.add_argument("--train-iters", type=int, default=50)
    parser.add_argument("--headless", action="store_true")
    args = parser.parse_known_args()[0]
    with wp.ScopedDevice(args.device):
        p = wp.array([1.5, 0.75], dtype=float, requires_grad=True)
        for _ in range(args.train_iters):
            x = wp.zeros(2, dtype=float, requires_grad=True)
            loss = wp.zeros(1, dtype=float, requires_grad=True)
            tape = wp.Tape()
            with tape:
                wp.launch(copy, dim=2, inputs=[p, x])
                wp.launch(square_in_place, dim=2, inputs=[x])
                wp.launch(square_in_place, dim=2, inputs=[x])  # LAUNCH_LINE
                wp.launch(total, dim=2, inputs=[x, loss])
            tape.backward(loss)
            print("loss", loss.numpy()[0])
            p.assign(p.numpy() - 0.01 * p.grad.numpy())
'''

FOUND = {
    "optim/example_in_place.py": IN_PLACE,
    "optim/example_wp_grad.py": "import warp as wp\n\n@wp.func\ndef f(x: float):\n    return x * x\n\n"
    "@wp.kernel\ndef k(y: wp.array(dtype=float)):\n    y[0] = wp.grad(f)(y[0])\n",
    "tile/example_cuda_only.py": "import warp as wp\n\nwith wp.ScopedDevice('cuda:0'):\n    tape = wp.Tape()\n",
    "optim/example_needs_missing.py": "import warp as wp\nimport not_a_module_here_xyz\n\ntape = wp.Tape()\n",
    "optim/example_reraises.py": "import warp as wp\ntry:\n    import not_a_module_here_xyz\nexcept ImportError as e:\n"
    "    raise ImportError('needs it') from e\nwp.Tape()\n",
    "optim/example_optional_import.py": "import warp as wp\ntry:\n    import not_a_module_here_xyz\n"
    "except ImportError:\n    not_a_module_here_xyz = None\nx = None\nx.backward()\n",
}
NOT_FOUND = {
    "core/example_no_grad.py": "import warp as wp\n\nprint(wp.zeros(3))\n",
    "fem/example_field_grad.py": "import warp.fem as fem\n\ndef f(u, s):\n    return fem.grad(u, s)\n",
    "optim/helper_with_tape.py": "import warp as wp\n\ntape = wp.Tape()\n",  # not named example_*.py
}


@pytest.fixture
def folder(tmp_path):
    for name, text in {**FOUND, **NOT_FOUND}.items():
        path = tmp_path / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    return tmp_path


def test_the_set_is_every_example_that_differentiates_read_from_its_source(folder):
    found = {e.name: e for e in discover.find(folder)}
    assert sorted(found) == sorted(name.removesuffix(".py") for name in FOUND)
    assert found["optim/example_in_place"].uses == ("Tape", "backward()")
    assert found["optim/example_wp_grad"].uses == ("wp.grad",)
    assert found["optim/example_optional_import"].uses == ("backward()",)


def test_short_arguments_are_the_options_the_example_declares(folder):
    (example,) = discover.find(folder, names=["in_place"])
    assert example.arguments == ("--device", "cpu", "--train-iters", "2", "--headless")


def test_an_example_that_cannot_run_here_says_why(folder):
    found = {e.short_name: e for e in discover.find(folder)}
    assert found["cuda_only"].skip.startswith("runs on 'cuda:0' (named at line 3)")
    assert found["needs_missing"].skip == "needs not_a_module_here_xyz, not installed"
    assert found["reraises"].skip == "needs not_a_module_here_xyz, not installed"  # its fallback raises again
    # negative twins: a guarded import with a real fallback, and a CPU example, run
    assert found["optional_import"].skip == "" and found["in_place"].skip == ""


def test_an_unknown_name_is_an_error_naming_the_ones_there_are(folder):
    with pytest.raises(ValueError, match="no example that differentiates is named nope.*in_place"):
        discover.find(folder, names=["nope"])
    assert [e.name for e in discover.find(folder, names=["in_place"])] == ["optim/example_in_place"]


def _record(grads, stdout="", values=None):
    arrays = [
        {"label": f"a{i}", "shape": [2], "grad": g, "value": (values or {}).get(i, "v")} for i, g in enumerate(grads)
    ]
    return {"backwards": [{"arrays": arrays}], "stdout": stdout}


def test_a_mode_is_compared_with_stock_except_where_two_stock_runs_disagree():
    stock, again = _record(["g0", "g1"], values={1: "x"}), _record(["g0", "g1"], values={1: "y"})
    noisy = runner.noise(stock, again)
    assert noisy == {(0, 1, "value")}
    run = runner.ModeRun("imported", status="ran")
    runner.compare(run, stock, {}, _record(["g0", "g1"], values={1: "z"}), {}, noisy)
    assert run.verdict == "bitwise" and run.values_equal and run.gradients == [2, 2]
    differing = runner.ModeRun("snapshot", status="ran")
    runner.compare(differing, stock, {}, _record(["g0", "other"]), {}, noisy)
    assert differing.verdict == "differs" and differing.first_difference == 0 and differing.gradients == [1, 2]


def test_a_refusal_by_name_is_not_a_failure_and_any_other_exception_is():
    refused = runner.ModeRun("snapshot", status="raised", error="OverwriteError: mutated after record ...")
    runner.compare(refused, _record([]), {}, {}, {})
    raised = runner.ModeRun("check", status="raised", error="RuntimeError: boom")
    runner.compare(raised, _record([]), {}, {}, {})
    assert (refused.verdict, raised.verdict) == ("refused", "raised")


@pytest.fixture(scope="module")
def in_place_run(tmp_path_factory):
    path = tmp_path_factory.mktemp("examples") / "optim" / "example_in_place.py"
    path.parent.mkdir()
    path.write_text(IN_PLACE)
    example = discover.read(path, path.parent.parent)
    keep = str(tmp_path_factory.mktemp("runs"))
    result = runner.run_example(example, ("stock", "imported", "check", "snapshot"), timeout=600, keep=keep)
    return example, result, keep


def test_stock_imports_nothing_of_the_package_and_the_other_modes_do(in_place_run):
    _, _, keep = in_place_run
    imported = {}
    for mode in ("stock", "imported", "check", "snapshot"):
        with open(os.path.join(keep, "in_place", mode, "result.json")) as f:
            imported[mode] = json.load(f)["package_imported"]
    assert imported == {"stock": False, "imported": True, "check": True, "snapshot": True}


def test_central_differences_show_stock_off_on_an_in_place_update(in_place_run):
    _, result, _ = in_place_run
    assert result.central["status"] == "differs", result.central
    for element in result.central["elements"]:
        p = element["value"]
        assert element["central"] == pytest.approx(4 * p**3, rel=1e-2)  # d(p^4)/dp, as the program computes it
        assert element["verdict"] == "differs"


def test_each_mode_against_stock_on_an_in_place_update(in_place_run):
    example, result, _ = in_place_run
    runs = result.runs
    assert runs["imported"].verdict == "bitwise" and runs["imported"].stdout_equal
    # the snapshot Tape makes the in-place update right where the store adjoint zeroes (stock from 1.13); below, an
    # unflagged kernel's store adjoint accumulates and the snapshot cannot make it right: a difference, reported
    snapshot = "right where stock is off" if _compat.STOCK_STORE_ZEROES else "differs"
    assert runs["snapshot"].verdict == snapshot and runs["snapshot"].first_difference == 0
    launch_line = IN_PLACE.splitlines().index(next(line for line in IN_PLACE.splitlines() if "LAUNCH_LINE" in line))
    real = runs["check"].real_hazards
    assert runs["check"].exit_status == 1 and real and runs["check"].verdict == "bitwise"
    locations = {h["writer"]["location"] for h in real}
    assert f"{example.path}:{launch_line + 1}" in locations  # each at the example's own line
    assert all(location.startswith(f"{example.path}:") for location in locations)
    summary = runner.Summary([result], "test", ("stock", "imported", "check", "snapshot"), 0.0)
    if _compat.STOCK_STORE_ZEROES:
        assert summary.failed == []  # the snapshot Tape differs where stock is off, and is right there
        assert "agrees with central differences where stock does not" in report.table(summary)
    runs["snapshot"].verdict = "differs"  # negative twin: a difference central differences do not excuse fails
    assert runner.Summary([result], "test", ("stock", "snapshot"), 0.0).failed == [
        ("optim/example_in_place", "snapshot", "differs")
    ]


def test_the_command_lists_the_installed_examples():
    done = subprocess.run(
        [sys.executable, "-m", "warp_zerostore", "warp-examples", "--list"], capture_output=True, text=True, timeout=300
    )
    assert done.returncode == 0, done.stderr
    names = [line.split(":")[0] for line in done.stdout.splitlines()]
    assert names and all(n.split("/")[-1].startswith("example_") for n in names)
    if _compat.WARP_VERSION >= (1, 19, 0):  # the examples the runner was built on
        assert "optim/example_navier_stokes_perturbation" in names and "tile/example_tile_matmul" in names
