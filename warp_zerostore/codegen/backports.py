"""Newer Warp's fixes to its own code generation, given to ``zero_store=True`` kernels on the Warp versions without
them, so that a flagged kernel means the same on every supported version (docs/known-issues.md, "flagged, through
the package").

What each older Warp gets wrong, and what a flagged kernel gets instead (each measured on every supported minor by
``scripts/probe_warp_versions.py``; the version facts are `warp_zerostore._compat`'s):

=================================================  ==========  ================================================
Warp's code                                        wrong on    a flagged kernel's (as the release that fixed it)
=================================================  ==========  ================================================
a ternary ``a if c else b`` whose side is an      <= 1.16     each side evaluated in its branch, an array
array element: the second side's value and                     element side copied (1.17)
gradient (<= 1.10), no gradient (1.11-1.16)
a value assigned to a field of a struct local     <= 1.14     the field stored in place, its adjoint passed
(``s.a = e``, ``s.b.a = e``, ``s.a += e``; in a                on to ``e`` (1.15)
kernel, or in a helper that returns the struct):
no adjoint
a ``@wp.func``'s adjoint in a module built with    <= 1.17     generated for the kernels that need it (1.18)
``enable_backward=False``, for a kernel that
opts back in
a helper first built for a forward-only kernel,    <= 1.15     the same (1.16 propagates to a fixpoint)
then called by a differentiable one: the helpers
it calls keep no adjoint (which kernel builds
first varies between processes)
``wp.tile_map(f, ...)`` of a builtin whose          <= 1.18     the element adjoint called with the result
adjoint takes its result (``tanh``, ``sqrt``,                  where it takes one (1.19): Warp's map macros
``cbrt``): does not build                                      defined again by the header
a ``@wp.func_grad`` called from another helper's    1.9         each such adjoint declared before the first
adjoint: does not build                                        function (1.10 emits them first)
=================================================  ==========  ================================================

A ``@wp.func`` helper is shared by the kernels of its module: a module whose kernels are all ``zero_store=True``
gets the fixed helper; in a module with kernels of other modes, the flagged kernels call a variant of the helper of
their own (`generation`), and the other kernels keep Warp's, bug included. A build error cannot be kept per kernel:
a module compiles whole, and a flagged kernel builds only if its module does, so the build fixes (declarations,
the header's map macros) hold for every kernel of a module that holds a flagged one (True or False, the modules
the header goes into); a module without one keeps Warp's error.
"""

from __future__ import annotations

import ast
import re
import threading

from .. import _compat
from . import building


class _State(threading.local):
    def __init__(self):
        self.helper = None  # id of the helper's Adjoint being built again for flagged kernels


_state = _State()

# ------------------------------------------------------------------------------------------------------------
# The call graph of a flagged module's build: which helpers a backward kernel reaches


def _calls(builder) -> dict:
    """``{id(adjoint): {id(function): function}}`` of the user functions each function of the build calls."""
    return _compat.builder_scratch(builder, "calls")


def wrap_resolve_func(original):
    """Record, while a flagged module builds, which ``@wp.func`` each call resolves to (its overload)."""

    def resolve_func(adj, *args, **kwargs):
        func = original(adj, *args, **kwargs)
        builder = _compat.adjoint_builder(adj)
        if builder is not None and building.building_flagged_module() and _compat.user_function(func) is not None:
            _calls(builder).setdefault(id(adj), {})[id(func)] = func
        return func

    return resolve_func


def backward_reach(builder, kernels) -> frozenset:
    """``id`` s of the ``Adjoint`` s of the helpers whose adjoint a backward of ``kernels`` (flagged kernels that have
    one) runs: every helper they call, directly or through other helpers; not those only a ``@wp.func_grad`` calls
    (a hand-written adjoint runs as forward code)."""
    calls = _calls(builder)
    seen: set = set()
    work = [_compat.adjoint_of(k) for k in kernels]
    while work:
        adj = work.pop()
        for func in calls.get(id(adj), {}).values():
            callee = _compat.adjoint_of(func)
            if id(callee) not in seen:
                seen.add(id(callee))
                work.append(callee)
    return frozenset(seen)


def needs_forced_adjoint() -> bool:
    """Whether this Warp may leave a helper that a backward kernel calls without its adjoint."""
    return _compat.HELPER_ADJOINT_FOLLOWS_MODULE_OPTION or not _compat.HELPER_BACKWARD_USE_PROPAGATED


def flagged_helper_text(original, args: tuple, kwargs: dict, text: str, reach: frozenset, builder) -> str:
    """The code of one generated helper (``text``: Warp's, from ``original(*args, **kwargs)``) that flagged kernels
    get, where a flagged backward reaches it: built again with this module's fixes (`fixes_code`) where its source
    needs one, and with its adjoint where this Warp left it out; else ``text`` itself."""
    if not args or not _compat.generates_function(original) or id(args[0]) not in reach:
        return text
    adj = args[0]
    forced = needs_forced_adjoint() and not _compat.is_custom_adjoint(adj)
    rebuilt = _needs_fixing(adj)
    if not forced and not rebuilt:
        return text

    def generate():
        return _compat.codegen_func_with_adjoint(original, args, kwargs) if forced else original(*args, **kwargs)

    if not rebuilt:
        fixed = generate()
    else:
        previous = _state.helper
        _state.helper = id(adj)
        try:
            _compat.rebuild(adj, builder)
            fixed = generate()
        finally:
            _state.helper = previous
            _compat.rebuild(adj, builder)  # Warp's own build again, for the code of other modes and devices
    return text if fixed == text else fixed


# ------------------------------------------------------------------------------------------------------------
# Statements older Warp generates without their adjoint: generated as the release that fixed them does


def fixes_code(adj) -> bool:
    """Whether the code being built is a flagged kernel's body, or a helper being built again for flagged kernels."""
    return building.building_flagged_kernel() or _state.helper == id(adj)


def _fixed(node) -> bool:
    """Whether this Warp generates ``node`` without (the right) adjoint, and flagged code gets a later Warp's: a ternary
    (<= 1.16), a field assigned on a local (<= 1.14; only a struct's is fixed, decided when generated)."""
    if isinstance(node, ast.IfExp):
        return _compat.TERNARY_WITHOUT_ADJOINT
    return not _compat.STOCK_STRUCT_FIELD_STORES_DIFFERENTIABLE and _compat.is_struct_field_store(node)


def _needs_fixing(adj) -> bool:
    """Whether a helper's source holds a statement this Warp generates without its adjoint (`_fixed`)."""
    tree = _compat.adjoint_source_tree(adj)
    return tree is not None and any(_fixed(node) for node in ast.walk(tree))


def wrap_eval(original):
    """A flagged kernel's (or helper variant's) statements that this Warp generates without their adjoint, generated as
    the release that fixed them does: a ternary ``a if c else b`` with an array-element side (<= 1.16; Warp 1.17's
    code, `_compat.emit_ternary_with_adjoint`), a value assigned to a struct local's field (<= 1.14; Warp 1.15's,
    `_compat.emit_struct_field_store_with_adjoint`)."""

    def eval(adj, node):
        if _fixed(node) and fixes_code(adj):
            if isinstance(node, ast.IfExp):
                return _compat.emit_ternary_with_adjoint(adj, node)
            if _compat.emit_struct_field_store_with_adjoint(adj, node):
                return None
        return original(adj, node)

    return eval


# ------------------------------------------------------------------------------------------------------------
# Build errors: custom adjoints used before declared (tile maps: the header, native/warp_zerostore.h)

# the first function's head in a generated piece: `static ... name(...)` (a template line before it), up to `{`
_FUNCTION_HEAD = re.compile(r"^((?:template\s*<[^>]*>\s*)?static\b[^;{}]*?\))\s*\{", re.MULTILINE | re.DOTALL)


def custom_adjoint_declaration(adj, text: str) -> str:
    """A declaration of the hand-written adjoint ``text`` defines (``adj`` generates a ``@wp.func_grad``), for a Warp
    that may call it before its definition (`_compat.CUSTOM_ADJOINTS_FIRST`); else ""."""
    if _compat.CUSTOM_ADJOINTS_FIRST or not _compat.is_custom_adjoint(adj):
        return ""
    head = _FUNCTION_HEAD.search(text)
    return f"{head.group(1)};\n" if head else ""
