"""A helper module of kernels imported afresh and loaded, with the `AdjointWarning` s its kernels get where their
backward first runs (`adjoint_lints.warn_backward`, what ``Tape.backward`` calls for every recorded kernel)."""

from __future__ import annotations

import importlib
import sys
import warnings

import warp_zerostore as wp
from warp_zerostore.codegen import adjoint_lints


def loaded(name: str, *, also=lambda module: ()) -> tuple:
    """``(module, AdjointWarnings)`` of ``tests.helpers.<name>``; ``also(module)`` names further Warp modules of
    it to load. Loading warns nothing (asserted): the warnings come where each kernel's backward first runs."""
    sys.modules.pop(f"tests.helpers.{name}", None)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        module = importlib.import_module(f"tests.helpers.{name}")
        for loadable in (module, *also(module)):
            wp.load_module(loadable, device="cpu")
        assert not [w for w in caught if issubclass(w.category, wp.AdjointWarning)]
        adjoint_lints.forget_warnings()
        for kernel in vars(module).values():
            if isinstance(kernel, wp.Kernel):
                adjoint_lints.warn_backward(kernel)
    return module, [w for w in caught if issubclass(w.category, wp.AdjointWarning)]
