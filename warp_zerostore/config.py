"""Process-wide settings of warp_zerostore, and a pass-through to ``warp.config``.

``warp_zerostore.config.zero_store`` is the process default for every kernel the process builds (also
kernels defined with plain ``import warp``). ``warp_zerostore.config.check`` (``"off"``, ``"warn"``,
``"error"``) is the default ``check`` of :class:`warp_zerostore.Tape`. Any other attribute reads and writes ``warp.config``, so
``import warp_zerostore as wp; wp.config.verify_fp = True`` works as it does with Warp.
"""

from __future__ import annotations

import sys
import types

import warp

_OWN = {"zero_store": None, "check": "off"}


class _ConfigModule(types.ModuleType):
    def __getattr__(self, name):
        if name in _OWN:
            return _OWN[name]
        return getattr(warp.config, name)

    def __setattr__(self, name, value):
        if name == "check":  # the default of warp_zerostore.Tape(check=...)
            from .tape_safety import validate_check  # noqa: PLC0415

            _OWN[name] = validate_check(value, "warp_zerostore.config.check")
            return
        if name in _OWN:
            from . import modes, _compat  # noqa: PLC0415  (late: modes imports this module)

            modes.validate(value, f"warp_zerostore.config.{name}")
            if _OWN[name] is not value:
                _OWN[name] = value
                # The process default is part of every affected kernel's hash: force re-hashing.
                for module in _compat.all_modules():
                    _compat.mark_modified(module)
            return
        if name.startswith("__") or name in self.__dict__:
            super().__setattr__(name, value)
            return
        setattr(warp.config, name, value)

    def __dir__(self):
        return sorted(set(dir(warp.config)) | set(_OWN))


sys.modules[__name__].__class__ = _ConfigModule
