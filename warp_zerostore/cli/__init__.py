"""The command line: ``python -m warp_zerostore demo | warp-suite | check SCRIPT.py [args] | check -m MODULE [args]``."""

from __future__ import annotations

import argparse


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="python -m warp_zerostore", description=__doc__)
    sub = parser.add_subparsers(dest="command", required=True)
    demo = sub.add_parser("demo", help="print the seed program's gradients: stock Warp vs zero_store=True/False")
    demo.add_argument("--device", default="cpu")
    suite = sub.add_parser("warp-suite", help="run Warp's own unittest modules with this package imported")
    suite.add_argument("modules", nargs="*", help="warp.tests modules (default: a store- and tape-heavy set)")
    suite.add_argument(
        "--zero-store", choices=["none", "true", "false"], default="none", help="process default to force"
    )
    check = sub.add_parser(
        "check", help="run a script with every Tape checking for overwrite hazards; exit 1 if any was found"
    )
    check.add_argument("-m", dest="module", action="store_true", help="run the target as a module (python -m)")
    check.add_argument("script", help="the script (or, with -m, the module) to run")
    check.add_argument("script_args", nargs=argparse.REMAINDER, help="arguments passed to the program")
    from . import fuzz  # noqa: PLC0415  (the fuzz command: parser and logic in cli/fuzz.py)

    fuzz.add_parser(sub)
    args = parser.parse_args(argv)

    import warp_zerostore as wp  # noqa: PLC0415  (import late: argparse errors need no Warp)

    wp.config.quiet = True
    if args.command == "demo":
        from . import demo as demo_module

        demo_module.run(args.device)
        return 0
    if args.command == "fuzz":
        return fuzz.run(args)
    if args.command == "check":
        from . import check as check_command

        return check_command.run(args.script, args.script_args, as_module=args.module)
    from . import warp_suite

    value = {"none": None, "true": True, "false": False}[args.zero_store]
    return warp_suite.run(args.modules, value)
