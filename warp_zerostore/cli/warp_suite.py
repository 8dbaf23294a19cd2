"""Run Warp's own unittest modules with warp_zerostore imported (optionally with zero_store forced)."""

from __future__ import annotations

import importlib
import unittest

from .. import config

DEFAULT_MODULES = ["test_tape", "test_grad", "test_array", "test_struct", "test_func", "test_vec", "test_mat"]


def add_parser(subparsers) -> None:
    suite = subparsers.add_parser("warp-suite", help="run Warp's own unittest modules with this package imported")
    suite.add_argument("modules", nargs="*", help="warp.tests modules (default: a store- and tape-heavy set)")
    suite.add_argument(
        "--zero-store", choices=["none", "true", "false"], default="none", help="process default to force"
    )
    suite.set_defaults(handler=_command)


def _command(args, parser) -> int:
    return run(args.modules, {"none": None, "true": True, "false": False}[args.zero_store])


def run(modules, zero_store) -> int:
    """Load ``warp.tests.<name>`` for each name (modules missing from this warp-lang are skipped, saying so)."""
    config.zero_store = zero_store
    suite = unittest.TestSuite()
    for name in modules or DEFAULT_MODULES:
        full = name if name.startswith("warp.") else f"warp.tests.{name}"
        try:
            module = importlib.import_module(full)
        except ModuleNotFoundError:
            if modules:
                raise
            print(f"warp-suite: {full} is not in this warp-lang, skipped")
            continue
        suite.addTests(unittest.defaultTestLoader.loadTestsFromModule(module))
    result = unittest.TextTestRunner(verbosity=1).run(suite)
    return 0 if result.wasSuccessful() else 1
