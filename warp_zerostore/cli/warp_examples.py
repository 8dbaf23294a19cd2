"""``warp-examples``: the examples in the installed warp-lang wheel that differentiate, in every mode of this
package, compared with stock Warp (`warp_zerostore.warp_examples`)."""

from __future__ import annotations

import argparse
import sys

from ..warp_examples import discover, report, runner
from ..warp_examples.probe import MODES
from .status import EPILOG, ExitStatus


def add_parser(subparsers) -> None:
    parser = subparsers.add_parser(
        "warp-examples",
        help="run Warp's own examples that differentiate in every mode, compared with stock Warp",
        description="Run each example of the installed warp-lang wheel that records a Tape, calls backward(), "
        "launches an adjoint or uses wp.grad, with short arguments on the CPU, in each mode (stock, imported, "
        "zero_store forced, under check, every Tape a snapshot Tape); compare every gradient after every backward "
        "bitwise with stock, and stock with central differences. Exit 1 where a mode's gradients differ from "
        "stock's or a mode raised where stock ran (a refusal by name, OverwriteError, is not a failure).",
        epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("examples", nargs="*", help="names (optim/example_fluid_checkpoint or fluid_checkpoint)")
    parser.add_argument(
        "--modes", default=",".join(MODES), help=f"comma-separated, from {', '.join(MODES)} (stock always runs)"
    )
    parser.add_argument("--list", action="store_true", help="list the examples and their arguments, run nothing")
    parser.add_argument("--json", metavar="PATH", help="write every result as JSON to PATH")
    parser.add_argument("--timeout", type=float, default=900.0, help="seconds per run (default 900)")
    parser.add_argument("--keep", metavar="DIR", help="keep each run's folder (result.json, arrays.npz) under DIR")
    parser.add_argument(
        "--no-central-differences", action="store_true", help="skip the central differences of stock (2 runs each)"
    )
    parser.set_defaults(handler=_command)


def _command(args, parser) -> int:
    modes = tuple(m.strip() for m in args.modes.split(",") if m.strip())
    unknown = [m for m in modes if m not in MODES]
    if unknown:
        parser.error(f"--modes: {', '.join(unknown)} not one of {', '.join(MODES)}")
    try:
        examples = discover.find(names=args.examples)
    except ValueError as error:
        parser.error(str(error))
    if args.list:
        for e in examples:
            print(f"{e.name}: {', '.join(e.uses)}; " + (f"skipped: {e.skip}" if e.skip else " ".join(e.arguments)))
        return ExitStatus.OK
    modes = ("stock", *(m for m in modes if m != "stock"))

    def progress(example, run):
        print(f"warp-examples: {example.name} [{run.mode}]: {report.cell(run, None)}", file=sys.stderr, flush=True)

    summary = runner.run_all(
        examples,
        modes,
        timeout=args.timeout,
        keep=args.keep,
        central=not args.no_central_differences,
        progress=progress,
    )
    print(f"warp-examples on warp-lang {summary.warp_version}, {summary.seconds:.0f} s\n")
    print(report.table(summary))
    print(report.details(summary))
    if args.json:
        with open(args.json, "w", encoding="utf-8") as f:
            f.write(report.to_json(summary))
    for name, mode, verdict in summary.failed:
        print(f"warp-examples: FAILED {name} [{mode}]: {verdict}")
    return ExitStatus.HAZARDS if summary.failed else ExitStatus.OK
