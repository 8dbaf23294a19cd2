"""The program fuzzer against this package broken on purpose: each mutant of tests/helpers/program_mutants.py (the
snapshot save, the store zeroing, the replay's forwarding, the classification of ``*=``) under a campaign of drawn
programs (default features, batches of ``--batch``, nothing shrunk) for at most ``--minutes``; how long, and how
many programs, until the first failure that no known entry, warning or count explains and that the same batch,
unmutated, does not have (each batch is checked unmutated first, outside the clock: the time is the campaign's).
Prints a line per mutant and
JSON (benchmarks/results/).

Usage: python benchmarks/fuzz_programs_mutants.py [--minutes 1] [--seed 5] [--batch 16]
"""

import argparse
import os
import pathlib
import sys
import time

from common import report

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent.parent / "tests"))

from helpers import program_mutants  # noqa: E402

from warp_zerostore.differential import campaign, check  # noqa: E402
from warp_zerostore.testing.fuzz.programs.shrink import constructs  # noqa: E402


def unexplained(checked) -> set:
    """(program, path, kind, worse) of each failure no known entry, warning or count explains."""
    return {
        (f.case.program, f.path, f.kind, f.worse)
        for f in checked.failures
        if not campaign.explanation(f, constructs(f.case.program))
    }


def hunt(mutant, seed: int, batch: int, minutes: float) -> dict:
    """Batches of drawn programs under the mutant, as a campaign checks them, until one has an unexplained failure
    that the same batch unmutated (checked first, outside the clock) has not, or ``minutes`` of campaign pass."""
    spent, programs, index, before = 0.0, 0, 0, 0
    while spent < 60.0 * minutes:
        cases = campaign.draw(batch, seed * 100003 + index, None)
        plain = unexplained(check.check_batch(cases, bridge_every=0))  # the twin, not timed
        before += len(plain)
        start = time.monotonic()
        with mutant():
            mutated = unexplained(check.check_batch(cases, bridge_every=0))
        spent += time.monotonic() - start
        programs += len(cases)
        index += 1
        new = mutated - plain
        if new:
            shown = [f"{p[0]} on {p[1]} {k}{' (worse than stock)' if w else ''}" for _, p, k, w in new]
            return {
                "caught": True,
                "seconds": round(spent, 1),
                "programs": programs,
                "as": sorted(shown)[:3],
                "before": before,
            }
    return {"caught": False, "seconds": round(spent, 1), "programs": programs, "as": [], "before": before}


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--minutes", type=float, default=1.0)
    parser.add_argument("--seed", type=int, default=5)
    parser.add_argument("--batch", type=int, default=16)
    parser.add_argument("--only", nargs="+", default=None, help="these mutants only")
    args = parser.parse_args()
    campaign.quiet()
    check.check_batch(campaign.draw(4, 1, None), bridge_every=0)  # imports and headers, outside the timing
    load = os.getloadavg()[0]
    results = {}
    for name, mutant in program_mutants.MUTANTS.items():
        if args.only and name not in args.only:
            continue
        results[name] = r = hunt(mutant, args.seed, args.batch, args.minutes)
        caught = f"caught after {r['seconds']} s, {r['programs']} programs, as {r['as'][0]}" if r["caught"] else ""
        verdict = caught or f"NOT caught in {r['seconds']} s, {r['programs']} programs"
        print(f"mutant {name}: {verdict} (the same programs unmutated: {r['before']} unexplained failures)")
    report("fuzz_programs_mutants", {"load_average_1min": round(load, 2), "seed": args.seed, **results})


if __name__ == "__main__":
    main()
