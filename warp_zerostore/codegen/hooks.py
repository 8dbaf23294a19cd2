"""Hooks into Warp's hashing and code generation that carry each kernel's ``zero_store`` mode into C++.

Installed once, at import, through the hook points of `warp_zerostore._compat` (the mode itself is resolved
by `warp_zerostore.options.effective_mode`):

* ``ModuleHasher.hash_kernel``: a kernel whose effective mode is True or False gets a hash salted with
  the mode and the native header's digest, so flipping a flag (kernel, module or process) rebuilds.
* ``Adjoint.add_builtin_call`` (Warp without slot stores, <= 1.18): a component store into an array
  element (``a[i].x = v``, ``a[i][j, k] = v``) gets a reverse statement, which stock Warp omits.
* ``ModuleBuilder.codegen`` and the ``codegen_*`` functions: in a module with a flagged kernel, the
  native header is placed into the source, store adjoints are swapped per `store_rewrite`, and
  ``@wp.func`` helpers get one variant per mode when kernels of several modes share them.

A module without a flagged kernel goes through all of this untouched: same hash, same source.
"""

from __future__ import annotations

import hashlib
import logging
import pathlib
import sys
import threading
import warnings

from .. import _compat, lints
from ..options import effective_mode
from . import native, replay, replay_records, store_rewrite
from .pre_twin import replay_memory, warn_replay_issues

_log = logging.getLogger(__name__)

_UNSET = object()
_HELPER = object()  # build-state marker: building a @wp.func helper


class _State(threading.local):
    def __init__(self):
        self.build_mode = _UNSET  # mode of what is being built (a kernel's mode, or _HELPER)
        self.build_flagged = False  # the module being built holds a flagged kernel
        self.codegen = None  # _CodegenPlan while a flagged module generates its source


_state = _State()


# ------------------------------------------------------------------------------------------------------------
# Hashing


# What generates flagged code besides the header: a change to it must never reuse a cached binary.
_GENERATOR_DIGEST = hashlib.sha256(
    b"".join(pathlib.Path(m.__file__).read_bytes() for m in (store_rewrite, replay, sys.modules[__name__]))
).hexdigest()


def _salt(kernel_hash: bytes, mode: bool, memory: str = replay.POST) -> bytes:
    text = f"warp_zerostore:zero_store={mode}:header={native.header_digest()}:generator={_GENERATOR_DIGEST}"
    if memory == replay.PRE:
        text += ":replay=pre"
    return hashlib.sha256(kernel_hash + text.encode("utf-8")).digest()


def _wrap_hash_kernel(original):
    def hash_kernel(self, kernel, *args, **kwargs):
        kernel_hash = original(self, kernel, *args, **kwargs)
        # Stock kernels by unsalted hash: a flagged twin with the same source must not displace them.
        stock = _compat.hasher_scratch(self, "stock_kernels")
        mode = effective_mode(kernel)
        if mode is None:
            stock[kernel_hash] = kernel
            return kernel_hash
        memory = replay_memory(kernel)
        salted = _salt(kernel_hash, mode, memory)
        if mode is True:
            replay_records.remember_build(kernel, salted.hex())
            if memory == replay.POST:  # a PRE twin's build warns nothing its kernel's build has not
                _warn_adjoint_bugs(kernel, salted.hex())
        unique = _compat.hasher_unique_kernels(self)
        if unique.get(kernel_hash) is kernel:
            if kernel_hash in stock:
                unique[kernel_hash] = stock[kernel_hash]
            else:
                del unique[kernel_hash]
        unique[salted] = kernel
        return salted

    return hash_kernel


# ------------------------------------------------------------------------------------------------------------
# Building: which mode is being built, and component stores on Warp without slot stores


def _module_is_flagged(module) -> bool:
    return any(effective_mode(k) is not None for k in _compat.live_kernels(module))


def _wrap_builder_init(original):
    def __init__(self, module, *args, **kwargs):
        previous = (_state.build_mode, _state.build_flagged)
        _state.build_mode, _state.build_flagged = _UNSET, _module_is_flagged(module)
        try:
            original(self, module, *args, **kwargs)
        finally:
            _state.build_mode, _state.build_flagged = previous

    return __init__


def _building_as(mode):
    def wrap(original):
        def build(self, item, *args, **kwargs):
            previous = _state.build_mode
            _state.build_mode = effective_mode(item) if mode is None else mode
            try:
                return original(self, item, *args, **kwargs)
            finally:
                _state.build_mode = previous

        return build

    return wrap


def _component_rewrite_active() -> bool:
    mode = _state.build_mode
    if mode is _HELPER:
        return _state.build_flagged
    return mode is True or mode is False


def _wrap_add_builtin_call(original):
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
            f"wp::zs::adj_component_store({array_expr}, {_compat.var_adj_expr(array)}, "
            f"{_compat.var_adj_expr(value)}, {access}, {index_list});",
        )
        return out

    return add_builtin_call


# ------------------------------------------------------------------------------------------------------------
# The facade is warp: a kernel that names `warp_zerostore` (as `wp`) resolves it to `warp` itself


_FACADE = __name__.split(".")[0]


def _wrap_resolve_external_reference(original):
    """Warp's codegen compares the module a kernel's global resolves to with ``warp`` (``is warp``): on 1.17 that
    decides a kernel's launch dimension from ``i, j = wp.tid()``, elsewhere builtin lookups. The facade forwards
    every name to ``warp``, so resolving it to ``warp`` changes no reference, hash or generated line: it makes
    an unflagged kernel's C++ byte-identical to stock's on every version."""

    def resolve_external_reference(adj, name, *args, **kwargs):
        found = original(adj, name, *args, **kwargs)
        if found is not None and found is sys.modules.get(_FACADE):
            return _compat.warp_module()
        return found

    return resolve_external_reference


# ------------------------------------------------------------------------------------------------------------
# Code generation of a flagged module


class _CodegenPlan:
    """What a flagged module's code generation needs: each kernel's mode and the helpers to rename."""

    def __init__(self, builder, kernel_modes: dict):
        self.kernel_modes = kernel_modes  # id(kernel) -> mode
        used = set(kernel_modes.values())
        self.single_mode = next(iter(used)) if len(used) == 1 else _UNSET
        self.variant_modes = sorted(m for m in used if m is not None)
        self.helper_names = [_compat.function_native_name(f) for f in _compat.builder_functions(builder)]
        self.function_pieces: list[str] = []
        self.first_piece: str | None = None
        # The replay log (codegen/replay.py) serves zero_store=True kernels only.
        self.replay = replay.ModuleReplay() if True in used else None
        self.kernel_locations: dict = {}
        self.replay_kernels: dict = {}  # key -> kernel, the zero_store=True kernels generated

    def note(self, piece: str) -> None:
        if self.first_piece is None:
            self.first_piece = piece


def _wrap_function_codegen(original):
    def codegen_function(*args, **kwargs):
        text = original(*args, **kwargs)
        plan = _state.codegen
        if plan is None:
            return text
        if plan.replay is not None:
            text = plan.replay.helper_piece(text)
        if plan.single_mode is not _UNSET:
            text = store_rewrite.rewrite_for_mode(text, plan.single_mode)
        else:
            plan.function_pieces.append(text)
        plan.note(text)
        return text

    return codegen_function


def _wrap_codegen_kernel(original):
    def codegen_kernel(kernel, *args, **kwargs):
        text = original(kernel, *args, **kwargs)
        plan = _state.codegen
        if plan is None:
            return text
        mode = plan.kernel_modes[id(kernel)] if id(kernel) in plan.kernel_modes else effective_mode(kernel)
        if mode is True and plan.replay is not None:
            key = _compat.kernel_key(kernel)
            plan.kernel_locations[key] = _compat.kernel_source_location(kernel)
            plan.replay_kernels[key] = kernel
            text = plan.replay.kernel(text, key, replay_memory(kernel))
        mixed = plan.single_mode is _UNSET
        text = store_rewrite.rewrite_for_mode(text, mode, plan.helper_names, rename=mixed)
        plan.note(text)
        return text

    return codegen_kernel


def _wrap_builder_codegen(original):
    def codegen(self, device, *args, **kwargs):
        kernel_modes = {id(k): effective_mode(k) for k in _compat.builder_kernels(self)}
        if all(mode is None for mode in kernel_modes.values()):
            return original(self, device, *args, **kwargs)
        plan = _CodegenPlan(self, kernel_modes)

        prelude = native.module_prelude()
        previous = _state.codegen
        _state.codegen = plan
        try:
            source = original(self, device, *args, **kwargs)
        finally:
            _state.codegen = previous

        variants = ""
        if plan.function_pieces:
            for mode in plan.variant_modes:
                variants += "".join(
                    store_rewrite.rewrite_for_mode(piece, mode, plan.helper_names, rename=True)
                    for piece in plan.function_pieces
                )
            end = 0
            for piece in plan.function_pieces:
                end = source.index(piece, end) + len(piece)
            source = source[:end] + variants + source[end:]

        start = source.index(plan.first_piece) if plan.first_piece else len(source)
        if plan.replay is not None:
            for key, kernel in plan.replay_kernels.items():
                replay_records.record(kernel, key, plan.kernel_locations.get(key, "?:0"), plan.replay.reports[key])
        return source[:start] + prelude + source[start:]

    return codegen


# ------------------------------------------------------------------------------------------------------------
# Warp's own wrong adjoints (warp_zerostore.lints), warned at build time: they are wrong whatever memory the backward sees

_ADJOINT_WARNED: set = set()


def _warn_adjoint_bugs(kernel, build: str) -> None:
    """Warn, once per build and process, about constructs whose adjoint Warp itself gets wrong
    (`warp_zerostore.lints`): at each one's line, when the module is hashed to build or load it."""
    if build in _ADJOINT_WARNED or not _compat.kernel_has_backward(kernel):
        return  # once per build; and a kernel never differentiated has no wrong gradient to warn about
    _ADJOINT_WARNED.add(build)
    try:
        found = lints.find(_compat.kernel_tree(kernel))
    except (AttributeError, StopIteration, SyntaxError) as error:  # no source tree: nothing to look at
        _log.debug("kernel %s: no source tree to check for Warp's wrong adjoints (%s)", kernel, error)
        return
    location = _compat.kernel_source_location(kernel)
    filename, first = location.rsplit(":", 1)
    for f in found:
        line = int(first) + f.line - 1
        message = f.message(_compat.kernel_key(kernel), location)
        warnings.warn_explicit(lints.AdjointWarning(message), lints.AdjointWarning, filename, line)


# ------------------------------------------------------------------------------------------------------------
# Replay warnings where a backward runs: Warp's Tape.backward (the package's Tape calls it)


def _wrap_tape_backward(original):
    def backward(tape, *args, **kwargs):
        for kernel in _compat.tape_kernels(tape):
            warn_replay_issues(kernel)
        return original(tape, *args, **kwargs)

    return backward


# ------------------------------------------------------------------------------------------------------------


def install() -> None:
    """Install the extension into Warp (idempotent)."""
    _compat.wrap("Adjoint.resolve_external_reference", _wrap_resolve_external_reference)
    _compat.wrap("ModuleHasher.hash_kernel", _wrap_hash_kernel)
    _compat.wrap("ModuleBuilder.__init__", _wrap_builder_init)
    _compat.wrap("ModuleBuilder.build_kernel", _building_as(None))
    _compat.wrap("ModuleBuilder.build_function", _building_as(_HELPER))
    _compat.wrap("ModuleBuilder.codegen", _wrap_builder_codegen)
    _compat.wrap("codegen.codegen_kernel", _wrap_codegen_kernel)
    _compat.wrap("codegen.codegen_func", _wrap_function_codegen)
    _compat.wrap("codegen.codegen_snippet", _wrap_function_codegen)
    _compat.wrap("Tape.backward", _wrap_tape_backward)
    if not _compat.HAS_SLOT_STORES:
        _compat.wrap("Adjoint.add_builtin_call", _wrap_add_builtin_call)
