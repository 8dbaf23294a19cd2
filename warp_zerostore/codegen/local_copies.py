"""A ``zero_store=True`` kernel's locals assigned in place get Warp's own copy form, so every earlier use keeps
the value it used.

Warp keeps a local vector, quaternion, matrix, transform or struct in one C++ variable that a component or field
assignment mutates in place, and its backward pass replays the whole forward body before the reverse one: the
adjoint of every earlier use of the local then reads the final value (``v = ...; d = wp.dot(v, v); v[1] = 3.0``
gives ``dot``'s adjoint the new ``v``). In a flagged kernel's body, each such assignment instead makes a new
variable and binds the name to it from there on (a branch merges it as it merges any local), the form Warp itself
emits under its option ``enable_vector_component_overwrites``:

==============================================  ===============================  =====================================
statement on a local ``v`` / ``t`` / ``s``      Warp's                            a flagged kernel's
==============================================  ===============================  =====================================
``v[i] = e``, ``v.x = e``, ``m[i, j] = e``,     ``assign_inplace(v, i, e)``      ``v2 = assign_copy(v, i, e)``
``v[i] *= e`` (load, multiply, assign)
``v[i] += e``, ``v[i] -= e``                    ``add_inplace(v, i, e)``         ``v2 = copy(v); add_inplace(v2, i, e)``
``t.p = e``, ``t.q = e``                        ``transform_set_translation``    ``t2 = transformation(e, t.q)``
``s.a = e``, ``s.a += e``                       ``s.a = e``                      ``s2 = copy(s); s2.a = e``
==============================================  ===============================  =====================================

Each form's adjoint is Warp's own: ``assign_copy`` gives the overwritten component's adjoint to ``e`` and the others
to ``v``; a field store zeroes the field's adjoint after giving it to ``e``, and ``copy`` passes the rest to ``s``;
an in-place ``+=`` passes the component's adjoint on unchanged, which is right for a sum.

What is rewritten is decided here and is exact, not a guess: a statement of the kernel's own body (a ``@wp.func``
helper is shared with unflagged kernels and keeps Warp's code), outside a loop Warp does not unroll (a run-time
bound or a ``while``, whose carried locals are another matter: `warp_zerostore.lints.loop_carried`), on a name bound
to a value of one of the types above (a component of a struct's field, ``s.v.x = e``, a tile's element, and
deeper chains keep Warp's code). Each rewritten statement's source line is recorded (`exact_lines`), and the adjoint
lint warns about the component and field assignments after a whole use that were not rewritten
(`warp_zerostore.codegen.hashing`). An unflagged kernel's code is Warp's, byte for byte.
"""

from __future__ import annotations

import ast

from .. import _compat
from . import building

# Each rule emits, through Warp's ``add_builtin_call`` (``emit``), the new value of the local for one in-place statement.


def _assign_copy(emit, adj, args):
    return emit(adj, "assign_copy", args)


def _on_a_copy(name: str):
    """A sum passes the component's adjoint on unchanged: Warp's in-place statement on a copy is exact."""

    def rule(emit, adj, args):
        copied = emit(adj, "copy", [args[0]])
        emit(adj, name, [copied, *args[1:]])
        return copied

    return rule


def _new_translation(emit, adj, args):
    t, p = args
    return emit(adj, "transformation", [p, emit(adj, "transform_get_rotation", [t])])


def _new_rotation(emit, adj, args):
    t, q = args
    return emit(adj, "transformation", [emit(adj, "transform_get_translation", [t]), q])


#: Warp's in-place statement on a local's component -> the rule that makes the local's new value instead (Warp's
#: own ``transform_set_*_copy`` builtins cannot be used: their value type is left generic)
COPY_FORMS = {
    "assign_inplace": _assign_copy,
    "add_inplace": _on_a_copy("add_inplace"),
    "sub_inplace": _on_a_copy("sub_inplace"),
    "transform_set_translation": _new_translation,
    "transform_set_rotation": _new_rotation,
}


def exact_lines(adj) -> dict:
    """The source lines (as `lints` number them) of a function's in-place assignments of locals made copies
    (a dict used as an ordered set)."""
    return _compat.adjoint_scratch(adj, "exact_lines")


def _active(adj) -> bool:
    return building.building_flagged_kernel() and not _compat.in_dynamic_loop(adj)


def _bound_name(adj, var) -> str | None:
    """The name bound to ``var`` (a local's current value), or None (a temporary, a struct's member)."""
    for name, value in _compat.adjoint_symbols(adj).items():
        if value is var:
            return name
    return None


def wrap_add_builtin_call(original):
    """A component's in-place assignment in a flagged kernel's body, made a copy (`COPY_FORMS`)."""

    def add_builtin_call(adj, func_name, args, *rest, **kwargs):
        if func_name not in COPY_FORMS or not args or not _active(adj):
            return original(adj, func_name, args, *rest, **kwargs)
        target = args[0]
        name = _bound_name(adj, target)
        if (
            name is None
            or _compat.is_reference(target)
            or not _compat.is_component_value_type(_compat.var_type(target))
            or not all(_compat.is_int_var(i) for i in args[1:-1])
        ):
            return original(adj, func_name, args, *rest, **kwargs)
        try:
            out = COPY_FORMS[func_name](original, adj, list(args))
        except Exception:  # noqa: BLE001 - no overload for these types: Warp's own statement, not exact (so warned)
            return original(adj, func_name, args, *rest, **kwargs)
        _compat.adjoint_symbols(adj)[name] = out
        exact_lines(adj)[_compat.adjoint_line(adj)] = None
        return out

    return add_builtin_call


def _struct_field_target(node) -> ast.Attribute | None:
    """``s.a`` of ``s.a = e`` or ``s.a op= e`` (one attribute of a name), else None."""
    if isinstance(node, ast.Assign):
        target = node.targets[0] if len(node.targets) == 1 else None
    elif isinstance(node, ast.AugAssign):
        target = node.target
    else:
        return None
    if isinstance(target, ast.Attribute) and isinstance(target.value, ast.Name):
        return target
    return None


def _struct_local(adj, target: ast.Attribute):
    """The variable a struct local named by ``target.value`` holds, where ``target.attr`` is one of its fields."""
    var = _compat.adjoint_symbols(adj).get(target.value.id)
    if var is None or not hasattr(var, "type") or _compat.is_reference(var):
        return None
    struct = _compat.var_type(var)
    if not _compat.is_struct_type(struct) or _compat.struct_field_type(struct, target.attr) is None:
        return None
    return var


def wrap_eval(original):
    """A struct local's field assigned in a flagged kernel's body: the struct copied first and the name bound to the
    copy, then Warp's own field store into it (Warp >= 1.15); on earlier versions, whose field store has no
    adjoint, the store as Warp >= 1.15 generates it (`_compat.store_struct_field`). ``original`` is
    `backports.wrap_eval`'s (`hooks._wrap_eval`): what this leaves, a field store on those versions included, goes
    there."""

    def eval(adj, node):
        target = _struct_field_target(node)
        var = _struct_local(adj, target) if target is not None and _active(adj) else None
        if var is None:
            return original(adj, node)
        _compat.set_adjoint_line(adj, node)
        line = _compat.adjoint_line(adj)
        symbols = _compat.adjoint_symbols(adj)
        if _compat.STOCK_STRUCT_FIELD_STORES_DIFFERENTIABLE:
            symbols[target.value.id] = adj.add_builtin_call("copy", [var])
            exact_lines(adj)[line] = None
            return original(adj, node)
        if isinstance(node, ast.Assign):
            value = node.value
        else:  # s.a op= e: s.a op e, read before the store (Python evaluates the right side first too)
            read = ast.Attribute(value=ast.Name(id=target.value.id, ctx=ast.Load()), attr=target.attr, ctx=ast.Load())
            value = ast.copy_location(
                ast.BinOp(left=ast.copy_location(read, target), op=node.op, right=node.value), node
            )
        rhs = adj.eval(value)
        copied = adj.add_builtin_call("copy", [var])
        symbols[target.value.id] = copied
        _compat.store_struct_field(adj, copied, [target.attr], rhs)
        exact_lines(adj)[line] = None
        return None

    return eval
