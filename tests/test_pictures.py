"""Pictures: ``Tape.visualize()`` marks the hazards a checking Tape found on Warp's own drawing (and a Tape
without hazards draws as Warp draws it), and ``plot_schedule`` draws a real rollout's schedule."""

import re
import shutil
import subprocess
import sys
import warnings

import pytest

import warp_zerostore as wp
from warp_zerostore import _compat
from warp_zerostore.tape import visualize


@wp.kernel
def scale(x: wp.array(dtype=float), y: wp.array(dtype=float)):
    i = wp.tid()
    y[i] = 2.0 * x[i]


@wp.kernel
def square_in_place(x: wp.array(dtype=float)):
    i = wp.tid()
    x[i] = x[i] * x[i]


@wp.kernel(zero_store=True)
def decay(x: wp.array(dtype=float)):
    i = wp.tid()
    x[i] = 0.9 * x[i]


def _kernel_node(dot: str, key: str) -> str:
    (node,) = [n for n, k in visualize._KERNEL_NODE.findall(dot) if k == key]
    return node


def _record(hazardous: bool):
    x = wp.array([3.0, 1.0], dtype=float, requires_grad=True)
    y = wp.zeros(2, dtype=float, requires_grad=True)
    tape = wp.Tape(check="warn")
    with warnings.catch_warnings(), tape:
        warnings.simplefilter("ignore", wp.OverwriteWarning)
        wp.launch(scale, dim=2, inputs=[x], outputs=[y])
        if hazardous:
            wp.launch(square_in_place, dim=2, inputs=[x])  # stale read of x (by scale, and by itself)
            wp.launch(scale, dim=2, inputs=[x], outputs=[y])  # overwrite of y
    return tape, x, y


def test_visualize_marks_each_hazards_arrays_and_launches(tmp_path):
    tape, x, y = _record(hazardous=True)
    kinds = sorted(h.kind for h in tape.hazards)
    assert kinds == ["overwrite", "stale read", "stale read"]
    dot = tape.visualize(str(tmp_path / "tape.dot"))
    assert (tmp_path / "tape.dot").read_text() == dot
    square, scale_node = _kernel_node(dot, "square_in_place"), _kernel_node(dot, "scale")
    for number, hazard in enumerate(tape.hazards):
        colour = visualize.REAL if hazard.real else visualize.SAFE
        note = re.search(rf'^hazard{number} \[.*label="([^"]*)"', dot, re.M)
        assert note and note.group(1).startswith(hazard.kind) and f'color="{colour}"' in note.group(0)
        array = x if hazard.kind == "stale read" else y
        assert re.search(rf"^hazard{number} -> arr{array.ptr} ", dot, re.M)  # the array it names
        assert re.search(rf'^arr{array.ptr} \[.*fillcolor="{visualize.REAL if array is x else colour}"', dot, re.M)
        if hazard.kind == "stale read":
            assert re.search(rf'^hazard{number} -> {square} \[.*label="writes \(#1\)', dot, re.M)
            reader = scale_node if hazard.reader.launch == 0 else square
            assert re.search(rf"^hazard{number} -> {reader} \[.*reads \(#{hazard.reader.launch}\)", dot, re.M)
        else:
            assert re.search(rf'^hazard{number} -> {scale_node} \[.*"writes \(#2\), wrote first \(#0\)"', dot, re.M)
    assert dot.rstrip().endswith("}") and dot.count("{") == dot.count("}")


def test_visualize_of_a_tape_without_hazards_is_warps_own_drawing():
    """Negative twin: nothing is marked when the Tape found nothing."""
    tape, _, _ = _record(hazardous=False)
    assert tape.hazards == []
    dot = tape.visualize()
    assert dot == _compat.WarpTape.visualize(tape, None)
    assert "hazard" not in dot and visualize.REAL not in dot and visualize.SAFE not in dot


def test_visualize_passes_warps_options_and_draws_hidden_arrays():
    tape, x, _ = _record(hazardous=True)
    dot = tape.visualize(hide_readonly_arrays=True, graph_direction="TB")
    assert "rankdir=TB" in dot
    assert re.search(rf"^arr{x.ptr} \[", dot, re.M)


@pytest.mark.skipif(shutil.which("dot") is None, reason="GraphViz's dot is not installed (apt-get install graphviz)")
def test_marked_dot_renders(tmp_path):
    tape, _, _ = _record(hazardous=True)
    tape.visualize(str(tmp_path / "tape.dot"))
    done = subprocess.run(["dot", "-Tsvg", str(tmp_path / "tape.dot")], capture_output=True, text=True)
    assert done.returncode == 0 and not done.stderr, done.stderr
    assert "stale read" in done.stdout and "overwrite" in done.stdout


# -- the schedule of a checkpointed rollout


def _rollout(steps: int, snapshots: int):
    pytest.importorskip("checkpoint_schedules", reason="rollout() needs checkpoint-schedules (the checkpoint extra)")
    from warp_zerostore.checkpoint import rollout

    x = wp.array([1.0], dtype=float, requires_grad=True)
    tape = wp.Tape()
    with tape:
        run = rollout(lambda s, n: wp.launch(decay, dim=1, inputs=[s[0]]), [x], steps, snapshots=snapshots)
    tape.backward(grads={x: wp.ones(1, dtype=float)})
    return run


def test_timeline_adds_up_to_the_summary():
    """The timeline plot_schedule draws agrees with the counts the executor keeps independently."""
    run = _rollout(20, 3)
    summary, timeline = run.summary, run.summary.timeline
    forward = [e for e in timeline if e.action == "forward"]
    assert sum(e.n1 - e.n0 for e in forward) == summary.steps_run == 65
    assert sum(e.n1 - e.n0 for e in timeline if e.action == "reverse") == summary.steps_reversed == 20
    assert max(e.ram_held + e.disk_held for e in timeline) == summary.snapshots_held == 3
    assert [e.sweep for e in timeline[:4]] == ["forward"] * 4 and timeline[-1].ram_held == 0
    assert sum(e.n1 - e.n0 for e in forward if e.sweep == "forward") == 20  # the first pass runs every step once
    assert {e.action for e in timeline} == {"forward", "reverse", "copy", "move"}


def test_plot_schedule_draws_a_real_rollout(tmp_path):
    pytest.importorskip("matplotlib", reason="plot_schedule needs matplotlib: pip install 'warp_zerostore[plot]'")
    from warp_zerostore.checkpoint import plot_schedule

    run = _rollout(20, 3)
    figure = plot_schedule(run, str(tmp_path / "schedule.png"))
    assert (tmp_path / "schedule.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    steps_ax, held_ax = figure.axes
    reversal = [line for line in steps_ax.lines if line.get_color() == "#d62728"]
    assert len(reversal) == sum(1 for e in run.summary.timeline if e.action == "reverse")
    assert max(held_ax.lines[0].get_xdata()) == run.summary.snapshots_held
    assert "binomial: 20 steps, 65 step evaluations" in steps_ax.get_title(loc="left")
    svg = tmp_path / "schedule.svg"
    plot_schedule(run.summary, str(svg), title="mine")
    assert svg.read_text().lstrip().startswith("<?xml")


def test_plot_schedule_without_matplotlib_names_the_extra(monkeypatch):
    from warp_zerostore.checkpoint import plot_schedule

    monkeypatch.setitem(sys.modules, "matplotlib.figure", None)  # import fails as when it is not installed
    with pytest.raises(ImportError, match=r"warp_zerostore\[plot\]"):
        plot_schedule(object())
