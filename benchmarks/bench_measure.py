"""The measuring Tape's cost (``Tape(measure=True)``) against plain check (``Tape(check="warn")``) and Warp's own
Tape, in time and memory, forward and backward.

Programs: (1) the explicit-Euler simulation of docs/tape-safety.md, ``x`` and ``v`` updated in place by flagged
kernels (a stale read with an effect every step: one reader site measured, one extra backward pass), ``--particles``
particles and ``--steps`` steps; (2) ``style_program.simulate`` (12 steps of 7 tiny launches on 8x6 arrays, new
arrays per step: no value hazard to measure, so no extra pass: the saves alone). Printed: medians of interleaved
runs (both sides in the same run), wall and thread CPU time, the ratios measure/check and check/plain; the bytes each
Tape holds on the arrays' device (known contents, snapshots, the contents kept before changes, the start saved at
``backward()``, counted from array sizes; the snapshot Tape's beside, the scale the measuring Tape's saves are at); with ``--rss``, the peak resident-set growth of one forward+backward per side, each in a
child process (glibc's mmap threshold at 64 KiB, as the other memory benchmarks).

Usage: python benchmarks/bench_measure.py [--repeats 7] [--particles 10000] [--steps 50] [--rss]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import warnings

import numpy as np
import style_program
import warp
from common import interleaved_medians, peak_rss_growth, report

import warp_zerostore as wp
from warp_zerostore.tape import measure

SIDES = {
    "plain": lambda: warp.Tape(),
    "check": lambda: wp.Tape(check="warn"),
    "snapshot": lambda: wp.Tape(snapshot=True),  # the memory scale the measuring Tape's saves are at
    "measure": lambda: wp.Tape(measure=True),
}


@wp.kernel(zero_store=True)
def velocity(x: wp.array(dtype=float), v: wp.array(dtype=float)):
    i = wp.tid()
    v[i] = v[i] - x[i] * x[i] * x[i] * 0.01


@wp.kernel(zero_store=True)
def position(x: wp.array(dtype=float), v: wp.array(dtype=float)):
    i = wp.tid()
    x[i] = x[i] + v[i] * 0.01


@wp.kernel
def energy(x: wp.array(dtype=float), loss: wp.array(dtype=float)):
    wp.atomic_add(loss, 0, x[wp.tid()] * x[wp.tid()])


def euler(tape, particles: int, steps: int):
    x = wp.array(np.linspace(-1.0, 1.0, particles), dtype=float, requires_grad=True)
    v = wp.zeros(particles, dtype=float, requires_grad=True)
    loss = wp.zeros(1, dtype=float, requires_grad=True)
    with tape:
        for _ in range(steps):
            wp.launch(velocity, dim=particles, inputs=[x, v])
            wp.launch(position, dim=particles, inputs=[x, v])
        wp.launch(energy, dim=particles, inputs=[x, loss])
    tape.backward(loss)
    return tape


def _held_bytes(tape) -> int:
    """What a Tape holds on the arrays' device beyond the program's arrays, counted from sizes: the checking Tape's
    copies of the contents it knows, snapshots, and the measuring Tape's saves and saved start."""
    tracked = getattr(tape, "_tracked", {}).values()
    held = sum(t.values.layout.nbytes for t in tracked if t.values is not None and t.values.slab is not None)
    held += getattr(tape, "snapshot_bytes", 0)
    measuring = getattr(tape, "_measuring", None)
    if measuring is not None:
        held += measuring.bytes
        arrays, gradients = tape._changed_by_passes(None, None)
        if measuring.groups():
            held += measure.State.bytes_for(arrays + measuring.arrays(), gradients)
    return held


def _program(name: str, args):
    if name == "euler":
        return lambda tape: euler(tape, args.particles, args.steps)
    return lambda tape: (style_program.simulate(tape, 12), tape)[1]


def _timed(name: str, args) -> dict:
    run = _program(name, args)

    def side(make):
        def go():
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", wp.OverwriteWarning)
                return run(make())

        return go

    tapes = {s: side(make)() for s, make in SIDES.items()}  # warm-up: builds, twins; and what each holds
    timings = interleaved_medians({s: side(make) for s, make in SIDES.items()}, args.repeats)
    out = {"timings": timings, "held_bytes": {s: _held_bytes(t) for s, t in tapes.items()}}
    measured = [h for h in tapes["measure"].hazards if h.measured is not None]
    out["measured"] = sorted({h.measured.status for h in measured})
    out["extra_passes"] = len(tapes["measure"].measured_gradients) - 1 if tapes["measure"].measured_gradients else 0
    for clock in ("median_s", "cpu_median_s"):
        t = {s: timings[s][clock] for s in SIDES}
        out[clock.replace("median_s", "measure_over_check")] = t["measure"] / t["check"]
        out[clock.replace("median_s", "check_over_plain")] = t["check"] / t["plain"]
        print(
            f"  {name}, {'wall' if clock == 'median_s' else 'cpu '}: plain {t['plain'] * 1e3:8.2f} ms, check "
            f"{t['check'] * 1e3:8.2f} ms, measure {t['measure'] * 1e3:8.2f} ms; measure/check "
            f"{t['measure'] / t['check']:5.2f}x, check/plain {t['check'] / t['plain']:5.2f}x"
        )
    held = out["held_bytes"]
    print(
        f"  {name}: held beyond the program's arrays: check {held['check'] / 2**20:.2f} MiB, snapshot "
        f"{held['snapshot'] / 2**20:.2f} MiB, measure {held['measure'] / 2**20:.2f} MiB; extra backward passes "
        f"{out['extra_passes']}; measured "
        f"{', '.join(out['measured']) or 'nothing'}"
    )
    return out


def _memory_child(name: str, side: str, args) -> None:
    run = _program(name, args)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", wp.OverwriteWarning)
        run(SIDES[side]())  # warm up: builds, twins
        with peak_rss_growth() as growth:
            run(SIDES[side]())
    print(json.dumps({"side": side, "peak_growth_bytes": growth["bytes"]}))


def _rss(name: str, args, repeats: int = 3) -> dict:
    env = dict(os.environ, MALLOC_MMAP_THRESHOLD_="65536", OMP_NUM_THREADS="1")
    samples: dict = {side: [] for side in SIDES}
    for _ in range(repeats):
        for side in SIDES:
            found = subprocess.run(
                [sys.executable, __file__, "--memory-child", name, side, "--particles", str(args.particles)]
                + ["--steps", str(args.steps)],
                env=env,
                capture_output=True,
                text=True,
                timeout=900,
                check=True,
            )
            samples[side].append(json.loads(found.stdout.strip().splitlines()[-1])["peak_growth_bytes"])
    medians = {side: statistics.median(s) for side, s in samples.items()}
    print(
        f"  {name}: peak RSS growth (child processes, median of {repeats}): "
        + ", ".join(f"{s} {b / 2**20:.2f} MiB" for s, b in medians.items())
        + f"; measure/check {medians['measure'] / max(medians['check'], 1):.2f}x, measure/snapshot "
        f"{medians['measure'] / max(medians['snapshot'], 1):.2f}x"
    )
    return {"median_bytes": medians, "samples_bytes": samples}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=7)
    parser.add_argument("--particles", type=int, default=10000)
    parser.add_argument("--steps", type=int, default=50)
    parser.add_argument("--rss", action="store_true")
    parser.add_argument("--memory-child", nargs=2, metavar=("PROGRAM", "SIDE"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    wp.config.quiet = True
    wp.init()
    if args.memory_child:
        _memory_child(*args.memory_child, args)
        return
    payload: dict = {"repeats": args.repeats, "particles": args.particles, "steps": args.steps}
    for name in ("euler", "style"):
        print(f"{name}:")
        payload[name] = _timed(name, args)
        if args.rss:
            payload[name]["rss"] = _rss(name, args)
    report("measure", payload)


if __name__ == "__main__":
    main()
