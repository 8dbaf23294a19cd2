"""The Tape at simulator scale: snapshot and check over plain recording on long rollouts of small launches.

(1) **One state per step**: ``step(xs[k], xs[k + 1])`` on 64 particles (a new state array per step, allocated before
the rollout, as a simulator's list of states), then one loss; forward + backward on ``warp.Tape()``,
``Tape(snapshot=True)`` and ``Tape(check="warn")`` at 500, 1,000, 2,000 and 4,000 steps. Prints each side's time,
snapshot/plain and check/plain, and the per-launch cost of each Tape at each length over its cost at the shortest
(flat when the bookkeeping per launch does not grow with the history). Targets: snapshot <= 1.5x plain, per-launch
cost within 1.3x from the shortest to the longest, check <= 3x.

(2) **A substep loop that zeroes a buffer inside the Tape**: ``--outer`` steps of ``--substeps`` substeps on 64
particles; each substep zeroes a contact-force buffer (``force.zero_()``, inside ``with tape:``), sums penalties
into it and integrates into a new state. Sides: the snapshot Tape (which records the ``zero_`` as a write, so the
gradient is exact), the plain Tape on the same program (wrong: it reads the last substep's buffer, timed as the
cost baseline), and the store-everything program on a plain Tape (a force buffer per substep: exact). Prints
snapshot/plain, snapshot/store-everything, and the bytes of Warp arrays each holds at the end of ``backward()``
(states, buffers, their gradients, the snapshots, the fingerprint slots; counted from their sizes), and with
``--rss`` the peak resident-set growth of each side in a child process.

Time: medians of interleaved runs (wall and thread CPU), both sides in the same run, after an untimed warm-up of
each; for (1) also the fastest CPU sample of each side (the least disturbed by other jobs on a shared machine). Usage: python benchmarks/bench_tape_scale.py [--repeats 5] [--steps 500 1000 2000 4000] [--substeps 8]
[--outer 100] [--device cpu] [--rss] [--quick]
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
import warp
from common import interleaved_medians, peak_rss_growth, report

import warp_zerostore as wp

PARTICLES = 64


@wp.kernel
def step(x: wp.array(dtype=float), y: wp.array(dtype=float)):
    i = wp.tid()
    y[i] = x[i] + 0.01 * wp.sin(x[i])


@wp.kernel
def square_sum(x: wp.array(dtype=float), loss: wp.array(dtype=float)):
    wp.atomic_add(loss, 0, x[wp.tid()] * x[wp.tid()])


@wp.kernel
def collide(x: wp.array(dtype=float), force: wp.array(dtype=float)):
    i = wp.tid()
    c = wp.min(x[i] - 1.0, 0.0)
    wp.atomic_add(force, i, -100.0 * c * c)
    wp.atomic_add(force, (i + 1) % PARTICLES, 10.0 * c)


@wp.kernel
def integrate(
    x: wp.array(dtype=float),
    v: wp.array(dtype=float),
    force: wp.array(dtype=float),
    x_out: wp.array(dtype=float),
    v_out: wp.array(dtype=float),
):
    i = wp.tid()
    v_out[i] = 0.99 * v[i] + force[i] * force[i] * 0.001
    x_out[i] = x[i] + v_out[i] * 0.01


TAPES = {
    "plain": warp.Tape,
    "snapshot": lambda: wp.Tape(snapshot=True),
    "check": lambda: wp.Tape(check="warn"),
}


def _states(count: int, device: str) -> list:
    rng = np.random.default_rng(0)
    first = wp.array(rng.uniform(0.0, 2.0, PARTICLES).astype(np.float32), dtype=float, device=device)
    first.requires_grad = True
    return [first] + [wp.zeros(PARTICLES, dtype=float, device=device, requires_grad=True) for _ in range(count)]


def rollout(steps: int, make_tape, device: str):
    """One state per step; returns a callable running forward + backward on a fresh Tape (states made before)."""

    def prepare():
        prepared["xs"] = _states(steps, device)
        prepared["loss"] = wp.zeros(1, dtype=float, device=device, requires_grad=True)

    prepared: dict = {}

    def run():
        xs, loss = prepared["xs"], prepared["loss"]
        tape = make_tape()
        with tape:
            for k in range(steps):
                wp.launch(step, dim=PARTICLES, inputs=[xs[k], xs[k + 1]], device=device)
            wp.launch(square_sum, dim=PARTICLES, inputs=[xs[steps], loss], device=device)
        tape.backward(loss)
        wp.synchronize_device(device)
        prepared["tape"] = tape

    return prepare, run


def one_state_per_step(counts: list, repeats: int, device: str) -> dict:
    out: dict = {"steps": counts, "sides": {}}
    for n in counts:
        runs, setup = {}, {}
        for side, make_tape in TAPES.items():
            setup[side], runs[side] = rollout(n, make_tape, device)
            setup[side]()
            runs[side]()  # warm-up: kernels, read twins and the contents kernels built
        timings = interleaved_medians(runs, repeats, setup)
        for side in TAPES:  # the fastest CPU sample: the least disturbed by other jobs on a shared machine
            timings[side]["cpu_min_s"] = min(timings[side]["cpu_samples_s"])
        entry = {"timings": timings}
        for clock in ("median_s", "cpu_median_s", "cpu_min_s"):
            plain = timings["plain"][clock]
            for side in ("snapshot", "check"):
                entry[f"{side}_{clock.replace('median_s', 'ratio').replace('min_s', 'min_ratio')}"] = (
                    timings[side][clock] / plain
                )
        out["sides"][n] = entry
        print(
            f"  {n:5d} steps: plain {timings['plain']['median_s'] * 1e3:8.1f} ms, "
            f"snapshot {timings['snapshot']['median_s'] * 1e3:8.1f} ms ({entry['snapshot_ratio']:.2f}x; "
            f"cpu {entry['snapshot_cpu_ratio']:.2f}x, fastest cpu {entry['snapshot_cpu_min_ratio']:.2f}x), "
            f"check {timings['check']['median_s'] * 1e3:8.1f} ms ({entry['check_ratio']:.2f}x; "
            f"cpu {entry['check_cpu_ratio']:.2f}x, fastest cpu {entry['check_cpu_min_ratio']:.2f}x)"
        )
    first = counts[0]
    for side in TAPES:
        fastest = {n: out["sides"][n]["timings"][side]["cpu_min_s"] / (n + 1) for n in counts}
        out[f"{side}_fastest_per_launch_growth_ratio"] = max(fastest[n] / fastest[first] for n in counts)
        per_launch = {n: out["sides"][n]["timings"][side]["cpu_median_s"] / (n + 1) for n in counts}
        out[f"{side}_per_launch_ms"] = {n: v * 1e3 for n, v in per_launch.items()}
        out[f"{side}_per_launch_growth_ratio"] = max(per_launch[n] / per_launch[first] for n in counts)
        print(
            f"  {side:8s} per launch (cpu): "
            + ", ".join(f"{n}: {per_launch[n] * 1e6:.1f} us" for n in counts)
            + f"; largest over {first} steps: {out[f'{side}_per_launch_growth_ratio']:.2f}x (fastest samples: "
            + f"{out[f'{side}_fastest_per_launch_growth_ratio']:.2f}x)"
        )
    out["snapshot_ratio_max"] = max(out["sides"][n]["snapshot_ratio"] for n in counts)
    out["check_ratio_max"] = max(out["sides"][n]["check_ratio"] for n in counts)
    out["targets"] = {"snapshot_ratio": 1.5, "per_launch_growth_ratio": 1.3, "check_ratio": 3.0}
    return out


# -- (2) a substep loop that zeroes a buffer inside the Tape

SUBSTEP_SIDES = ("snapshot", "plain", "store everything")


def substeps(side: str, outer: int, count: int, device: str):
    """``(prepare, run)``: ``outer`` steps of ``count`` substeps; ``run`` returns (tape, arrays held, first state)."""
    prepared: dict = {}

    def prepare():
        prepared["xs"] = _states(outer * count, device)
        prepared["vs"] = _states(outer * count, device)
        buffers = outer * count if side == "store everything" else 1
        prepared["forces"] = [
            wp.zeros(PARTICLES, dtype=float, device=device, requires_grad=True) for _ in range(buffers)
        ]
        prepared["loss"] = wp.zeros(1, dtype=float, device=device, requires_grad=True)

    def run():
        xs, vs, forces, loss = prepared["xs"], prepared["vs"], prepared["forces"], prepared["loss"]
        tape = wp.Tape(snapshot=True) if side == "snapshot" else warp.Tape()
        with tape:
            for k in range(outer * count):
                force = forces[k] if side == "store everything" else forces[0]
                if side != "store everything":
                    force.zero_()
                wp.launch(collide, dim=PARTICLES, inputs=[xs[k], force], device=device)
                wp.launch(integrate, dim=PARTICLES, inputs=[xs[k], vs[k], force, xs[k + 1], vs[k + 1]], device=device)
            wp.launch(square_sum, dim=PARTICLES, inputs=[xs[-1], loss], device=device)
        tape.backward(loss)
        wp.synchronize_device(device)
        prepared["tape"] = tape
        return tape

    return prepare, run, prepared


def warp_bytes(side: str, prepared: dict) -> int:
    """Bytes of Warp arrays the run holds after backward(): states, buffers and their gradients, the snapshots,
    the fingerprint slots (counted from their sizes)."""
    arrays = prepared["xs"] + prepared["vs"] + prepared["forces"] + [prepared["loss"]]
    total = sum(2 * a.size * 4 for a in arrays)
    tape = prepared["tape"]
    if side == "snapshot":
        total += tape.snapshot_bytes
        ledger = tape._fingerprints.ledger
        total += sum(len(chunks) * ledger.CHUNK * 8 for chunks in ledger.chunks.values())
    return total


def substep_loop(outer: int, count: int, repeats: int, device: str) -> dict:
    runs, setup, prepared = {}, {}, {}
    for side in SUBSTEP_SIDES:
        setup[side], runs[side], prepared[side] = substeps(side, outer, count, device)
        setup[side]()
        runs[side]()
    gradients = {}
    for side in SUBSTEP_SIDES:
        gradients[side] = prepared[side]["xs"][0].grad.numpy().copy()
    timings = interleaved_medians(runs, repeats, setup)
    bytes_held = {side: warp_bytes(side, prepared[side]) for side in SUBSTEP_SIDES}
    out = {
        "outer_steps": outer,
        "substeps": count,
        "launches": 2 * outer * count + 1,
        "timings": timings,
        "warp_bytes": bytes_held,
        "snapshot_exact": bool(np.allclose(gradients["snapshot"], gradients["store everything"], rtol=1e-4)),
        "plain_exact": bool(np.allclose(gradients["plain"], gradients["store everything"], rtol=1e-4)),
    }
    for clock in ("median_s", "cpu_median_s"):
        label = clock.replace("median_s", "ratio")
        out[f"snapshot_over_plain_{label}"] = timings["snapshot"][clock] / timings["plain"][clock]
        out[f"snapshot_over_store_everything_{label}"] = timings["snapshot"][clock] / timings["store everything"][clock]
    out["memory_ratio_snapshot_over_store_everything"] = bytes_held["snapshot"] / bytes_held["store everything"]
    print(
        f"  {outer} x {count} substeps, {out['launches']} launches: snapshot "
        f"{timings['snapshot']['median_s'] * 1e3:.1f} ms, plain (wrong gradient) "
        f"{timings['plain']['median_s'] * 1e3:.1f} ms, store everything {timings['store everything']['median_s'] * 1e3:.1f} ms"
    )
    print(
        f"  snapshot over plain {out['snapshot_over_plain_ratio']:.2f}x (cpu {out['snapshot_over_plain_cpu_ratio']:.2f}x), "
        f"over store everything {out['snapshot_over_store_everything_ratio']:.2f}x; Warp bytes held: "
        + ", ".join(f"{side} {b / 1024:.0f} KiB" for side, b in bytes_held.items())
        + f" (snapshot / store everything {out['memory_ratio_snapshot_over_store_everything']:.2f}x); gradient exact: "
        f"snapshot {out['snapshot_exact']}, plain {out['plain_exact']}"
    )
    return out


def _memory_child(side: str, outer: int, count: int, device: str) -> None:
    prepare, run, prepared = substeps(side, outer, count, device)
    prepare()
    run()  # warm up at full size, then free it
    prepared.clear()
    prepare()
    with peak_rss_growth() as growth:
        run()
    print(json.dumps({"side": side, "peak_growth_bytes": growth["bytes"], "warp_bytes": warp_bytes(side, prepared)}))


def rss(outer: int, count: int, repeats: int, device: str) -> dict:
    env = dict(os.environ, MALLOC_MMAP_THRESHOLD_="65536", OMP_NUM_THREADS="1")
    samples: dict = {side: [] for side in SUBSTEP_SIDES}
    for _ in range(repeats):
        for side in SUBSTEP_SIDES:
            found = subprocess.run(
                [sys.executable, __file__, "--memory-child", side, "--outer", str(outer), "--substeps", str(count)],
                env=env,
                capture_output=True,
                text=True,
                timeout=900,
                check=True,
            )
            samples[side].append(json.loads(found.stdout.strip().splitlines()[-1])["peak_growth_bytes"])
    medians = {side: statistics.median(s) for side, s in samples.items()}
    print("  peak RSS growth (child processes): " + ", ".join(f"{s} {b / 1024:.0f} KiB" for s, b in medians.items()))
    return {"median_bytes": medians, "samples_bytes": samples}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--steps", type=int, nargs="+", default=[500, 1000, 2000, 4000])
    parser.add_argument("--outer", type=int, default=100)
    parser.add_argument("--substeps", type=int, default=8)
    parser.add_argument("--device", default="cpu")
    parser.add_argument("--rss", action="store_true", help="also peak RSS growth per side, in child processes")
    parser.add_argument("--quick", action="store_true", help="500 and 1000 steps, 3 repeats")
    parser.add_argument("--memory-child", choices=list(SUBSTEP_SIDES), help=argparse.SUPPRESS)
    args = parser.parse_args()
    wp.config.quiet = True
    wp.init()
    if args.memory_child:
        _memory_child(args.memory_child, args.outer, args.substeps, args.device)
        return
    if args.quick:
        args.steps, args.repeats = [500, 1000], min(args.repeats, 3)
    warnings.simplefilter("ignore", wp.OverwriteWarning)
    print(f"one state per step, {PARTICLES} particles, forward + backward ({args.device}):")
    payload = {"device": args.device, "repeats": args.repeats}
    payload["one_state_per_step"] = one_state_per_step(args.steps, args.repeats, args.device)
    print(f"a substep loop that zeroes a force buffer inside the Tape ({args.device}):")
    payload["substep_loop"] = substep_loop(args.outer, args.substeps, args.repeats, args.device)
    if args.rss and args.device == "cpu":
        payload["substep_loop"]["rss"] = rss(args.outer, args.substeps, 3, args.device)
    first = payload["one_state_per_step"]
    payload["snapshot_ratio_max"] = first["snapshot_ratio_max"]
    payload["check_ratio_max"] = first["check_ratio_max"]
    payload["snapshot_per_launch_growth_ratio"] = first["snapshot_per_launch_growth_ratio"]
    payload["load_average"] = os.getloadavg()
    report("tape_scale", payload)


if __name__ == "__main__":
    main()
