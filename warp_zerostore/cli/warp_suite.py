"""Run Warp's own unittest modules with warp_zerostore imported (optionally with zero_store forced)."""

from __future__ import annotations

import importlib
import unittest

from .. import _compat, config

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


class SuiteModuleError(ImportError):
    """A module of the default list that this warp-lang should have and does not import."""


def add_parser(subparsers) -> None:
    suite = subparsers.add_parser("warp-suite", help="run Warp's own unittest modules with this package imported")
    suite.add_argument("modules", nargs="*", help="warp.tests modules (default: every module that touches gradients)")
    suite.add_argument(
        "--zero-store", choices=["none", "true", "false"], default="none", help="process default to force"
    )
    suite.set_defaults(handler=_command)


def _command(args, parser) -> int:
    return run(args.modules, {"none": None, "true": True, "false": False}[args.zero_store])


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


def run(modules, zero_store) -> int:
    """Load each module (`resolve`) into one suite and run it with ``config.zero_store`` set to ``zero_store``."""
    config.zero_store = zero_store
    suite = unittest.TestSuite()
    for name in modules or DEFAULT_MODULES:
        module = resolve(name)
        if module is None:
            print(f"warp-suite: {name} is not in warp-lang {_compat.WARP_VERSION_TEXT} (added later), skipped")
            continue
        suite.addTests(unittest.defaultTestLoader.loadTestsFromModule(module))
    result = unittest.TextTestRunner(verbosity=1).run(suite)
    return 0 if result.wasSuccessful() else 1
