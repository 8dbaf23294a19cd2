"""Process-wide settings (``zero_store``, ``check``), their validators, and a pass-through to ``warp.config``.

``warp_zerostore.config.zero_store`` is the process default for every kernel the process builds (also
kernels defined with plain ``import warp``). ``warp_zerostore.config.check`` (``"off"``, ``"warn"``,
``"error"``) is the default ``check`` of `warp_zerostore.Tape`, and ``warp_zerostore.config.measure`` (False) its
default ``measure`` (a Tape with checks and without snapshots measures each hazard's effect at ``backward()``; the
``check --measure`` command sets it). ``warp_zerostore.config.progress``
(None: when stderr is a terminal; True; False) shows or hides progress bars on long work. Any other attribute reads and writes
``warp.config``, so ``import warp_zerostore as wp; wp.config.verify_fp = True`` works as it does with Warp.

This module sits at the bottom of the package: it imports only the Warp boundary (`_compat`).
"""

from __future__ import annotations

import sys
import types
from typing import Literal, Optional

import warp

from . import _compat

ZeroStore = Optional[bool]
CheckLevel = Literal["off", "warn", "error"]
CHECK_LEVELS: tuple[CheckLevel, ...] = ("off", "warn", "error")


def validate_zero_store(value, where: str) -> ZeroStore:
    """Return ``value`` if it is a valid ``zero_store`` setting, else raise ``TypeError`` naming ``where``.

    Args:
        value: The setting to check.
        where: What set it, for the message (``"kernel 'k' (file:line)"``).

    Returns:
        ``value``: True, False or None.

    Raises:
        TypeError: Anything else (``1``, ``"true"``).
    """
    if value is None or type(value) is bool:
        return value
    raise TypeError(
        f"{where}: zero_store must be True (zero the overwritten gradient), False (accumulate, Warp <= 1.12 "
        f"semantics) or None (the installed Warp's own behaviour), got {value!r} of type {type(value).__name__}."
    )


def validate_check(value, where: str) -> CheckLevel:
    """Return ``value`` if it is a ``check`` level, else raise ``ValueError`` naming ``where``.

    Args:
        value: The level to check.
        where: What set it, for the message (``"Tape(check=...)"``).

    Returns:
        ``value``: ``"off"``, ``"warn"`` or ``"error"``.

    Raises:
        ValueError: Anything else.
    """
    if value not in CHECK_LEVELS:
        raise ValueError(f"{where} must be one of 'off', 'warn', 'error', got {value!r}")
    return value


def validate_measure(value, where: str) -> bool:
    """Return ``value`` if it is a ``measure`` setting (True or False), else raise ``TypeError`` naming ``where``."""
    if type(value) is bool:
        return value
    raise TypeError(f"{where} must be True or False, got {value!r}")


def validate_progress(value, where: str) -> Optional[bool]:
    """Return ``value`` if it is a ``progress`` setting (None: bars when stderr is a terminal), else raise."""
    if value is None or type(value) is bool:
        return value
    raise TypeError(f"{where} must be True, False or None (bars when stderr is a terminal), got {value!r}")


def _rehash_all_modules() -> None:
    # The process default is part of every affected kernel's hash: force re-hashing.
    for module in _compat.all_modules():
        _compat.mark_modified(module)


#: name -> (validator, what to do after a change)
_SETTINGS = {
    "zero_store": (validate_zero_store, _rehash_all_modules),
    "check": (validate_check, None),
    "measure": (validate_measure, None),
    "progress": (validate_progress, None),
}
_values: dict = {"zero_store": None, "check": "off", "measure": False, "progress": None}


def default_zero_store() -> ZeroStore:
    """``config.zero_store``, read without the module's attribute fallback (asked at every checked launch)."""
    return _values["zero_store"]


class _ConfigModule(types.ModuleType):
    def __getattr__(self, name):
        if name in _values:
            return _values[name]
        return getattr(warp.config, name)

    def __setattr__(self, name, value):
        if name in _SETTINGS:
            validate, on_change = _SETTINGS[name]
            validate(value, f"warp_zerostore.config.{name}")
            if _values[name] is not value:
                _values[name] = value
                if on_change is not None:
                    on_change()
            return
        if name.startswith("__") or name in self.__dict__:
            super().__setattr__(name, value)
            return
        setattr(warp.config, name, value)

    def __dir__(self):
        return sorted(set(dir(warp.config)) | set(_values))


sys.modules[__name__].__class__ = _ConfigModule
