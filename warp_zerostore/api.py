"""What warp_zerostore adds to (or overrides in) Warp's public API."""

from __future__ import annotations


import warp

from . import _compat, codegen_ext, modes


def kernel(f=None, *, zero_store=None, **kwargs):
    """Warp's ``@wp.kernel`` with a ``zero_store`` flag; every other keyword goes to ``warp.kernel``.

    ``zero_store=True``: each array store's adjoint reads the overwritten gradient element, then zeroes
    it. ``False``: it reads and keeps it (Warp <= 1.12 semantics, on every Warp). ``None`` (default): the
    module option ``zero_store``, else ``warp_zerostore.config.zero_store``, else the installed Warp's
    own behaviour.

    Example::

        import warp_zerostore as wp

        @wp.kernel(zero_store=True)
        def scale(x: wp.array(dtype=float), y: wp.array(dtype=float)):
            i = wp.tid()
            y[i] = 2.0 * x[i]
    """
    def decorate(func):
        code = getattr(func, "__code__", None)
        location = f" ({code.co_filename}:{code.co_firstlineno})" if code is not None else ""
        name = f"kernel '{getattr(func, '__qualname__', func)}'{location}"
        modes.validate(zero_store, name)
        if zero_store is not None and kwargs.get("enable_backward") is False:
            raise ValueError(
                f"{name}: zero_store={zero_store} has no effect with enable_backward=False, since no backward "
                "kernel is generated. Remove zero_store, or set enable_backward=True."
            )
        with codegen_ext.pending_kernel_flag(zero_store):
            return warp.kernel(func, **kwargs)

    if f is None:
        return decorate
    return decorate(f)


def set_module_options(options: dict, module=None):
    """Warp's ``set_module_options``, also taking ``{"zero_store": True | False | None}``.

    Example::

        import warp_zerostore as wp

        wp.set_module_options({"zero_store": True})  # every kernel of this module without its own flag
    """
    if modes.OPTION in options:
        modes.validate(options[modes.OPTION], f"set_module_options({{'{modes.OPTION}': ...}})")
    if module is None:
        module = _compat.get_module(_compat.caller_module_name(1))
        _compat.module_options(module).update(options)
        _compat.mark_modified(module)
        return None
    return warp.set_module_options(options, module)


def get_module_options(module=None) -> dict:
    """Warp's ``get_module_options`` for the caller's module (``zero_store`` included when set)."""
    if module is None:
        return _compat.module_options(_compat.get_module(_compat.caller_module_name(1)))
    return warp.get_module_options(module)


def effective_zero_store(k):
    """The mode a kernel is built with: True, False or None (the installed Warp's own behaviour).

    Example::

        import warp_zerostore as wp

        @wp.kernel
        def k(a: wp.array(dtype=float)):
            a[wp.tid()] = 1.0

        assert wp.effective_zero_store(k) is None
    """
    return modes.effective_mode(k)


