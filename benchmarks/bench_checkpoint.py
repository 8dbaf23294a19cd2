"""Binomial checkpointing: memory and time of a checkpointed rollout versus what it must hold and
versus a store-everything Tape, on the float64 explicit-Euler particle system of the tests (nonlinear force,
double-buffered step, per-step gravity input). Default: 100k particles, T = 1000 steps, s = 10 snapshots.

Memory: each side runs in a child process (glibc's mmap threshold at 64 KiB, so each Warp CPU buffer is its own
mapping and resident memory follows live buffers). The child builds the kernels, warms up, resets the peak-RSS
counter, allocates the state and runs forward + backward, and reports peak resident set (VmHWM) minus the
resident set before. "Must hold" for the checkpointed sides: s + 2 states (snapshots and the two buffers), the
gradients of the two buffers, and the parameters (with the per-step input). Target: growth <= 1.1 x must hold.
The store-everything side is a plain Tape with one state array per step; at T = 1000 and 100k particles it would
hold ~9.6 GB, so it is measured at ``--store-steps`` steps (default 100) and its growth is extrapolated linearly
to T (printed as such). Target: checkpointed growth < 2 % of the store-everything Tape's at T.

Both sides of the checkpointed rollout are measured: by default, and with ``writes_input=False`` (the step never
writes its input state, so snapshots are read and written in place instead of copied).

Time: medians of interleaved runs. ``one step``: an untaped step (median of ``T`` steps / T); ``one reversed
step``: the step on a fresh local Tape plus its backward (``--reversed-steps`` of them, default T, / their
number). Ratios:
``time / ((evaluations - T) x one step + T x one reversed step)``: what the run costs beyond the recomputations
Revolve prescribes and the T reversed steps any reverse pass needs (target <= 1.15); ``time / (evaluations x
one step)``: the issue's literal ratio, which also counts the backward kernels; ``time / ((evaluations - T) x
one step + store-everything forward + backward)``, store-everything measured at ``--store-steps`` and scaled;
and, for what the copies cost, ``time / (that floor + state copies x one copy)``, where ``state copies`` is the
run's ``summary.state_copies`` (snapshot writes and restores the executor made) and one copy is timed as a
plain ``wp.copy`` of the state into rotating snapshot-like destinations.

Usage: python benchmarks/bench_checkpoint.py [--n 100000] [--steps 1000] [--snapshots 10] [--store-steps 100]
       [--reversed-steps T] [--repeats 5] [--memory-repeats 2] [--device cpu]
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import pathlib
import statistics
import subprocess
import sys
import time

import numpy as np
from common import interleaved_medians, peak_rss_growth, report

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent.parent / "tests"))

from helpers import kernels_checkpoint as k  # noqa: E402

import warp_zerostore as wp  # noqa: E402
from warp_zerostore.checkpoint import optimal_step_count, rollout  # noqa: E402

STATE_ARRAYS = 2  # x, v (vec3d)


def state_bytes(n: int) -> int:
    return STATE_ARRAYS * n * 24


def initial(n: int, steps: int):
    rng = np.random.default_rng(0)
    return rng.uniform(-1, 1, (n, 3)), rng.uniform(-1, 1, (n, 3)), rng.uniform(-1, 1, steps)


def make_params(steps: int, gravity_values):
    params = wp.array([1.0, 0.1], dtype=wp.float64, requires_grad=True)
    gravity = wp.array(gravity_values[:steps], dtype=wp.float64, requires_grad=True)
    return params, gravity


def _loss(x, v):
    loss = wp.zeros(1, dtype=wp.float64, requires_grad=True)
    w = wp.ones(len(x), dtype=wp.vec3d)
    wp.launch(k.loss_kernel, dim=len(x), inputs=[x, v, w, loss])
    return loss


def checkpointed(data, steps: int, snapshots: int, writes_input: bool = True):
    x0, v0, g = data
    params, gravity = make_params(steps, g)
    x = wp.array(x0, dtype=wp.vec3d, requires_grad=True)
    v = wp.array(v0, dtype=wp.vec3d, requires_grad=True)
    out = [wp.empty_like(x, requires_grad=True), wp.empty_like(v, requires_grad=True)]

    def step(a, b, n):
        wp.launch(k.euler_step, dim=len(a[0]), inputs=[a[0], a[1], params, gravity, n, b[0], b[1]])

    tape = wp.Tape()
    with tape:
        run = rollout(
            step, [x, v], steps, snapshots=snapshots, params=[params, gravity], out=out, writes_input=writes_input
        )
        loss = _loss(*run.state)
    tape.backward(loss)
    return run, (x, v, out, params, gravity, loss)


def store_everything(data, steps: int):
    x0, v0, g = data
    params, gravity = make_params(steps, g)
    xs = [wp.array(x0, dtype=wp.vec3d, requires_grad=True)]
    vs = [wp.array(v0, dtype=wp.vec3d, requires_grad=True)]
    tape = wp.Tape()
    with tape:
        for n in range(steps):
            xs.append(wp.empty_like(xs[0], requires_grad=True))
            vs.append(wp.empty_like(vs[0], requires_grad=True))
            wp.launch(k.euler_step, dim=len(xs[0]), inputs=[xs[n], vs[n], params, gravity, n, xs[n + 1], vs[n + 1]])
        loss = _loss(xs[-1], vs[-1])
    tape.backward(loss)
    return tape, (xs, vs, params, gravity, loss)


def untaped_steps(data, steps: int):
    x0, v0, g = data
    params, gravity = make_params(steps, g)
    a = [wp.array(x0, dtype=wp.vec3d), wp.array(v0, dtype=wp.vec3d)]
    b = [wp.empty_like(a[0]), wp.empty_like(a[1])]
    start = time.perf_counter()
    for n in range(steps):
        wp.launch(k.euler_step, dim=len(a[0]), inputs=[a[0], a[1], params, gravity, n, b[0], b[1]])
        a, b = b, a
    wp.synchronize()
    return time.perf_counter() - start


def reversed_steps(data, steps: int):
    """``steps`` reversals of one step as the rollout's reverse sweep does them, without the schedule: the step
    on a fresh local Tape, then its backward (time per step = the floor for each reversed step)."""
    x0, v0, g = data
    params, gravity = make_params(len(g), g)
    a = [wp.array(x0, dtype=wp.vec3d, requires_grad=True), wp.array(v0, dtype=wp.vec3d, requires_grad=True)]
    b = [wp.empty_like(a[0], requires_grad=True), wp.empty_like(a[1], requires_grad=True)]
    b[0].grad.fill_(1.0)
    start = time.perf_counter()
    for n in range(steps):
        tape = wp.Tape()
        with tape:
            wp.launch(k.euler_step, dim=len(a[0]), inputs=[a[0], a[1], params, gravity, n, b[0], b[1]])
        tape.backward()
    wp.synchronize()
    return time.perf_counter() - start


def state_copies(data, copies: int, slots: int):
    """``copies`` copies of the state into ``slots`` rotating destinations (as snapshots are written and read
    back): the time of the state copies the executor makes, per copy."""
    x0, v0, _ = data
    state = [wp.array(x0, dtype=wp.vec3d), wp.array(v0, dtype=wp.vec3d)]
    dests = [[wp.empty_like(a) for a in state] for _ in range(slots)]
    for dest in dests:  # fault the pages in, as the rollout's first writes do (outside the timed loop here)
        for d, a in zip(dest, state):
            wp.copy(d, a)
    wp.synchronize()
    start = time.perf_counter()
    for i in range(copies):
        for d, a in zip(dests[i % slots], state):
            wp.copy(d, a)
    wp.synchronize()
    return time.perf_counter() - start


MEMORY_SIDES = ("checkpointed", "checkpointed-writes-input-false", "store-everything")


def measure_memory(side: str, n: int, steps: int, snapshots: int) -> dict:
    writes_input = side != "checkpointed-writes-input-false"

    def run(data, steps, snapshots):
        if side == "store-everything":
            return store_everything(data, steps)
        return checkpointed(data, steps, snapshots, writes_input=writes_input)

    run(initial(16, steps), 4, 2)  # build the kernels
    data = initial(n, steps)
    warm = run(data, min(20, steps), 3)  # the per-step input has `steps` entries
    del warm
    # The warm-up's rollout holds reference cycles: collected during the measured run, its freed buffers would
    # lower the peak below what the run itself allocates. Collect them first.
    gc.collect()
    with peak_rss_growth() as growth:
        result, kept = run(data, steps, snapshots)
        extra = {} if side == "store-everything" else {"summary": str(result.summary)}
    return {"side": side, "peak_growth_bytes": growth["bytes"], **extra}


def memory_medians(n: int, steps: int, store_steps: int, snapshots: int, repeats: int) -> dict:
    env = dict(os.environ, MALLOC_MMAP_THRESHOLD_="65536", OMP_NUM_THREADS="1")
    sides = {side: store_steps if side == "store-everything" else steps for side in MEMORY_SIDES}
    samples = {side: [] for side in sides}
    last = {}
    for _ in range(repeats):
        for side, side_steps in sides.items():
            cmd = [
                sys.executable,
                __file__,
                "--memory-child",
                side,
                "--n",
                str(n),
                "--steps",
                str(side_steps),
                "--snapshots",
                str(snapshots),
            ]
            out = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=1200, check=True)
            result = json.loads(out.stdout.strip().splitlines()[-1])
            samples[side].append(result["peak_growth_bytes"])
            last[side] = result
    return {
        side: {"median_bytes": statistics.median(s), "samples_bytes": s, "child": last[side]}
        for side, s in samples.items()
    }


def time_sides(args):
    """Medians of the four timed sides on the current device, each run ending in a synchronize."""
    T, s = args.steps, args.snapshots
    data = initial(args.n, T)
    checkpointed(initial(16, T), 4, 2)
    store_everything(initial(16, T), 4)
    evaluations = optimal_step_count(T, s)
    reversed_count = min(args.reversed_steps or T, T)

    def synced(fn):
        def run():
            fn()
            wp.synchronize_device()

        return run

    last = {}

    def checkpointed_run():
        last["run"] = checkpointed(data, T, s)[0]

    def promised_run():
        last["promised"] = checkpointed(data, T, s, writes_input=False)[0]

    runs = {
        "checkpointed": synced(checkpointed_run),
        "checkpointed, writes_input=False": synced(promised_run),
        "store-everything": synced(lambda: store_everything(data, args.store_steps)),
        "untaped steps": synced(lambda: untaped_steps(data, T)),
        "reversed steps": synced(lambda: reversed_steps(data, reversed_count)),
        "state copies": synced(lambda: state_copies(data, reversed_count, s)),
    }
    timings = interleaved_medians(runs, args.repeats)
    copies = {"checkpointed": last["run"].summary.state_copies}
    copies["checkpointed, writes_input=False"] = last["promised"].summary.state_copies
    return timings, evaluations, reversed_count, copies


def memory_figures(args) -> dict:
    """Peak resident growth of both sides in child processes (CPU), printed, and their JSON fields."""
    T, s, n = args.steps, args.snapshots, args.n
    memory = memory_medians(n, T, args.store_steps, s, args.memory_repeats)
    must_hold = (s + 2) * state_bytes(n) + 2 * state_bytes(n) + (2 + T) * 8
    growth = memory["checkpointed"]["median_bytes"]
    promised = memory["checkpointed-writes-input-false"]["median_bytes"]
    store_growth_at_T = memory["store-everything"]["median_bytes"] * T / args.store_steps
    print(
        f"peak RSS growth checkpointed: {growth / 2**20:.1f} MiB, with writes_input=False {promised / 2**20:.1f} "
        f"MiB; must hold {must_hold / 2**20:.1f} MiB; ratios {growth / must_hold:.3f}, {promised / must_hold:.3f} "
        "(target <= 1.1)"
    )
    print(
        f"store-everything Tape: {memory['store-everything']['median_bytes'] / 2**20:.1f} MiB at "
        f"{args.store_steps} steps, extrapolated linearly to {T} steps: {store_growth_at_T / 2**20:.1f} MiB; "
        f"checkpointed / store-everything: {100 * growth / store_growth_at_T:.2f} % (target < 2 %)"
    )
    return {
        "peak_growth_bytes": growth,
        "must_hold_bytes": must_hold,
        "memory_ratio_vs_must_hold": growth / must_hold,
        "memory_ratio_writes_input_false_vs_must_hold": promised / must_hold,
        "memory_target": 1.1,
        "store_everything_growth_bytes_measured": memory["store-everything"]["median_bytes"],
        "store_everything_growth_bytes_extrapolated_to_T": store_growth_at_T,
        "memory_fraction_of_store_everything": growth / store_growth_at_T,
        "memory_fraction_target": 0.02,
        "memory": memory,
    }


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--n", type=int, default=100_000)
    parser.add_argument("--steps", type=int, default=1000)
    parser.add_argument("--snapshots", type=int, default=10)
    parser.add_argument("--store-steps", type=int, default=100)
    parser.add_argument("--reversed-steps", type=int, default=None, help="default: --steps")
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--memory-repeats", type=int, default=2)
    parser.add_argument("--device", default="cpu", help="time on this device; memory (resident set) on the CPU only")
    parser.add_argument("--memory-child", choices=MEMORY_SIDES, help=argparse.SUPPRESS)
    args = parser.parse_args()
    wp.config.quiet = True
    wp.init()
    if args.memory_child:
        print(json.dumps(measure_memory(args.memory_child, args.n, args.steps, args.snapshots)))
        return

    T, s, n = args.steps, args.snapshots, args.n
    with wp.ScopedDevice(args.device):
        timings, evaluations, reversed_count, copies = time_sides(args)
    t_ckpt = timings["checkpointed"]["median_s"]
    t_promised = timings["checkpointed, writes_input=False"]["median_s"]
    t_step = timings["untaped steps"]["median_s"] / T
    t_store = timings["store-everything"]["median_s"] * T / args.store_steps  # scaled to T steps
    t_reversed = timings["reversed steps"]["median_s"] / reversed_count
    literal = t_ckpt / (evaluations * t_step)
    floor = (evaluations - T) * t_step + T * t_reversed  # Revolve's recomputations + T taped steps with backward
    bookkeeping = t_ckpt / ((evaluations - T) * t_step + t_store)
    t_copy = timings["state copies"]["median_s"] / reversed_count
    with_copies = t_ckpt / (floor + copies["checkpointed"] * t_copy)
    print(f"{n} particles (float64), T = {T} steps, s = {s} snapshots; Revolve evaluations: {evaluations}")
    print(
        f"checkpointed forward+backward on {args.device}: median {t_ckpt:.3f} s; with writes_input=False "
        f"{t_promised:.3f} s; one untaped step {t_step * 1e3:.3f} ms; store-everything Tape {t_store:.3f} s for T "
        f"steps (measured at {args.store_steps} steps, scaled)"
    )
    print(f"one reversed step (taped step + its backward): {t_reversed * 1e3:.3f} ms")
    print(
        f"time / ((evaluations - T) x one step + T x one reversed step): {t_ckpt / floor:.3f} by default "
        f"({copies['checkpointed']} state copies), {t_promised / floor:.3f} with writes_input=False "
        f"({copies['checkpointed, writes_input=False']} state copies) (target <= 1.15)"
    )
    print(
        f"time / (the same + {copies['checkpointed']} state copies x one copy ({t_copy * 1e3:.3f} ms)): "
        f"{with_copies:.3f} (by default: the snapshot writes and restores the executor makes, priced as plain copies)"
    )
    print(f"time / (evaluations x one step): {literal:.3f} (the issue's literal ratio, backward kernels included)")
    print(
        f"time / ((evaluations - T) x one step + store-everything forward+backward): {bookkeeping:.3f} (for comparison)"
    )
    figures = {}
    if args.device == "cpu":
        figures = memory_figures(args)
    else:
        print("memory: measured on the CPU only (peak resident set of a child process); run with --device cpu")
    report(
        "checkpoint",
        {
            "particles": n,
            "steps": T,
            "snapshots": s,
            "store_steps_measured": args.store_steps,
            "reversed_steps_measured": reversed_count,
            "evaluations": evaluations,
            "repeats": args.repeats,
            "median_s": {name: v["median_s"] for name, v in timings.items()},
            "one_step_ms": t_step * 1e3,
            "store_everything_s_scaled_to_T": t_store,
            "one_reversed_step_ms": t_reversed * 1e3,
            "time_ratio_vs_recompute_plus_reversed_steps": t_ckpt / floor,
            "time_ratio_writes_input_false_vs_recompute_plus_reversed_steps": t_promised / floor,
            "state_copies": copies["checkpointed"],
            "state_copies_writes_input_false": copies["checkpointed, writes_input=False"],
            "one_state_copy_ms": t_copy * 1e3,
            "time_ratio_vs_recompute_reversed_steps_and_copies": with_copies,
            "time_ratio_literal": literal,
            "time_ratio_vs_store_everything_plus_recompute": bookkeeping,
            "time_target": 1.15,
            "device": args.device,
            **figures,
            "timings": timings,
        },
    )


if __name__ == "__main__":
    main()
