"""Drawn kernels checked per minute by the autodiff fuzzer (warp_zerostore.testing.fuzz), on the CPU.

Each repeat draws a fresh batch of N kernels (a new seed, so Warp's kernel cache never serves it), builds it
(each kernel stock and zero_store=True, with the snapshot Tape's read twins, in `--parts` modules compiled at once
on Warp 1.19; default one per core, at most 4; bisecting if Warp rejects a kernel) and checks every kernel against
the NumPy reference. Prints kernels per minute (N / median seconds per batch), the phases' medians (draw, build
and check), the process's CPU seconds per batch, and JSON. The figure counts builds from scratch; shrinking
failures is not included. The machine is shared: the load average at the start of each batch is reported.
With ``--features`` restricted to constructs without a known wrong gradient, its failure count is the no-false-alarm
figure. Usage: python benchmarks/bench_fuzz.py [--kernels 128] [--repeats 3] [--parts N] [--features ...]
"""

import argparse
import os
import statistics
import time

import warp
from common import report

from warp_zerostore.testing.fuzz import batch, campaign, shrink


def one_batch(count: int, seed: int, features, parts) -> dict:
    load = os.getloadavg()[0]
    t0, cpu0 = time.perf_counter(), time.process_time()
    cases = campaign.draw(count, seed, features)
    t1 = time.perf_counter()
    failures = batch.check_batch(cases, parts=parts)  # `parts` builds at once, every kernel checked
    t2 = time.perf_counter()
    builds = sum(1 for f in failures if f.kind == "build")
    return {
        "draw_s": t1 - t0,
        "build_and_check_s": t2 - t1,
        "total_s": t2 - t0,
        "cpu_s": time.process_time() - cpu0,
        "load_average_1min": load,
        "failures": len(failures),
        "build_errors": builds,
        "found": [f"{f.variant} {f.kind} {f.array}: {', '.join(shrink.constructs(f.case.program))}" for f in failures],
    }


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--kernels", type=int, default=128)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--seed", type=int, default=None, help="first batch's seed (default: the time)")
    parser.add_argument(
        "--features", nargs="+", default=None, help="the constructs to draw (default: grammar.DEFAULT_FEATURES)"
    )
    parser.add_argument("--parts", type=int, default=None, help="modules built at once (default: one per core)")
    args = parser.parse_args()
    warp.config.quiet = True
    warp.init()
    parts = args.parts or batch.parallel_builds()
    batch.check_batch(campaign.draw(2 * parts, 1, args.features), parts=parts)  # per-thread precompiled headers
    seed = int(time.time()) if args.seed is None else args.seed  # by default, fresh kernels: none cached
    runs = [one_batch(args.kernels, seed + r, args.features, parts) for r in range(args.repeats)]
    keys = ("draw_s", "build_and_check_s", "total_s", "cpu_s", "load_average_1min")
    medians = {k: statistics.median(r[k] for r in runs) for k in keys}
    rate = 60.0 * args.kernels / medians["total_s"]
    load = medians["load_average_1min"]
    print(
        f"fuzz: {rate:.0f} kernels/min ({args.kernels} per batch in {parts} module(s) built at once; median of "
        f"{args.repeats}: draw {medians['draw_s']:.1f} s, build and check {medians['build_and_check_s']:.1f} s, "
        f"{medians['cpu_s']:.1f} CPU s; load average {load:.1f} on {os.cpu_count()} CPUs)"
    )
    report(
        "bench_fuzz",
        {
            "kernels_per_min": round(rate, 1),
            "kernels_per_batch": args.kernels,
            "modules_per_batch": parts,
            "features": args.features or "default",
            "failures": sum(r["failures"] for r in runs),
            "repeats": args.repeats,
            "seed": seed,
            "median_s": {k: round(v, 2) for k, v in medians.items()},
            "load_average_1min": round(load, 2),
            "cpus": os.cpu_count(),
            "timings": runs,
        },
    )


if __name__ == "__main__":
    main()
