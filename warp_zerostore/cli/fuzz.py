"""``python -m warp_zerostore fuzz``: fuzz Warp's autodiff with drawn kernels; exit 1 if anything failed (a
failure worse than stock, this package's defect, included). With ``--programs``, drawn launch sequences on every
path of the package (exit 1 on a failure neither known, warned nor counted apart); with ``--python``, that on
several Warp versions, one table. Warnings are collected into the summary, never printed."""

from __future__ import annotations

import argparse
import collections
import json
import warnings

from .. import _progress


def add_parser(subparsers) -> argparse.ArgumentParser:
    parser = subparsers.add_parser(
        "fuzz",
        help=(
            "draw whole kernels and check their gradients (stock and zero_store=True, each on a plain and a snapshot"
            " Tape); exit 1 on any failure"
        ),
    )
    parser.add_argument(
        "--minutes",
        type=float,
        default=1.0,
        help=(
            "how long to fuzz, all of it: drawing, building, checking, shrinking, repros (default 1; fractions too:"
            " 0.5 is 30 s); work that does not fit is cut and named in the summary"
        ),
    )
    parser.add_argument("--seed", type=int, default=0, help="the campaign's seed (default 0)")
    parser.add_argument(
        "--features",
        nargs="+",
        default=None,
        metavar="FEATURE",
        help=(
            "the constructs to draw (default: all but the opt-in while_loops, break, continue, ternaries, where,"
            " mat33, quat, nested_helpers, helper_tuples, func_grad, static, arrays2d, structs, func_replay,"
            " builtins2, tiles, struct_helpers, multidim)"
        ),
    )
    parser.add_argument("--out", default="fuzz-repros", help="where repro scripts go (default ./fuzz-repros)")
    parser.add_argument(
        "--batch",
        type=int,
        default=None,
        help=(
            "kernels drawn per seed and at most per Warp build, builds being sized to the time left (default 64;"
            " --programs: programs, default 32)"
        ),
    )
    parser.add_argument("--json", action="store_true", help="print the summary as JSON too")
    programs = parser.add_argument_group(
        "launch sequences (--programs: the program fuzzer, warp_zerostore.differential)"
    )
    programs.add_argument(
        "--programs",
        action="store_true",
        help=(
            "draw launch sequences (1-6 launches over shared arrays, copies, fill_/zero_/assign, options) and run "
            "each stock and flagged on a plain, the snapshot and the check Tape, and sampled through the torch and "
            "JAX bridges and a checkpointed rollout; --features then names program features"
        ),
    )
    programs.add_argument(
        "--bridges-every",
        type=int,
        default=4,
        metavar="K",
        help="run each bridge path (torch, JAX, rollout) on one program in K (default 4; 0: never)",
    )
    programs.add_argument(
        "--shrink-rounds", type=int, default=8, help="rounds of shrinking per new failure (default 8; 0: none)"
    )
    programs.add_argument(
        "--python",
        nargs="+",
        metavar="PYTHON",
        help="run the program campaign under each of these interpreters (one per Warp version, e.g. the "
        ".venv-warp-*/bin/python the Makefile's matrix builds), one after the other, and print one table",
    )
    programs.add_argument("--summary-file", help=argparse.SUPPRESS)
    programs.add_argument("--quiet", action="store_true", help=argparse.SUPPRESS)
    parser.set_defaults(handler=_command)
    return parser


def _command(args, parser) -> int:
    if args.python:
        return run_matrix(args)
    if args.programs:
        return run_programs(args)
    return run(args)


def _program_arguments(args) -> list:
    """The arguments a child campaign of `run_matrix` gets (its ``--out`` and summary file are its own)."""
    found = ["--minutes", str(args.minutes), "--seed", str(args.seed), "--batch", str(args.batch or 32)]
    found += ["--bridges-every", str(args.bridges_every), "--shrink-rounds", str(args.shrink_rounds)]
    return found + (["--features", *args.features] if args.features else [])


def campaign_bar(args, description: str, counts):
    """The campaign's bar (`_progress.bar`: on a terminal, or as ``config.progress`` says; never with ``--quiet``),
    its total the budget's seconds, and the ``progress(summary, seconds, doing)`` that moves it: to the seconds
    spent, at each step a user waits on (a build, a case checked, a shrinking round), with ``counts(summary)``."""
    bar = _progress.bar(
        round(60 * args.minutes),
        description,
        "s",
        requested=False if args.quiet else None,
        bar_format="{desc}: {percentage:3.0f}%|{bar}| {n}/{total} s{postfix}",
    )
    shown = 0

    def progress(summary, seconds, doing):
        nonlocal shown
        step = max(0, min(round(60 * args.minutes), round(seconds)) - shown)
        bar.update(step)
        shown += step
        bar.set_postfix_str(f"{counts(summary)}; {doing}")

    return bar, progress


def run_programs(args) -> int:
    from ..differential import campaign  # noqa: PLC0415  (needs hypothesis)
    from ..testing.fuzz.programs import PROGRAM_FEATURES  # noqa: PLC0415

    unknown = sorted(set(args.features or ()) - set(PROGRAM_FEATURES))
    if unknown:
        print(f"fuzz --programs: unknown features {unknown}; choose from {', '.join(PROGRAM_FEATURES)}.")
        return 2
    bar, progress = campaign_bar(
        args, "fuzz programs", lambda s: f"{s.programs} programs, {len(s.findings)} failures ({len(s.new)} new)"
    )
    try:
        summary = campaign.run(
            minutes=args.minutes,
            seed=args.seed,
            features=args.features,
            out=args.out,
            batch_size=args.batch or 32,
            shrink_rounds=args.shrink_rounds,
            bridge_every=args.bridges_every,
            progress=progress,
        )
    finally:
        bar.close()
    data = campaign.as_json(summary)
    if args.summary_file:
        with open(args.summary_file, "w") as f:
            json.dump(data, f, indent=1)
    if not args.quiet:
        print(campaign.table(summary))
    if args.json:
        print(json.dumps(data))
    return 1 if summary.new else 0


def run_matrix(args) -> int:
    from ..differential import matrix  # noqa: PLC0415

    summaries = matrix.run_versions(args.python, _program_arguments(args), args.out)
    print(matrix.table(summaries))
    if args.json:
        print(json.dumps(summaries))
    new = any(not f["status"].islower() for s in summaries for f in s.get("findings", []) if "status" in f)
    return 1 if new or any(s.get("error") for s in summaries) else 0


def run(args) -> int:
    from .. import _compat  # noqa: PLC0415
    from ..testing.fuzz import FEATURES, campaign  # noqa: PLC0415  (needs hypothesis)

    unknown = sorted(set(args.features or ()) - set(FEATURES))
    if unknown:
        print(f"fuzz: unknown features {unknown}; choose from {', '.join(FEATURES)}.")
        return 2
    bar, progress = campaign_bar(
        args, "fuzz", lambda s: f"{s.kernels} kernels, {len(s.findings)} failures ({len(s.new)} new)"
    )
    try:
        with _compat.warp_warnings_as_warnings(), warnings.catch_warnings(record=True) as said:
            warnings.simplefilter("always")  # the package's and Warp's warnings go into the summary, not to stderr
            summary = campaign.run(
                minutes=args.minutes,
                seed=args.seed,
                features=args.features,
                out=args.out,
                batch_size=args.batch or 64,
                progress=progress,
            )
    finally:
        bar.close()
    print(campaign.table(summary))
    if said:
        counts = collections.Counter(w.category.__name__ for w in said)
        print("warnings collected (not printed): " + ", ".join(f"{n} {c}" for n, c in counts.most_common()))
    if args.json:
        print(
            json.dumps(
                {
                    "kernels": summary.kernels,
                    "builds": summary.builds,
                    "seconds": round(summary.seconds, 1),
                    "budget_seconds": round(summary.budget, 1),
                    "cut_for_time": summary.cut,
                    "worse_than_stock": len(summary.worse),
                    "findings": [
                        {
                            "variant": f.variant,
                            "tape": f.tape,
                            "kind": f.kind,
                            "worse_than_stock": f.worse,
                            "status": f.status,
                            "constructs": list(f.constructs),
                            "count": f.count,
                            "known": f.known,
                            "repro": f.repro_path,
                        }
                        for f in summary.findings
                    ],
                }
            )
        )
    return 1 if summary.findings else 0
