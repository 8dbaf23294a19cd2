"""The ``zero_store`` mode of a kernel: validation and resolution (kernel, then module, then process)."""

from __future__ import annotations

from . import _compat, config

OPTION = "zero_store"

#: Mode names used in generated-code variants and reports.
MODE_NAMES = {True: "zero", False: "accumulate", None: "stock"}


def validate(value, where: str):
    """Return ``value`` if it is a valid ``zero_store`` setting, else raise ``TypeError`` naming ``where``."""
    if value is None or type(value) is bool:
        return value
    raise TypeError(
        f"{where}: zero_store must be True (zero the overwritten gradient), False (accumulate, Warp <= 1.12 "
        f"semantics) or None (the installed Warp's own behaviour), got {value!r} of type {type(value).__name__}."
    )


def kernel_mode(kernel):
    """The kernel's own flag, or None when it has none."""
    value = _compat.kernel_options(kernel).get(OPTION)
    return validate(value, f"kernel '{_compat.kernel_key(kernel)}' ({_compat.kernel_source_location(kernel)})")


def module_mode(module):
    value = _compat.module_options(module).get(OPTION)
    return validate(value, f"module option of Warp module '{getattr(module, 'name', module)}'")


def effective_mode(kernel):
    """Resolve a kernel's mode: its own flag wins, then its module's option, then ``config.zero_store``.

    Example::

        import warp_zerostore as wp

        @wp.kernel(zero_store=True)
        def k(a: wp.array(dtype=float)):
            a[wp.tid()] = 1.0

        assert wp.effective_zero_store(k) is True
    """
    mode = kernel_mode(kernel)
    if mode is not None:
        return mode
    mode = module_mode(_compat.kernel_module(kernel))
    if mode is not None:
        return mode
    return validate(config.zero_store, "warp_zerostore.config.zero_store")
