"""Run Warp's own unittest modules with warp_zerostore imported (optionally with zero_store forced, and with every
``wp.Tape()`` of the tests made this package's Tape in one mode: ``--tape snapshot`` or ``--tape check``)."""

from __future__ import annotations

import contextlib
import importlib
import unittest
import warnings

from .. import _compat, config
from ..tape import OverwriteWarning, hazard_listener
from ..tape.defaults import every_tape

#: Warp's test modules that touch gradients (stores and their adjoints, the Tape, copies, composite and component
#: assignment, tiles, lvalues, indexed and fabric arrays), by name. Where a module moved between releases, the
#: places to look, in order; ``since`` is the first release that ships it (earlier ones skip it, saying so).
GRADIENT_MODULES: dict[str, dict] = {
    "test_tape": {},
    "test_grad": {},
    "test_grad_customs": {},
    "test_grad_debug": {},
    "test_overwrite": {},
    "test_copy": {},
    "test_array": {},
    "test_struct": {},
    "test_func": {},
    "test_lvalue": {},
    "test_indexedarray": {},
    "test_fabricarray": {},
    "test_atomic": {},
    "test_conditional": {},
    "test_vec": {},
    "test_vec_assign_copy": {},
    "test_mat": {"paths": ["warp.tests.matrix.test_mat", "warp.tests.test_mat"]},
    "test_mat_assign_copy": {"paths": ["warp.tests.matrix.test_mat_assign_copy", "warp.tests.test_mat_assign_copy"]},
    "test_quat": {},
    "test_quat_assign_copy": {},
    "test_spatial": {},
    "test_spatial_assign_copy": {},
    "test_composite_component_adjoint": {"since": (1, 14, 0)},
    "test_ref": {"since": (1, 15, 0)},
    "test_func_parameter_targets": {"since": (1, 15, 0)},
    "test_tile": {"paths": ["warp.tests.tile.test_tile"]},
    "test_tile_load": {"paths": ["warp.tests.tile.test_tile_load"]},
    "test_tile_reduce": {"paths": ["warp.tests.tile.test_tile_reduce"]},
}
DEFAULT_MODULES = list(GRADIENT_MODULES)

#: ``--tape``: what every ``wp.Tape()`` of the tests becomes (``plain``: Warp's own, untouched)
TAPES = {"plain": None, "snapshot": {"snapshot": True}, "check": {"check": "warn"}}


class SuiteModuleError(ImportError):
    """A module of the default list that this warp-lang should have and does not import."""


def add_parser(subparsers) -> None:
    suite = subparsers.add_parser("warp-suite", help="run Warp's own unittest modules with this package imported")
    suite.add_argument("modules", nargs="*", help="warp.tests modules (default: every module that touches gradients)")
    suite.add_argument(
        "--zero-store", choices=["none", "true", "false"], default="none", help="process default to force"
    )
    suite.add_argument(
        "--tape",
        choices=list(TAPES),
        default="plain",
        help="make every wp.Tape() of the tests this package's Tape(snapshot=True) or Tape(check='warn'), and list "
        "the reports each test got (default: plain, Warp's own Tape)",
    )
    suite.set_defaults(handler=_command)


def _command(args, parser) -> int:
    return run(args.modules, {"none": None, "true": True, "false": False}[args.zero_store], args.tape)


def resolve(name: str):
    """The imported module for ``name`` (a key of `GRADIENT_MODULES`, a ``warp.tests`` module name, or a full
    dotted path), or None where the installed warp-lang predates it.

    Raises:
        SuiteModuleError: It should be there and no path to it imports.
    """
    entry = GRADIENT_MODULES.get(name, {})
    since = entry.get("since")
    if since is not None and _compat.WARP_VERSION < since:
        return None
    paths = entry.get("paths") or [name if name.startswith("warp.") else f"warp.tests.{name}"]
    errors = []
    for path in paths:
        try:
            return importlib.import_module(path)
        except ModuleNotFoundError as error:
            errors.append(f"{path}: {error}")
    raise SuiteModuleError(
        f"warp-suite: Warp's test module {name!r} does not import on warp-lang {_compat.WARP_VERSION_TEXT} "
        f"({'; '.join(errors)}). Add the path it has on this release to GRADIENT_MODULES in {__name__}."
    )


class ReportsByTest:
    """The Tape's reports (`Hazard` s, each distinct one once per test) of each test, by test id."""

    def __init__(self):
        self.current = ""
        self.reports: dict = {}

    def __call__(self, hazard) -> None:
        found = self.reports.setdefault(self.current, {})
        found.setdefault(hazard.key(), hazard)

    def result_class(self):
        collector = self

        class Result(unittest.TextTestResult):
            def startTest(self, test):
                collector.current = test.id()
                super().startTest(test)

        return Result

    def real(self, test_id: str) -> list:
        return [h for h in self.reports.get(test_id, {}).values() if h.real and not h.kind.startswith("not checked")]


def format_reports(collector: ReportsByTest, result: unittest.TestResult, tape: str) -> str:
    """The failures, then each test with real reports (passing tests first), one line per report."""
    failed = {test.id() for test, _ in result.failures + result.errors}
    lines = [
        f"warp-suite --tape {tape}: {result.testsRun} tests, {len(result.failures)} failures, {len(result.errors)} "
        f"errors, {len(result.skipped)} skipped"
    ]
    lines += [f"  FAILED {test_id}" for test_id in sorted(failed)]
    with_real = [t for t in collector.reports if collector.real(t)]
    passing = sorted(t for t in with_real if t not in failed)
    lines.append(
        f"real reports on {len(passing)} passing tests ({sum(len(collector.real(t)) for t in passing)} reports)"
        f" and {len(with_real) - len(passing)} failing tests:"
    )
    for test_id in passing + sorted(t for t in with_real if t in failed):
        lines.append(f"  {test_id}{' (failed)' if test_id in failed else ''}:")
        for h in collector.real(test_id):
            lines.append(f"    - {h.kind}{' (' + h.cause + ')' if h.cause else ''}: {_sites(h)}")
    return "\n".join(lines)


def _sites(hazard) -> str:
    """The kernels, arguments and lines a report names."""
    parts = []
    for role, site in (("by", hazard.writer), ("read by", hazard.reader), ("over", hazard.earlier)):
        if site is not None:
            argument = f" argument '{site.argument}'" if site.argument else ""
            parts.append(f"{role} kernel '{site.kernel}'{argument} (launch #{site.launch} at {site.location})")
    return "; ".join(parts)


def run(modules, zero_store, tape: str = "plain") -> int:
    """Load each module (`resolve`) into one suite and run it with ``config.zero_store`` set to ``zero_store`` and
    every ``wp.Tape()`` made the Tape ``tape`` names (`TAPES`); with a Tape of this package, print each test's real
    reports after the run."""
    config.zero_store = zero_store
    suite = unittest.TestSuite()
    for name in modules or DEFAULT_MODULES:
        module = resolve(name)
        if module is None:
            print(f"warp-suite: {name} is not in warp-lang {_compat.WARP_VERSION_TEXT} (added later), skipped")
            continue
        suite.addTests(unittest.defaultTestLoader.loadTestsFromModule(module))
    collector = ReportsByTest()
    with contextlib.ExitStack() as context:
        if TAPES[tape] is not None:
            context.enter_context(every_tape(**TAPES[tape]))
            context.enter_context(hazard_listener(collector))
            context.enter_context(warnings.catch_warnings())
            warnings.simplefilter("ignore", OverwriteWarning)  # listed per test after the run
        result = unittest.TextTestRunner(verbosity=1, resultclass=collector.result_class()).run(suite)
    if TAPES[tape] is not None:
        print(format_reports(collector, result, tape))
    return 0 if result.wasSuccessful() else 1
