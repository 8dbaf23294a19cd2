"""Check-mode cost: ``Tape(check="warn")`` over plain recording, (0) per small launch on a program in another
simulator's style, (1) on a growing number of recorded launches and (2) on a Newton example at its default length.

(0) ``style_program.simulate``: 12 steps of 7 tiny launches on 8x6 state arrays (one array as input and output,
row-view stores, a kernel without backward, a guarded branch, new arrays per step), 84 recorded launches, no
backward. Prints check and plain time, their ratio and the extra time per launch (target <= 0.1 ms), on wall
time and on the thread's CPU time (less sensitive to other jobs on a shared machine).

(1) The issue's program: per step one new 1000-element array, written by one launch; 250 / 500 / 1000 recorded
launches on one Tape, no backward. Prints each time, the check/plain ratio, and the slope of check time against
launches (least squares, seconds per launch) with the slopes of the halves (250->500, 500->1000): a cost linear
in launches has equal slopes (the old address unions grew faster than quadratically: 6 / 37 / 268 s).

(2) Newton's ``diffsim_ball`` (36 frames x 8 substeps of the semi-implicit solver and its collisions: the
example's forward and backward), without graph capture, recorded on ``warp.Tape()`` versus on
``warp_zerostore.Tape(check="warn")``, fresh Tape per run; target check/plain <= 3. Skipped if Newton is absent.

(3) ``forward_only_program.simulate``: a rigid-body simulator built for the forward pass, 4 steps of 84 tiny
launches of 12 kernels, 10 of them built with ``enable_backward=False``, 2 in-place updates; targets check/plain
<= 3x and <= 0.1 ms extra per launch.

Time: medians of interleaved runs, both sides in the same run, after one untimed warm-up of each (kernel
builds, read twins). Usage: python benchmarks/bench_check_scaling.py [--repeats 3] [--launches 250 500 1000]
"""

from __future__ import annotations

import argparse
import warnings

import forward_only_program
import numpy as np
import style_program
import warp  # noqa: E402
from common import interleaved_medians, report

import warp_zerostore as wp  # noqa: E402
from warp_zerostore import _compat, config  # noqa: E402
from warp_zerostore.tape import tape as tape_safety  # noqa: E402


@wp.kernel
def scale_into(x: wp.array(dtype=float), y: wp.array(dtype=float)):
    i = wp.tid()
    y[i] = 2.0 * x[i]


def record(launches: int, make_tape):
    x = wp.ones(1000, dtype=float, requires_grad=True)
    tape = make_tape()
    with tape, warnings.catch_warnings():
        warnings.simplefilter("ignore", wp.OverwriteWarning)
        for _ in range(launches):
            y = wp.zeros(1000, dtype=float, requires_grad=True)
            wp.launch(scale_into, dim=1000, inputs=[x, y])
            x = y


def scaling(counts: list, repeats: int) -> dict:
    runs = {}
    for n in counts:
        runs[f"plain {n}"] = lambda n=n: record(n, warp.Tape)
        runs[f"check {n}"] = lambda n=n: record(n, lambda: wp.Tape(check="warn"))
    record(10, lambda: wp.Tape(check="warn"))  # warm-up: kernel and read twin built
    timings = interleaved_medians(runs, repeats)
    check = np.array([timings[f"check {n}"]["median_s"] for n in counts])
    plain = np.array([timings[f"plain {n}"]["median_s"] for n in counts])
    slope = float(np.polyfit(counts, check, 1)[0])
    halves = [float((check[i + 1] - check[i]) / (counts[i + 1] - counts[i])) for i in range(len(counts) - 1)]
    for n, c, p in zip(counts, check, plain):
        print(f"  {n:5d} launches: check {c:8.3f} s, plain {p:7.3f} s, ratio {c / p:6.1f}x")
    print(f"  slope: {slope * 1e3:.3f} ms per launch (segments: {', '.join(f'{h * 1e3:.3f}' for h in halves)} ms)")
    return {
        "launches": counts,
        "check_s": check.tolist(),
        "plain_s": plain.tolist(),
        "ratio": (check / plain).tolist(),
        "slope_s_per_launch": slope,
        "segment_slopes_s_per_launch": halves,
        "timings": timings,
    }


def _check_over_plain(simulate, repeats: int, note: str) -> dict:
    """``simulate(tape)`` (returns its launch count) on a checking Tape against a plain one, interleaved."""

    def run(make_tape):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", wp.OverwriteWarning)
            return simulate(make_tape())

    launches = run(lambda: wp.Tape(check="warn"))  # warm-up: kernels and twins built
    run(warp.Tape)
    timings = interleaved_medians(
        {"plain": lambda: run(warp.Tape), "check": lambda: run(lambda: wp.Tape(check="warn"))}, repeats
    )
    out = {"launches": launches, "timings": timings}
    for clock in ("median_s", "cpu_median_s"):
        check, plain = timings["check"][clock], timings["plain"][clock]
        out[clock.replace("median_s", "ratio")] = check / plain
        out[clock.replace("median_s", "extra_ms_per_launch")] = (check - plain) / launches * 1e3
        print(
            f"  {'wall' if clock == 'median_s' else 'cpu '}: check {check * 1e3:7.2f} ms, plain {plain * 1e3:6.2f} ms, "
            f"ratio {check / plain:5.2f}x, extra {(check - plain) / launches * 1e3:.3f} ms per launch "
            f"({launches} launches; {note})"
        )
    return out


def style(repeats: int, steps: int = 12) -> dict:
    """(0) A program of small launches in another simulator's style."""
    return _check_over_plain(
        lambda tape: style_program.simulate(tape, steps, backward=False),
        repeats,
        "target <= 0.1 ms per launch; the 3x target is on Newton",
    )


def forward_only(repeats: int, steps: int = 4) -> dict:
    """(3) A simulator built for the forward pass: 84 tiny launches a step, most without a backward."""
    return _check_over_plain(
        lambda tape: forward_only_program.simulate(tape, steps),
        repeats,
        "10 of 12 kernels without backward; targets <= 3x and <= 0.1 ms per launch",
    )


def newton_ball(repeats: int) -> dict | None:
    try:
        import newton.viewer  # noqa: PLC0415
        from newton.examples.diffsim import example_diffsim_ball as example  # noqa: PLC0415
    except ImportError:
        print("  newton is not installed: skipped")
        return None

    class Args:
        verbose = False

    example.Example.capture = lambda self: setattr(self, "graph", None)
    ball = example.Example(newton.viewer.ViewerNull(num_frames=1), Args())
    launches = {}

    def plain():
        ball.forward_backward()
        launches["plain"] = len(ball.tape.launches)

    def check():
        saved = config.check
        config.check = "warn"
        try:
            with _compat.tape_class_replaced(tape_safety.Tape), warnings.catch_warnings():
                warnings.simplefilter("ignore", wp.OverwriteWarning)
                ball.forward_backward()
        finally:
            config.check = saved
        launches["check"] = len(ball.tape.launches)
        launches["hazards"] = len(ball.tape.hazards)

    plain()
    check()  # warm-up: builds and read twins
    timings = interleaved_medians({"plain": plain, "check": check}, repeats)
    ratio = timings["check"]["median_s"] / timings["plain"]["median_s"]
    cpu_ratio = timings["check"]["cpu_median_s"] / timings["plain"]["cpu_median_s"]
    extra = (timings["check"]["median_s"] - timings["plain"]["median_s"]) / launches["plain"] * 1e3
    print(
        f"  diffsim_ball, {launches['plain']} recorded launches: check {timings['check']['median_s']:.3f} s, "
        f"plain {timings['plain']['median_s']:.3f} s, ratio {ratio:.2f}x (cpu time {cpu_ratio:.2f}x; target <= 3), "
        f"extra {extra:.3f} ms per launch, {launches['hazards']} hazard(s)"
    )
    return {
        "example": "diffsim_ball",
        "launches": launches,
        "ratio": ratio,
        "cpu_ratio": cpu_ratio,
        "extra_ms_per_launch": extra,
        "timings": timings,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--launches", type=int, nargs="+", default=[250, 500, 1000])
    parser.add_argument("--skip-newton", action="store_true")
    parser.add_argument("--skip-scaling", action="store_true")
    args = parser.parse_args()
    wp.config.quiet = True
    wp.init()
    print("check time over plain recording, a program of small launches in another simulator's style:")
    payload = {"repeats": args.repeats, "style": style(args.repeats)}
    print("check time over plain recording, a simulator built for the forward pass (most kernels without backward):")
    payload["forward_only"] = forward_only(args.repeats)
    if not args.skip_scaling:
        print("check time over plain recording, one new 1000-element array per launch:")
        payload["scaling"] = scaling(args.launches, args.repeats)
    if not args.skip_newton:
        print("Newton example at its default length, no graph capture:")
        payload["newton"] = newton_ball(args.repeats)
    report("check_scaling", payload)


if __name__ == "__main__":
    main()
