"""``warp_zerostore.X`` is ``warp.X`` for Warp's submodules (``wp.autograd``, ``import warp_zerostore.sim``)."""

from __future__ import annotations

import importlib
import importlib.abc
import importlib.machinery
import importlib.util
import sys

PREFIX = "warp_zerostore."


def warp_submodule(name: str):
    """Import ``warp.<name>`` if Warp has such a submodule; else return None."""
    try:
        if importlib.util.find_spec(f"warp.{name}") is None:
            return None
    except (ImportError, ValueError):
        return None
    return importlib.import_module(f"warp.{name}")


class _AliasLoader(importlib.abc.Loader):
    def __init__(self, target: str):
        self.target = target

    def create_module(self, spec):
        return importlib.import_module(self.target)

    def exec_module(self, module):
        pass


class WarpSubmoduleFinder(importlib.abc.MetaPathFinder):
    """Resolves ``import warp_zerostore.<sub>`` to Warp's own module object when this package has none."""

    def find_spec(self, fullname, path=None, target=None):
        if not fullname.startswith(PREFIX):
            return None
        rest = fullname[len(PREFIX) :]
        own = importlib.machinery.PathFinder.find_spec(fullname, path)
        if own is not None:
            return None
        target_name = f"warp.{rest}"
        try:
            if importlib.util.find_spec(target_name) is None:
                return None
        except (ImportError, ValueError):
            return None
        return importlib.machinery.ModuleSpec(fullname, _AliasLoader(target_name))


def install() -> None:
    if not any(isinstance(f, WarpSubmoduleFinder) for f in sys.meta_path):
        sys.meta_path.append(WarpSubmoduleFinder())
