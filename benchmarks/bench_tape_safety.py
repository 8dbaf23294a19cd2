"""Tape safety: (1) snapshots versus one array per step on an explicit-Euler simulation (float64, nonlinear force,
in-place ``x``/``v`` updates, default 100k particles x 50 steps), forward + backward; (2) the launch overhead of
``warp_zerostore.Tape()`` with ``check="off"`` versus Warp's own Tape.

(1) Both sides record the same kernels' math on a fresh Tape per run; the in-place side uses
``Tape(snapshot=True)``. Targets: time ratio snapshot/one-array-per-step <= 1.2, peak memory ratio <= 1.05.
Time: medians of interleaved runs (``common.interleaved_medians``). Peak memory: as in ``bench_torch_bridge``:
each measurement runs in a child process with glibc's mmap threshold at 64 KiB (each Warp CPU buffer of this size
is its own mapping, so resident memory follows live buffers); the child builds the kernels, runs the simulation
once at full size to warm up and frees it, resets the peak-RSS counter, runs forward + backward once more keeping
the results, and reports peak resident set (VmHWM) minus the resident set before. The same run also reports the
bytes of Warp arrays it holds at the end of backward (arrays, gradients, snapshots), counted from their sizes.
CPU only for memory (a CUDA device's memory is not in the RSS).

(2) 2000 launches of a one-element kernel inside each Tape (no backward), interleaved medians; "off" installs
no launch hook, so the ratio should be 1 within noise.

Usage: python benchmarks/bench_tape_safety.py [--n 100000] [--steps 50] [--repeats 7] [--memory-repeats 3]
"""

from __future__ import annotations

import argparse
import json
import os
import pathlib
import statistics
import subprocess
import sys

import numpy as np
from common import interleaved_medians, peak_rss_growth, report

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent.parent / "tests"))

import warp  # noqa: E402
from helpers import kernels_tape_safety as k  # noqa: E402  (the simulation the tests check to 1e-10)

import warp_zerostore as wp  # noqa: E402

SIDES = ("snapshot", "one array per step")


def initial(n: int, device: str):
    rng = np.random.default_rng(0)
    return (
        wp.array(rng.uniform(-1, 1, n), dtype=wp.float64, device=device),
        wp.array(rng.uniform(-1, 1, n), dtype=wp.float64, device=device),
    )


def simulate(side: str, x0, v0, steps: int):
    """Forward + backward once; returns what a training step keeps (tape, gradients, arrays)."""
    if side == "snapshot":
        tape = wp.Tape(snapshot=True)
        x, v, loss = k.euler_in_place(x0, v0, steps, 0.01, tape)
        tape.backward(loss)
        held = [x, v, loss]
    else:
        tape = wp.Tape()
        x, v, x_end, v_end, loss = k.euler_per_step(x0, v0, steps, 0.01, tape)
        tape.backward(loss)
        held = [x, v, x_end, v_end, loss]
    wp.synchronize_device(x0.device)
    return tape, held


def warp_bytes(side: str, tape, steps: int, n: int) -> int:
    """Bytes of Warp arrays the run holds: per step arrays and their gradients, or two arrays, two gradients and
    the snapshots (``tape.snapshot_bytes``)."""
    if side == "snapshot":
        return 4 * n * 8 + tape.snapshot_bytes
    return 2 * 2 * (steps + 1) * n * 8


def measure_memory(side: str, n: int, steps: int) -> dict:
    x0, v0 = initial(16, "cpu")
    simulate(side, x0, v0, 2)  # build the kernels
    x0, v0 = initial(n, "cpu")
    kept = simulate(side, x0, v0, steps)  # warm up at full size, then free it
    del kept
    with peak_rss_growth() as growth:
        tape, held = simulate(side, x0, v0, steps)
    return {"side": side, "peak_growth_bytes": growth["bytes"], "warp_bytes": warp_bytes(side, tape, steps, n)}


def memory_medians(n: int, steps: int, repeats: int) -> dict:
    env = dict(os.environ, MALLOC_MMAP_THRESHOLD_="65536", OMP_NUM_THREADS="1")
    samples = {side: [] for side in SIDES}
    counted = {}
    for _ in range(repeats):
        for side in SIDES:
            out = subprocess.run(
                [sys.executable, __file__, "--memory-child", side, "--n", str(n), "--steps", str(steps)],
                env=env,
                capture_output=True,
                text=True,
                timeout=600,
                check=True,
            )
            result = json.loads(out.stdout.strip().splitlines()[-1])
            samples[side].append(result["peak_growth_bytes"])
            counted[side] = result["warp_bytes"]
    return {
        side: {"median_bytes": statistics.median(s), "samples_bytes": s, "warp_array_bytes": counted[side]}
        for side, s in samples.items()
    }


@wp.kernel
def _tiny(a: wp.array(dtype=float)):
    a[0] = a[0] + 1.0


def launch_overhead(repeats: int, launches: int = 2000) -> dict:
    a = wp.zeros(1, dtype=float, device="cpu", requires_grad=True)

    def body(make_tape):
        def run():
            with make_tape():
                for _ in range(launches):
                    warp.launch(_tiny, dim=1, inputs=[a], device="cpu")

        return run

    runs = {"warp.Tape": body(warp.Tape), "warp_zerostore.Tape(check='off')": body(wp.Tape)}
    body(warp.Tape)()  # build
    timings = interleaved_medians(runs, repeats)
    ratio = timings["warp_zerostore.Tape(check='off')"]["median_s"] / timings["warp.Tape"]["median_s"]
    return {"launches": launches, "timings": timings, "ratio_off_over_warp": ratio}


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--n", type=int, default=100_000)
    parser.add_argument("--steps", type=int, default=50)
    parser.add_argument("--repeats", type=int, default=7)
    parser.add_argument("--memory-repeats", type=int, default=3)
    parser.add_argument("--device", default="cpu")
    parser.add_argument("--memory-child", choices=list(SIDES), help=argparse.SUPPRESS)
    args = parser.parse_args()
    wp.config.quiet = True
    wp.init()
    if args.memory_child:
        print(json.dumps(measure_memory(args.memory_child, args.n, args.steps)))
        return

    x0, v0 = initial(args.n, args.device)
    results = {side: simulate(side, x0, v0, args.steps) for side in SIDES}  # build, warm up, and agree
    np.testing.assert_allclose(
        results["snapshot"][1][0].grad.numpy(), results["one array per step"][1][0].grad.numpy(), rtol=1e-10
    )
    del results
    runs = {side: (lambda side=side: simulate(side, x0, v0, args.steps)) for side in SIDES}
    timings = interleaved_medians(runs, args.repeats)
    time_ratio = timings["snapshot"]["median_s"] / timings["one array per step"]["median_s"]
    memory = memory_medians(args.n, args.steps, args.memory_repeats) if args.device == "cpu" else None
    overhead = launch_overhead(args.repeats)

    for side in SIDES:
        line = f"{side:>20}: forward+backward median {timings[side]['median_s'] * 1e3:.1f} ms"
        if memory:
            line += (
                f", peak RSS growth median {memory[side]['median_bytes'] / 2**20:.1f} MiB"
                f", Warp arrays held {memory[side]['warp_array_bytes'] / 2**20:.1f} MiB"
            )
        print(line)
    print(f"time ratio snapshot/one-array-per-step: {time_ratio:.3f} (target <= 1.2)")
    payload = {
        "device": args.device,
        "particles": args.n,
        "steps": args.steps,
        "repeats": args.repeats,
        "median_ms": {s: v["median_s"] * 1e3 for s, v in timings.items()},
        "time_ratio_snapshot_over_per_step": time_ratio,
        "time_target": 1.2,
        "timings": timings,
        "launch_overhead": {
            "launches": overhead["launches"],
            "median_ms": {s: v["median_s"] * 1e3 for s, v in overhead["timings"].items()},
            "ratio_off_over_warp": overhead["ratio_off_over_warp"],
        },
    }
    if memory:
        ratio = memory["snapshot"]["median_bytes"] / memory["one array per step"]["median_bytes"]
        print(f"peak memory ratio snapshot/one-array-per-step: {ratio:.3f} (target <= 1.05)")
        payload.update({"memory": memory, "memory_ratio_snapshot_over_per_step": ratio, "memory_target": 1.05})
    print(
        f"launch overhead, Tape(check='off') / warp.Tape over {overhead['launches']} launches: "
        f"{overhead['ratio_off_over_warp']:.3f}"
    )
    report("tape_safety", payload)


if __name__ == "__main__":
    main()
