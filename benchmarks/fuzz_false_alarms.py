"""The fuzzer's false-alarm figure: a fixed-seed run over thousands of drawn kernels, every failure accounted for.

Draws ``--kernels`` kernels (batches of ``--batch``, batch k drawn with seed ``seed * 100003 + k``, as
``python -m warp_zerostore fuzz`` does), checks each stock and ``zero_store=True``, each on a plain and on the
snapshot Tape (`fuzz.batch.check_batch`: four checks per kernel, one build per batch) and sorts every failure:
**worse than stock** (a package path wrong where stock on a plain Tape is right: this package's defect; with a
build-time warning on the snapshot Tape counted apart), known for the installed Warp (`fuzz.known`), warned
about at build time, or neither (a false alarm or a new bug). Each unexplained or worse-than-stock failure is
written to ``--out`` as a standalone repro to investigate; nothing is shrunk unless ``--shrink-worse`` (a
worse-than-stock failure is then also shrunk, still worse than stock, its repro written beside: one per case, and
none for a failure of the same path and kind whose constructs include those of one already shrunk, as a campaign
deduplicates). Prints the counts
and JSON (benchmarks/results/). The figures asked for: unexplained failures, and worse-than-stock ones, over N
thousand kernels.

Usage: python benchmarks/fuzz_false_alarms.py [--kernels 2000] [--seed 7] [--batch 128] [--features ...]
    [--shrink-worse]
"""

import argparse
import collections
import os
import time

import warp
from common import report

from warp_zerostore.testing.fuzz import batch, campaign, known, printer, repro, shrink

WORSE, WORSE_WARNED = "worse than stock", "worse than stock, warned"


def status(failure) -> str:
    """The failure's verdict (campaign.KernelFinding.status's rule): a warning excuses worse than stock on the snapshot
    Tape only."""
    if failure.worse:
        return WORSE_WARNED if failure.warned and failure.tape == "snapshot" else WORSE
    return known.match(failure) or ("warned" if failure.warned else "unexplained")


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
    parser.add_argument(
        "--shrink-worse", action="store_true", help="shrink each worse-than-stock failure (its repro beside)"
    )
    args = parser.parse_args()
    warp.config.quiet = True
    warp.init()
    start, kernels, index = time.monotonic(), 0, 0
    counts = collections.Counter()
    unexplained, worse = [], []
    shrink_seconds = 0.0
    shrunk = []  # (path, kind, constructs) of each worse-than-stock failure shrunk: what a larger one is not shrunk for
    shrunk_cases = set()  # one shrink per case (its other paths' failures come with it)

    def write(failure, listing, tag="", number=None) -> str:
        os.makedirs(args.out, exist_ok=True)
        number = len(unexplained) + len(worse) if number is None else number
        name = f"{number:03d}_{failure.variant}_{failure.tape}_{failure.kind}{tag}.py"
        path = os.path.join(args.out, name)
        with open(path, "w") as f:
            f.write(_script(failure))
        labels = ", ".join(shrink.constructs(failure.case.program))
        entry = {"variant": failure.variant, "tape": failure.tape, "kind": failure.kind, "constructs": labels}
        listing.append(dict(entry, repro=path))
        return path

    while kernels < args.kernels:
        cases = campaign.draw(min(args.batch, args.kernels - kernels), args.seed * 100003 + index, args.features)
        index += 1
        kernels += len(cases)
        for failure in batch.check_batch(cases):
            verdict = status(failure)
            counts[(failure.variant, failure.tape, failure.kind, verdict)] += 1
            if verdict == "unexplained":
                write(failure, unexplained)
            elif failure.worse:
                write(failure, worse, "_worse")
                labels = set(shrink.constructs(failure.case.program))
                seen = any(p == failure.path and k == failure.kind and c <= labels for p, k, c in shrunk)
                if args.shrink_worse and not seen and id(failure.case) not in shrunk_cases:
                    shrunk_cases.add(id(failure.case))
                    began = time.monotonic()
                    small = shrink.shrink(failure)[0]
                    shrink_seconds += time.monotonic() - began
                    shrunk.append((small.path, small.kind, set(shrink.constructs(small.case.program))))
                    number = len(unexplained) + len(worse) - 1  # the unshrunk one's
                    worse[-1]["shrunk"] = write(small, [], "_worse_shrunk", number)
                    worse[-1]["shrunk_constructs"] = ", ".join(shrink.constructs(small.case.program))
        rate = 60.0 * kernels / (time.monotonic() - start - shrink_seconds)
        print(
            f"{kernels} kernels, {sum(counts.values())} failures, {len(unexplained)} unexplained, "
            f"{len(worse)} worse than stock ({rate:.0f}/min)",
            flush=True,
        )
    seconds = time.monotonic() - start
    checks = len(batch.PATHS) * kernels
    print(
        f"false alarms: {len(unexplained)} unexplained failures over {kernels} drawn kernels ({checks} kernel "
        f"checks: stock and zero_store=True, each on a plain and a snapshot Tape) on Warp {warp.config.version}, "
        f"seed {args.seed}, {seconds / 60:.1f} min ({60.0 * kernels / (seconds - shrink_seconds):.0f} kernels/min)"
    )
    warned = sum(n for (*_, verdict), n in counts.items() if verdict == WORSE_WARNED)
    print(f"worse than stock: {len(worse)} failures ({warned} of them warned at build time, snapshot Tape)")
    for (variant, tape, kind, verdict), n in sorted(counts.items()):
        print(f"  {variant:10s} {tape:8s} {kind:8s} {verdict:32s} {n}")
    report(
        "fuzz_false_alarms",
        {
            "kernels": kernels,
            "checks": checks,
            "seed": args.seed,
            "batch": args.batch,
            "features": args.features or "default",
            "seconds": round(seconds, 1),
            "shrink_seconds": round(shrink_seconds, 1),
            "kernels_per_minute": round(60.0 * kernels / (seconds - shrink_seconds)),
            "failures": {f"{v} {t} {k} {s}": n for (v, t, k, s), n in sorted(counts.items())},
            "unexplained": unexplained,
            "worse_than_stock": worse,
            "load_average_1min": os.getloadavg()[0],
        },
    )


if __name__ == "__main__":
    main()
