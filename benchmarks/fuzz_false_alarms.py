"""The fuzzer's false-alarm figure: a fixed-seed run over thousands of drawn kernels, every failure accounted for.

Draws ``--kernels`` kernels (batches of ``--batch``, batch k drawn with seed ``seed * 100003 + k``, as
``python -m warp_zerostore fuzz`` does), checks each stock and ``zero_store=True`` (`fuzz.batch.check_batch`) and
sorts every failure: known for the installed Warp (`fuzz.known`), warned about at build time, or neither (a
false alarm or a new bug: each is written to ``--out`` as a standalone repro to investigate; nothing is
shrunk). Prints the counts and JSON (benchmarks/results/). The figure asked for: unexplained failures over N
thousand kernels.

Usage: python benchmarks/fuzz_false_alarms.py [--kernels 2000] [--seed 7] [--batch 128] [--features ...]
"""

import argparse
import collections
import os
import time

import warp
from common import report

from warp_zerostore.testing.fuzz import batch, campaign, known, printer, repro, shrink


def _script(failure) -> str:
    try:
        return repro.script(failure)
    except Exception as error:  # noqa: BLE001 - a build or crash failure has no values: its source will do
        return f"# {failure.detail or error}\n" + printer.source(failure.case.program, failure.case.thresholds)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--kernels", type=int, default=2000)
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--batch", type=int, default=128)
    parser.add_argument(
        "--features", nargs="+", default=None, help="the constructs to draw (default: grammar.DEFAULT_FEATURES)"
    )
    parser.add_argument("--out", default="fuzz-false-alarms", help="where unexplained failures' repros go")
    args = parser.parse_args()
    warp.config.quiet = True
    warp.init()
    start, kernels, index = time.monotonic(), 0, 0
    counts = collections.Counter()
    unexplained = []
    while kernels < args.kernels:
        cases = campaign.draw(min(args.batch, args.kernels - kernels), args.seed * 100003 + index, args.features)
        index += 1
        kernels += len(cases)
        for failure in batch.check_batch(cases):
            status = known.match(failure) or ("warned" if failure.warned else "unexplained")
            counts[(failure.variant, failure.kind, status)] += 1
            if status == "unexplained":
                os.makedirs(args.out, exist_ok=True)
                path = os.path.join(args.out, f"{len(unexplained):03d}_{failure.variant}_{failure.kind}.py")
                with open(path, "w") as f:
                    f.write(_script(failure))
                labels = ", ".join(shrink.constructs(failure.case.program))
                unexplained.append(
                    {"variant": failure.variant, "kind": failure.kind, "constructs": labels, "repro": path}
                )
        rate = 60.0 * kernels / (time.monotonic() - start)
        print(
            f"{kernels} kernels, {sum(counts.values())} failures, {len(unexplained)} unexplained ({rate:.0f}/min)",
            flush=True,
        )
    seconds = time.monotonic() - start
    print(
        f"false alarms: {len(unexplained)} unexplained failures over {kernels} drawn kernels ({2 * kernels} kernel "
        f"checks, stock and zero_store=True) on Warp {warp.config.version}, seed {args.seed}, {seconds / 60:.1f} min"
    )
    for (variant, kind, status), n in sorted(counts.items()):
        print(f"  {variant:10s} {kind:8s} {status:32s} {n}")
    report(
        "fuzz_false_alarms",
        {
            "kernels": kernels,
            "checks": 2 * kernels,
            "seed": args.seed,
            "batch": args.batch,
            "features": args.features or "default",
            "seconds": round(seconds, 1),
            "failures": {f"{v} {k} {s}": n for (v, k, s), n in sorted(counts.items())},
            "unexplained": unexplained,
            "load_average_1min": os.getloadavg()[0],
        },
    )


if __name__ == "__main__":
    main()
