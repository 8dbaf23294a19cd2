"""``python -m warp_zerostore fuzz``: fuzz Warp's autodiff with drawn kernels; exit 1 if anything failed (a
failure worse than stock, this package's defect, included)."""

from __future__ import annotations

import argparse
import json


def add_parser(subparsers) -> argparse.ArgumentParser:
    parser = subparsers.add_parser(
        "fuzz",
        help=(
            "draw whole kernels and check their gradients (stock and zero_store=True, each on a plain and a snapshot"
            " Tape); exit 1 on any failure"
        ),
    )
    parser.add_argument("--minutes", type=float, default=1.0, help="how long to fuzz (default 1)")
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
    parser.add_argument("--batch", type=int, default=64, help="kernels per Warp build (default 64)")
    parser.add_argument("--json", action="store_true", help="print the summary as JSON too")
    parser.set_defaults(handler=_command)
    return parser


def _command(args, parser) -> int:
    return run(args)


def run(args) -> int:
    from tqdm import tqdm  # noqa: PLC0415  (the `test`/`checkpoint` extras carry it)

    from ..testing.fuzz import FEATURES, campaign  # noqa: PLC0415  (needs hypothesis)

    unknown = sorted(set(args.features or ()) - set(FEATURES))
    if unknown:
        print(f"fuzz: unknown features {unknown}; choose from {', '.join(FEATURES)}.")
        return 2
    bar = tqdm(total=round(args.minutes * 60), unit="s", desc="fuzz", dynamic_ncols=True)

    def progress(summary, elapsed):
        bar.n = min(bar.total, round(elapsed))
        bar.set_postfix(kernels=summary.kernels, failures=len(summary.findings))
        bar.refresh()

    summary = campaign.run(
        minutes=args.minutes,
        seed=args.seed,
        features=args.features,
        out=args.out,
        batch_size=args.batch,
        progress=progress,
    )
    bar.close()
    print(campaign.table(summary))
    if args.json:
        print(
            json.dumps(
                {
                    "kernels": summary.kernels,
                    "seconds": round(summary.seconds, 1),
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
