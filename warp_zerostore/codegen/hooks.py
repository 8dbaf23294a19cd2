"""Where this package hooks into Warp, installed once at import through the hook points of `warp_zerostore._compat`
(the mode itself is resolved by `warp_zerostore.options.effective_zero_store`):

* ``ModuleHasher.hash_kernel`` (`hashing`): a flagged kernel's hash salted by its mode.
* ``ModuleBuilder.__init__``, ``build_kernel``, ``build_function`` and, on Warp without slot stores,
  ``Adjoint.add_builtin_call`` (`building`): the modes resolved once per build, and component stores given a
  reverse statement.
* ``ModuleBuilder.codegen`` and the ``codegen_*`` functions (`generation`): the header, the store-adjoint swap,
  helper variants and the replay log in a flagged module's source.
* ``Adjoint.resolve_external_reference``: the facade resolves to ``warp`` itself.
* ``Adjoint.resolve_func`` and ``Adjoint.eval`` (`backports`): a flagged module's call graph, and statements older
  Warp generates without their adjoint, generated as newer Warp does in flagged code.
* Warp's ``Tape.backward``: the replay's and the lints' warnings for the backward about to run
  (`adjoint_lints.warn_backward`).

A module without a flagged kernel goes through all of this untouched: same hash, same source.
"""

from __future__ import annotations

import sys

from .. import _compat
from . import backports, building, generation, hashing
from .adjoint_lints import warn_backward

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
# Replay and lint warnings where a backward runs: Warp's Tape.backward (the package's Tape calls it)


def _wrap_tape_backward(original):
    def backward(tape, *args, **kwargs):
        for kernel in _compat.tape_kernels(tape):
            warn_backward(kernel)
        return original(tape, *args, **kwargs)

    return backward


# ------------------------------------------------------------------------------------------------------------


def install() -> None:
    """Install the extension into Warp (idempotent)."""
    _compat.wrap("Adjoint.resolve_external_reference", _wrap_resolve_external_reference)
    _compat.wrap("ModuleHasher.hash_kernel", hashing.wrap_hash_kernel)
    _compat.wrap("ModuleBuilder.__init__", building.wrap_builder_init)
    _compat.wrap("ModuleBuilder.build_kernel", building.building_as(helper=False))
    _compat.wrap("ModuleBuilder.build_function", building.building_as(helper=True))
    _compat.wrap("ModuleBuilder.codegen", generation.wrap_builder_codegen)
    _compat.wrap("codegen.codegen_kernel", generation.wrap_codegen_kernel)
    _compat.wrap("codegen.codegen_func", generation.wrap_function_codegen)
    _compat.wrap("codegen.codegen_snippet", generation.wrap_function_codegen)
    _compat.wrap("Tape.backward", _wrap_tape_backward)
    _compat.wrap("Adjoint.resolve_func", backports.wrap_resolve_func)
    _compat.wrap("Adjoint.eval", backports.wrap_eval)
    if not _compat.HAS_SLOT_STORES:
        _compat.wrap("Adjoint.add_builtin_call", building.wrap_add_builtin_call)
