"""Drawn programs checked per minute by the program fuzzer (warp_zerostore.differential), on the CPU.

Each repeat draws a fresh batch of N launch sequences (a new seed: Warp's kernel cache never serves it), builds their
kernels (stock and flagged) in one build, and runs every program on the six Tape paths (stock and flagged on a
plain, the snapshot and the check Tape), the bridge paths on one program in ``--bridges-every`` each (0: none),
then judges it. Prints programs per minute (N / median seconds per batch), launches per program, the phases'
medians (draw, build, paths), the bridge runs, and JSON. Shrinking is not included (a campaign shrinks only what
no known entry, warning or count explains). The machine is shared: the load average at each batch's start is
reported. Usage: python benchmarks/bench_fuzz_programs.py [--programs 32] [--repeats 3] [--bridges-every 4]
"""

import argparse
import os
import statistics
import time

from common import report

from warp_zerostore.differential import campaign, check
from warp_zerostore.testing.fuzz.programs.nodes import Launch


def one_batch(count: int, seed: int, features, bridge_every: int) -> dict:
    load = os.getloadavg()[0]
    t0, cpu0 = time.perf_counter(), time.process_time()
    cases = campaign.draw(count, seed, features)
    t1 = time.perf_counter()
    checked = check.check_batch(cases, bridge_every=bridge_every)
    t2 = time.perf_counter()
    return {
        "draw_s": t1 - t0,
        "build_and_paths_s": t2 - t1,
        "total_s": t2 - t0,
        "cpu_s": time.process_time() - cpu0,
        "load_average_1min": load,
        "launches": sum(isinstance(s, Launch) for c in cases for s in c.program.body),
        "failures": len(checked.failures),
        "runs": dict(checked.runs),
    }


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--programs", type=int, default=32)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--seed", type=int, default=None, help="first batch's seed (default: the time)")
    parser.add_argument("--features", nargs="+", default=None)
    parser.add_argument("--bridges-every", type=int, default=4)
    args = parser.parse_args()
    campaign.quiet()
    check.check_batch(campaign.draw(4, 1, args.features), bridge_every=1)  # imports, headers, the bridges' modules
    seed = int(time.time()) if args.seed is None else args.seed
    runs = [one_batch(args.programs, seed + r, args.features, args.bridges_every) for r in range(args.repeats)]
    keys = ("draw_s", "build_and_paths_s", "total_s", "cpu_s", "load_average_1min")
    medians = {k: statistics.median(r[k] for r in runs) for k in keys}
    rate = 60.0 * args.programs / medians["total_s"]
    launches = sum(r["launches"] for r in runs) / (args.programs * args.repeats)
    bridges = {b: sum(r["runs"].get(f"zero_store/{b}", 0) for r in runs) for b in ("torch", "jax", "rollout")}
    print(
        f"fuzz --programs: {rate:.0f} programs/min ({launches:.1f} launches each; {args.programs} per batch, median of "
        f"{args.repeats}: draw {medians['draw_s']:.1f} s, build and paths {medians['build_and_paths_s']:.1f} s, "
        f"{medians['cpu_s']:.1f} CPU s; bridge runs {bridges} over {args.programs * args.repeats} programs; load "
        f"average {medians['load_average_1min']:.1f} on {os.cpu_count()} CPUs)"
    )
    report(
        "bench_fuzz_programs",
        {
            "programs_per_min": round(rate, 1),
            "launches_per_program": round(launches, 2),
            "programs_per_batch": args.programs,
            "bridges_every": args.bridges_every,
            "bridge_runs": bridges,
            "repeats": args.repeats,
            "seed": seed,
            "median_s": {k: round(v, 2) for k, v in medians.items()},
            "load_average_1min": round(medians["load_average_1min"], 2),
        },
    )


if __name__ == "__main__":
    main()
