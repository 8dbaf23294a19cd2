"""Building a module that holds a flagged kernel: the mode of what is being built, resolved once per build, and
the reverse statement Warp <= 1.17 omits for a component store into an array element (``a[i].x = v``)."""

from __future__ import annotations

import threading

from .. import _compat
from ..options import effective_zero_store
from .store_rewrite import COMPONENT_STORE_ADJOINT

_HELPER = object()  # build-state marker: building a @wp.func helper
_UNSET = object()


class _State(threading.local):
    def __init__(self):
        self.build_mode = _UNSET  # mode of what is being built (a kernel's mode, or _HELPER)
        self.build_flagged = False  # the module being built holds a flagged kernel


_state = _State()


def modes(builder) -> dict:
    """``{id(kernel): mode}`` of the module a builder builds, resolved once, when the builder is made."""
    return _compat.builder_scratch(builder, "modes")


def wrap_builder_init(original):
    def __init__(self, module, *args, **kwargs):
        resolved = modes(self)  # Warp builds the module's kernels and helpers inside __init__
        resolved.update({id(k): effective_zero_store(k) for k in _compat.live_kernels(module)})
        previous = (_state.build_mode, _state.build_flagged)
        _state.build_mode = _UNSET
        _state.build_flagged = any(mode is not None for mode in resolved.values())
        try:
            original(self, module, *args, **kwargs)
        finally:
            _state.build_mode, _state.build_flagged = previous

    return __init__


def building_as(helper: bool):
    """Wrap ``build_kernel`` (``helper=False``: the kernel's mode) or ``build_function`` (a helper)."""

    def wrap(original):
        def build(self, item, *args, **kwargs):
            previous = _state.build_mode
            _compat.clear_adjoint_scratch(_compat.kernel_adjoint(item))  # what an earlier build found on it
            if helper:
                _state.build_mode = _HELPER
            else:
                resolved = modes(self)
                _state.build_mode = resolved[id(item)] if id(item) in resolved else effective_zero_store(item)
            try:
                return original(self, item, *args, **kwargs)
            finally:
                _state.build_mode = previous

        return build

    return wrap


def building_flagged_kernel() -> bool:
    """Whether the code being built is a ``zero_store=True`` kernel's own body (not a helper it calls)."""
    return _state.build_mode is True


def _component_rewrite_active() -> bool:
    mode = _state.build_mode
    if mode is _HELPER:
        return _state.build_flagged
    return mode is True or mode is False


def wrap_add_builtin_call(original):
    """Give component stores into array elements a reverse statement (stock Warp <= 1.18 emits none).

    Forward code stays Warp's own (``address`` -> ``indexref`` -> ``store``); the added reverse statement
    is ``wp::zs::adj_component_store``, a no-op until the store rewrite swaps it for the mode's adjoint.
    """

    def add_builtin_call(adj, func_name, args, *rest, **kwargs):
        if not _component_rewrite_active() or func_name not in ("address", "indexref", "store"):
            return original(adj, func_name, args, *rest, **kwargs)

        refs = _compat.adjoint_scratch(adj, "element_refs")
        if func_name == "address":
            out = original(adj, func_name, args, *rest, **kwargs)
            if len(args) >= 2 and _compat.is_plain_array_type(_compat.var_type(args[0])):
                refs[id(out)] = (out, args[0], tuple(args[1:]), ())
            return out

        if func_name == "indexref":
            out = original(adj, func_name, args, *rest, **kwargs)
            ref = refs.get(id(args[0]))
            if ref is not None and ref[0] is args[0]:
                refs[id(out)] = (out, ref[1], ref[2], ref[3] + (tuple(args[1:]),))
            return out

        ref = refs.get(id(args[0]))
        if ref is None or ref[0] is not args[0] or not ref[3]:
            return original(adj, func_name, args, *rest, **kwargs)
        target, value = args[0], args[1]
        # A value that is a reference (an array element, `yv[i].z = y[i]`) is loaded for the store, but its
        # adjoint is the reference's, as in Warp's own builtins (the load has none: `missing_grad`); the loaded
        # variable's adjoint would reach nothing (the element got no gradient on warp-lang <= 1.13).
        source = value
        if _compat.is_reference(value):
            value = original(adj, "load", [value])
        out = original(adj, func_name, [target, value], *rest, **kwargs)
        _, array, indices, levels = ref
        slot = "&_e"
        for level in levels:
            slot = f"wp::indexref({slot}, {', '.join(_compat.var_expr(c) for c in level)})"
        access = f"[&](auto& _e) -> auto& {{ return *{slot}; }}"
        index_list = ", ".join(_compat.var_expr(i) for i in indices)
        # an array reached through a struct field is a reference (a pointer to the array descriptor)
        array_expr = f"(*{_compat.var_expr(array)})" if _compat.is_reference(array) else _compat.var_expr(array)
        _compat.add_reverse(
            adj,
            f"{COMPONENT_STORE_ADJOINT}({array_expr}, {_compat.var_adj_expr(array)}, "
            f"{_compat.var_adj_expr(source)}, {access}, {index_list});",
        )
        return out

    return add_builtin_call


def building_flagged_module() -> bool:
    """Whether the module being built holds a kernel whose mode is True or False."""
    return _state.build_flagged
