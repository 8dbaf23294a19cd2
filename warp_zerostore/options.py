"""The ``zero_store`` flag: the decorator, the module option, and the one resolution of a kernel's mode.

Precedence, as Warp resolves its own options: the kernel's flag, then its module's option, then the process
default `warp_zerostore.config.zero_store`; `effective_zero_store` is the only place that applies it.
Whole-array copies (``wp.copy``, ``array.assign``) take `copy_zero_store`'s scoped value, else the process
default (`effective_copy_mode`).
"""

from __future__ import annotations

import contextlib
import threading
from typing import Callable

import warp

from . import _compat, config
from .config import ZeroStore, validate_zero_store

OPTION = "zero_store"

_UNSET = object()


class _State(threading.local):
    def __init__(self):
        self.pending_flag = _UNSET  # flag handed from kernel() to Kernel.__init__
        self.copy_scopes: list = []  # stack of copy_zero_store() values


_state = _State()


# ------------------------------------------------------------------------------------------------------------
# Setting the flag


def kernel(f: Callable | None = None, *, zero_store: ZeroStore = None, **kwargs):
    """Warp's ``@wp.kernel`` with a ``zero_store`` flag; every other keyword goes to ``warp.kernel``.

    ``zero_store=True``: each array store's adjoint reads the overwritten gradient element, then zeroes
    it. ``False``: it reads and keeps it (Warp <= 1.12 semantics, on every Warp). ``None`` (default): the
    module option ``zero_store``, else ``warp_zerostore.config.zero_store``, else the installed Warp's
    own behaviour.

    Args:
        f: The kernel function, when used as a bare ``@wp.kernel``; None when called with keywords.
        zero_store: ``True``, ``False`` or ``None`` (resolve from the module option, then the process default).
        **kwargs: Warp's own ``wp.kernel`` keywords (``enable_backward``, ``module``, ``launch_bounds``, ...).

    Returns:
        The ``wp.Kernel``, or, called with keywords only, a decorator that makes one.

    Raises:
        TypeError: ``zero_store`` is not True, False or None.
        ValueError: ``zero_store`` is set with ``enable_backward=False`` (no backward kernel is generated).

    Example:
        ```python
        import warp_zerostore as wp

        @wp.kernel(zero_store=True)
        def scale(x: wp.array(dtype=float), y: wp.array(dtype=float)):
            i = wp.tid()
            y[i] = 2.0 * x[i]
        ```
    """

    def decorate(func):
        code = getattr(func, "__code__", None)
        location = f" ({code.co_filename}:{code.co_firstlineno})" if code is not None else ""
        name = f"kernel '{getattr(func, '__qualname__', func)}'{location}"
        validate_zero_store(zero_store, name)
        if zero_store is not None and kwargs.get("enable_backward") is False:
            raise ValueError(
                f"{name}: zero_store={zero_store} has no effect with enable_backward=False, since no backward "
                "kernel is generated. Remove zero_store, or set enable_backward=True."
            )
        # Warp may hash the kernel inside its constructor (module="unique"): the flag must be there already.
        previous = _state.pending_flag
        _state.pending_flag = zero_store
        try:
            return warp.kernel(func, **kwargs)
        finally:
            _state.pending_flag = previous

    if f is None:
        return decorate
    return decorate(f)


def _wrap_kernel_init(original):
    def __init__(self, *args, **kwargs):
        original(self, *args, **kwargs)
        flag = _state.pending_flag
        if flag is not _UNSET and flag is not None:
            _compat.kernel_options(self)[OPTION] = flag

    return __init__


def install() -> None:
    """Let `kernel`'s flag reach the kernel before Warp hashes it (idempotent)."""
    _compat.wrap("Kernel.__init__", _wrap_kernel_init)


def set_module_options(options: dict, module=None) -> None:
    """Warp's ``set_module_options``, also taking ``{"zero_store": True | False | None}``.

    Args:
        options: Module options to set, Warp's and ``zero_store``.
        module: The Warp module (or its name); None: the caller's module.

    Returns:
        None, as Warp's ``set_module_options``.

    Raises:
        TypeError: ``options["zero_store"]`` is not True, False or None.

    Example:
        ```python
        import warp_zerostore as wp

        wp.set_module_options({"zero_store": True})  # every kernel of this module without its own flag
        ```
    """
    if OPTION in options:
        validate_zero_store(options[OPTION], f"set_module_options({{'{OPTION}': ...}})")
    if module is None:
        module = _compat.get_module(_compat.caller_module_name(1))
        _compat.module_options(module).update(options)
        _compat.mark_modified(module)
        return None
    return warp.set_module_options(options, module)


def get_module_options(module=None) -> dict:
    """Warp's ``get_module_options`` for the caller's module (``zero_store`` included when set).

    Args:
        module: The Warp module (or its name); None: the caller's module.

    Returns:
        The module's options, ``zero_store`` included when it was set.

    Example:
        ```python
        import warp_zerostore as wp

        wp.set_module_options({"zero_store": False})
        assert wp.get_module_options()["zero_store"] is False
        ```
    """
    if module is None:
        return _compat.module_options(_compat.get_module(_compat.caller_module_name(1)))
    return warp.get_module_options(module)


# ------------------------------------------------------------------------------------------------------------
# Resolving it


def effective_zero_store(kernel) -> ZeroStore:
    """The mode a kernel is built with: its own flag wins, then its module's option, then ``config.zero_store``.

    Kernel and module values are checked here too: Warp's own ``set_module_options`` does not validate them.
    The one place the mode is resolved: builds resolve it once per module build (`codegen.building`).

    Args:
        kernel: A ``wp.Kernel``.

    Returns:
        True (store adjoints zero), False (they accumulate) or None (the installed Warp's own behaviour).

    Raises:
        TypeError: The kernel's or module's ``zero_store`` option is not True, False or None.

    Example:
        ```python
        import warp_zerostore as wp

        @wp.kernel(zero_store=True)
        def k(a: wp.array(dtype=float)):
            a[wp.tid()] = 1.0

        assert wp.effective_zero_store(k) is True
        ```
    """
    mode = _compat.kernel_options(kernel).get(OPTION)
    if type(mode) is bool:  # valid: no message to build (the Tape asks at every launch)
        return mode
    if mode is not None:
        where = f"kernel '{_compat.kernel_key(kernel)}' ({_compat.kernel_source_location(kernel)})"
        return validate_zero_store(mode, where)
    module = _compat.kernel_module(kernel)
    mode = _compat.module_options(module).get(OPTION)
    if type(mode) is bool:
        return mode
    if mode is not None:
        return validate_zero_store(mode, f"module option of Warp module '{getattr(module, 'name', module)}'")
    return config.default_zero_store()


def store_adjoints_zero(kernel) -> bool:
    """Whether the kernel's store adjoints zero the gradient element they consume on a Tape: its mode is True,
    or unflagged on a Warp (>= 1.13) whose own store adjoint zeroes an array's ``.grad``. A kernel built with
    ``enable_backward=False`` has no adjoint on the Tape, so none of its stores zero anything."""
    if not _compat.kernel_has_backward(kernel):
        return False
    mode = effective_zero_store(kernel)
    return mode is True or (mode is None and _compat.STOCK_STORE_ZEROES)


@contextlib.contextmanager
def copy_zero_store(value: ZeroStore):
    """Within the block, ``wp.copy`` / ``array.assign`` recorded on a Tape use ``zero_store=value``.

    It overrides ``warp_zerostore.config.zero_store`` for whole-array stores only; kernels keep their own
    mode (kernel, module, process). The mode is taken when the copy is recorded, not at ``backward()``.

    Args:
        value: ``True`` (the copy's adjoint zeroes ``dest.grad``), ``False`` (it accumulates), ``None`` (Warp's
            own copy adjoint).

    Yields:
        Nothing; the mode holds within the ``with`` block.

    Raises:
        TypeError: ``value`` is not True, False or None.

    Example:
        ```python
        import warp_zerostore as wp

        src = wp.ones(4, dtype=float, requires_grad=True)
        dest = wp.zeros(4, dtype=float, requires_grad=True)
        with wp.Tape() as tape, wp.copy_zero_store(True):
            wp.copy(dest, src)
        tape.backward(grads={dest: wp.ones(4, dtype=float)})
        assert src.grad.numpy().tolist() == [1.0] * 4 and dest.grad.numpy().tolist() == [0.0] * 4
        ```
    """
    validate_zero_store(value, "copy_zero_store()")
    _state.copy_scopes.append(value)
    try:
        yield
    finally:
        _state.copy_scopes.pop()


def effective_copy_mode() -> ZeroStore:
    """The mode of a whole-array copy recorded now: the innermost `copy_zero_store`, else the process default."""
    if _state.copy_scopes:
        return _state.copy_scopes[-1]
    return config.zero_store
