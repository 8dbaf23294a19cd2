"""Run Warp's own unittest modules with warp_zerostore imported (optionally with zero_store forced)."""

from __future__ import annotations

import importlib
import unittest

from . import config

DEFAULT_MODULES = ["test_tape", "test_grad", "test_array", "test_struct", "test_func", "test_vec", "test_mat"]


def run(modules, zero_store) -> int:
    config.zero_store = zero_store
    names = modules or DEFAULT_MODULES
    suite = unittest.TestSuite()
    for name in names:
        full = name if name.startswith("warp.") else f"warp.tests.{name}"
        suite.addTests(unittest.defaultTestLoader.loadTestsFromModule(importlib.import_module(full)))
    result = unittest.TextTestRunner(verbosity=1).run(suite)
    return 0 if result.wasSuccessful() else 1
