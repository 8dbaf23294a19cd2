"""Drawn kernels checked per minute by the autodiff fuzzer (warp_zerostore.testing.fuzz), on the CPU.

Each repeat draws a fresh batch of N kernels (a new seed, so Warp's kernel cache never serves it), builds it as
one module (bisecting if Warp rejects a kernel) (each kernel stock and zero_store=True) and checks every kernel against the NumPy reference. Prints
kernels per minute (N / median seconds per batch), the phases' medians (draw, build, check), and JSON. The
figure counts builds from scratch; shrinking failures is not included. The machine is shared: the load average
at the start is reported with the figure.
With ``--features`` restricted to constructs without a known wrong gradient, its failure count is the no-false-alarm
figure. Usage: python benchmarks/bench_fuzz.py [--kernels 128] [--repeats 3] [--features ...]
"""

import argparse
import os
import statistics
import time

import warp
from common import report

from warp_zerostore.testing.fuzz import batch, campaign, shrink


def one_batch(count: int, seed: int, features) -> dict:
    t0 = time.perf_counter()
    cases = campaign.draw(count, seed, features)
    t1 = time.perf_counter()
    failures = batch.check_batch(cases)  # one build (bisected if Warp rejects a kernel), every kernel checked
    t2 = time.perf_counter()
    builds = sum(1 for f in failures if f.kind == "build")
    return {
        "draw_s": t1 - t0,
        "build_and_check_s": t2 - t1,
        "total_s": t2 - t0,
        "failures": len(failures),
        "build_errors": builds,
        "found": [f"{f.variant} {f.kind} {f.array}: {', '.join(shrink.constructs(f.case.program))}" for f in failures],
    }


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--kernels", type=int, default=128)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--seed", type=int, default=None, help="first batch's seed (default: the time)")
    parser.add_argument("--features", nargs="+", default=None, help="the constructs to draw (default: all)")
    args = parser.parse_args()
    warp.config.quiet = True
    warp.init()
    load = os.getloadavg()[0]
    seed = int(time.time()) if args.seed is None else args.seed  # by default, fresh kernels: none cached
    runs = [one_batch(args.kernels, seed + r, args.features) for r in range(args.repeats)]
    medians = {k: statistics.median(r[k] for r in runs) for k in ("draw_s", "build_and_check_s", "total_s")}
    rate = 60.0 * args.kernels / medians["total_s"]
    print(
        f"fuzz: {rate:.0f} kernels/min ({args.kernels} per build; median of {args.repeats}: draw "
        f"{medians['draw_s']:.1f} s, build and check {medians['build_and_check_s']:.1f} s; "
        f"load average {load:.1f} on {os.cpu_count()} CPUs)"
    )
    report(
        "bench_fuzz",
        {
            "kernels_per_min": round(rate, 1),
            "kernels_per_build": args.kernels,
            "features": args.features or "all",
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
