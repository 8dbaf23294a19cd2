"""The ``warp-suite`` command's default list: every Warp test module that touches gradients, on every version."""

from __future__ import annotations

import pytest

from warp_zerostore import _compat
from warp_zerostore.cli import warp_suite


def test_every_module_of_the_default_list_imports_on_this_warp_or_is_later():
    skipped = []
    for name in warp_suite.DEFAULT_MODULES:
        module = warp_suite.resolve(name)
        if module is None:
            skipped.append(name)
            assert _compat.WARP_VERSION < warp_suite.GRADIENT_MODULES[name]["since"]
        else:
            assert module.__name__.startswith("warp.tests.")
    assert len(skipped) < len(warp_suite.DEFAULT_MODULES) // 4, skipped


def test_a_module_that_does_not_import_is_an_error_that_says_where_to_fix_it(monkeypatch):
    monkeypatch.setitem(warp_suite.GRADIENT_MODULES, "test_gone", {"paths": ["warp.tests.nowhere.test_gone"]})
    with pytest.raises(warp_suite.SuiteModuleError, match="test_gone.*GRADIENT_MODULES"):
        warp_suite.resolve("test_gone")
