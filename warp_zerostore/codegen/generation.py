"""Code generation of a flagged module: the native header placed before the first generated function, store
adjoints swapped per `store_rewrite`, ``@wp.func`` helpers given one variant per mode when kernels of several modes
share them, and the replay log (`replay`) for ``zero_store=True`` kernels, whose reports `replay_records` keeps."""

from __future__ import annotations

import threading

from .. import _compat
from ..options import effective_zero_store
from . import backports, building, local_copies, native, replay, replay_records, store_rewrite
from .pre_twin import replay_memory

_UNSET = object()


class _State(threading.local):
    def __init__(self):
        self.codegen = None  # _CodegenPlan while a flagged module generates its source


_state = _State()


class _CodegenPlan:
    """What a flagged module's code generation needs: each kernel's mode and the helpers to rename."""

    def __init__(self, builder, kernel_modes: dict):
        self.builder = builder
        self.kernel_modes = kernel_modes  # id(kernel) -> mode
        used = set(kernel_modes.values())
        self.single_mode = next(iter(used)) if len(used) == 1 else _UNSET
        self.variant_modes = sorted(m for m in used if m is not None)
        self.helper_names = [_compat.function_native_name(f) for f in _compat.builder_functions(builder)]
        # (Warp's piece, the flagged kernels' piece) of each generated helper, where kernels of several modes share it
        self.function_pieces: list[tuple[str, str]] = []
        # helpers a flagged backward reaches (Warp <= 1.17 may leave their adjoint out: `backports`)
        flagged = [k for k in _compat.builder_kernels(builder) if kernel_modes.get(id(k)) is True]
        self.backward_reach = backports.backward_reach(builder, flagged) if flagged else frozenset()
        self.declarations: list[str] = []  # of hand-written adjoints, where this Warp may call one before it
        self.first_piece: str | None = None
        # The replay log (codegen/replay.py) serves zero_store=True kernels only.
        self.replay = replay.ModuleReplay() if True in used else None
        self.kernel_locations: dict = {}
        self.replay_kernels: dict = {}  # key -> kernel, the zero_store=True kernels generated

    def note(self, piece: str) -> None:
        if self.first_piece is None:
            self.first_piece = piece


def wrap_function_codegen(original):
    def codegen_function(*args, **kwargs):
        text = original(*args, **kwargs)
        plan = _state.codegen
        if plan is None:
            return text
        fixed = backports.flagged_helper_text(original, args, kwargs, text, plan.backward_reach, plan.builder)
        if args and (declaration := backports.custom_adjoint_declaration(args[0], text)):
            plan.declarations.append(declaration)
        if plan.replay is not None:
            stock = plan.replay.helper_piece(text)
            fixed = stock if fixed is text else plan.replay.helper_piece(fixed)
        else:
            stock = text
        if plan.single_mode is not _UNSET:
            text = store_rewrite.rewrite_for_mode(fixed if plan.single_mode is True else stock, plan.single_mode)
        else:
            plan.function_pieces.append((stock, fixed))
            text = stock
        plan.note(text)
        return text

    return codegen_function


def wrap_codegen_kernel(original):
    def codegen_kernel(kernel, *args, **kwargs):
        text = original(kernel, *args, **kwargs)
        plan = _state.codegen
        if plan is None:
            return text
        mode = plan.kernel_modes[id(kernel)] if id(kernel) in plan.kernel_modes else effective_zero_store(kernel)
        if mode is True and plan.replay is not None:
            key = _compat.kernel_key(kernel)
            plan.kernel_locations[key] = _compat.kernel_source_location(kernel)
            plan.replay_kernels[key] = kernel
            text = plan.replay.kernel(text, key, replay_memory(kernel))
        text = store_rewrite.rewrite_for_mode(text, mode, plan.helper_names, rename=plan.single_mode is _UNSET)
        plan.note(text)
        return text

    return codegen_kernel


def wrap_builder_codegen(original):
    def codegen(self, device, *args, **kwargs):
        resolved = building.modes(self)
        kernel_modes = {
            id(k): resolved[id(k)] if id(k) in resolved else effective_zero_store(k)
            for k in _compat.builder_kernels(self)
        }
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
                    store_rewrite.rewrite_for_mode(
                        fixed if mode is True else stock, mode, plan.helper_names, rename=True
                    )
                    for stock, fixed in plan.function_pieces
                )
            end = 0
            for stock, _ in plan.function_pieces:
                end = source.index(stock, end) + len(stock)
            source = source[:end] + variants + source[end:]

        start = source.index(plan.first_piece) if plan.first_piece else len(source)
        if plan.declarations:  # each under its own name and, where kernels of several modes share it, each variant's
            prelude += "".join(plan.declarations)
            if plan.single_mode is _UNSET:
                prelude += "".join(
                    store_rewrite.rename_helpers(d, plan.helper_names, mode)
                    for mode in plan.variant_modes
                    for d in plan.declarations
                )
        if plan.replay is not None:
            for key, kernel in plan.replay_kernels.items():
                location = plan.kernel_locations.get(key, "?:0")
                exact = local_copies.exact_lines(_compat.kernel_adjoint(kernel))
                replay_records.record(kernel, key, location, plan.replay.reports[key], exact)
        return source[:start] + prelude + source[start:]

    return codegen
