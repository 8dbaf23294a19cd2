"""Where this package hooks into Warp, installed once at import through the hook points of `warp_zerostore._compat`
(the mode itself is resolved by `warp_zerostore.options.effective_zero_store`):

* ``ModuleHasher.hash_kernel`` (`hashing`): a flagged kernel's hash salted by its mode.
* ``ModuleBuilder.__init__``, ``build_kernel``, ``build_function`` and, on Warp without slot stores,
  ``Adjoint.add_builtin_call`` (`building`): the modes resolved once per build, and component stores given a
  reverse statement.
* ``Adjoint.add_builtin_call`` and ``Adjoint.eval`` (`local_copies`, deciding first): a flagged kernel's locals
  assigned in place get Warp's copy form.
* ``ModuleBuilder.codegen`` and the ``codegen_*`` functions (`generation`): the header, the store-adjoint swap,
  helper variants and the replay log in a flagged module's source.
* ``Adjoint.resolve_external_reference``: the facade resolves to ``warp`` itself.
* ``Adjoint.resolve_func`` and ``Adjoint.eval`` (`backports`): a flagged module's call graph, and statements older
  Warp generates without their adjoint, generated as newer Warp does in flagged code (what `local_copies` leaves).
* Warp's ``Tape.backward``: the replay's and the lints' warnings for the backward about to run
  (`adjoint_lints.warn_backward`).

A module without a flagged kernel goes through all of this untouched: same hash, same source.
"""

from __future__ import annotations

import sys

from .. import _compat
from . import backports, building, generation, hashing, local_copies
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
# Builtin calls: a flagged kernel's local components made copies; on Warp <= 1.17, component stores into array
# elements given a reverse statement


def _wrap_add_builtin_call(original):
    wrapped = local_copies.wrap_add_builtin_call(original)
    if not _compat.HAS_SLOT_STORES:
        wrapped = building.wrap_add_builtin_call(wrapped)
    return wrapped


# ------------------------------------------------------------------------------------------------------------
# Statements: local_copies decides first, backports gets what it leaves


def _wrap_eval(original):
    """A statement of flagged code goes to `local_copies` first: in a flagged kernel's body, a struct local's field
    assigned (``s.a = e``, ``s.a op= e``) is copied, then stored (as Warp >= 1.15 stores it, on every version). What
    it leaves goes to `backports`: on Warp <= 1.14, a field store it does not reach (a chain ``s.b.a = e``, a store
    in a run-time loop, a helper built again for flagged kernels) stored in place as Warp 1.15 does; on <= 1.16, a
    ternary. Each statement is generated once, by the first that takes it."""
    return local_copies.wrap_eval(backports.wrap_eval(original))


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
    _compat.wrap("Adjoint.add_builtin_call", _wrap_add_builtin_call)
    _compat.wrap("Adjoint.eval", _wrap_eval)
