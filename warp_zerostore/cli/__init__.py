"""The command line: ``warp-zerostore`` / ``python -m warp_zerostore`` with the subcommands ``demo``, ``check``,
``warp-suite``, ``warp-examples``, ``fuzz``. Each subcommand lives in its own module, which defines ``add_parser(subparsers)``: it adds its
parser and sets ``handler`` (``handler(args, parser) -> int``); ``COMMANDS`` lists those modules in ``--help``
order. Exit statuses: `warp_zerostore.cli.status.ExitStatus`."""

from __future__ import annotations

import argparse
import importlib
import os
import sys

from .status import EPILOG, ExitStatus

#: The subcommand modules, in the order ``--help`` lists them.
COMMANDS = ("demo", "check", "warp_suite", "warp_examples", "fuzz")

DESCRIPTION = """\
NVIDIA Warp with a per-kernel zero_store flag.

  demo        print the seed program's gradients: stock Warp next to each flag
  check       run a program with every Tape checking for overwrite hazards
  warp-suite  run Warp's own unittest modules with this package imported
  warp-examples  run Warp's own examples that differentiate in every mode, compared with stock
  fuzz        draw whole kernels and check their gradients against a NumPy reference

'COMMAND --help' describes each command."""


def _prog() -> str:
    """How the command was invoked: ``warp-zerostore`` (the console script) or ``python -m warp_zerostore``."""
    name = os.path.basename(sys.argv[0]) if sys.argv and sys.argv[0] else ""
    return "python -m warp_zerostore" if name in ("", "__main__.py", "-c") else name


def build_parser(prog: str | None = None) -> argparse.ArgumentParser:
    from .. import __version__  # noqa: PLC0415 - the package is imported by now

    parser = argparse.ArgumentParser(
        prog=prog or _prog(),
        description=DESCRIPTION,
        epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--version", action="version", version=f"%(prog)s {__version__} ({_warp_version()})")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for name in COMMANDS:
        importlib.import_module(f".{name}", __name__).add_parser(sub)
    return parser


def _warp_version() -> str:
    from importlib import metadata  # noqa: PLC0415

    try:
        return f"warp-lang {metadata.version('warp-lang')}"
    except metadata.PackageNotFoundError:
        return "warp-lang not installed"


def main(argv=None, prog: str | None = None) -> int:
    parser = build_parser(prog)
    args = parser.parse_args(argv)
    _quiet_warp()
    return int(args.handler(args, parser))


def _quiet_warp() -> None:
    """No init banner or module-load lines: ``quiet`` up to warp-lang 1.18, ``log_level`` from 1.19."""
    import warp  # noqa: PLC0415

    from .. import config  # noqa: PLC0415

    config.quiet = True
    if hasattr(warp.config, "log_level") and hasattr(warp, "LOG_WARNING"):
        config.log_level = warp.LOG_WARNING


__all__ = ["COMMANDS", "ExitStatus", "build_parser", "main"]
