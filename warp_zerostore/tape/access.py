"""Which array arguments a kernel reads, stores into, or accumulates into: read from its Python source.

The Tape's safety checks need, per launch, the arrays whose values the backward pass re-reads (reads) and
the kind of each write (a plain store, whose adjoint may need zeroing, or an atomic accumulation, whose
adjoint is exact). Warp's own ``is_read``/``is_write`` marks exist only when the module was built with
``verify_autograd_array_access``; this reads the kernel's AST instead, and is conservative: an array
argument passed to a function, or bound to another name, counts as read and stored.

Granularity is the whole argument: "reads ``x``" means some element of ``x`` (not which ones).
"""

from __future__ import annotations

import ast
import dataclasses

from .. import _compat

# Builtins that take an array and only accumulate into it (their adjoint reads no array value).
_ACCUMULATING = {"atomic_add", "atomic_sub", "tile_atomic_add"}
# Builtins that take an array and only read it.
_READING = {"tile_load", "len", "tile_load_indexed"}
# Builtins that take an array and only store into it.
_STORING = {"tile_store", "tile_store_indexed"}
# Array attributes that carry no element values.
_METADATA = {"shape", "ndim", "strides", "size", "dtype", "ptr"}


@dataclasses.dataclass
class ArgumentAccess:
    """How a kernel uses one array argument."""

    reads: bool = False
    stores: bool = False
    accumulates: bool = False

    @property
    def writes(self) -> bool:
        return self.stores or self.accumulates


class _Visitor(ast.NodeVisitor):
    def __init__(self, names):
        self.access = {name: ArgumentAccess() for name in names}
        self.parents: dict = {}

    def generic_visit(self, node):
        for child in ast.iter_child_nodes(node):
            self.parents[child] = node
        super().generic_visit(node)

    def visit_Name(self, node):  # noqa: N802 - ast API
        access = self.access.get(node.id)
        if access is None:
            return
        parent = self.parents.get(node)
        if isinstance(parent, ast.Subscript) and parent.value is node:
            self._element(parent, access)
        elif isinstance(parent, ast.Attribute) and parent.attr in _METADATA:
            pass
        elif isinstance(parent, ast.Call) and node in parent.args:
            name = parent.func.attr if isinstance(parent.func, ast.Attribute) else getattr(parent.func, "id", "")
            if name in _ACCUMULATING:
                access.accumulates = True
            elif name in _READING:
                access.reads = True
            elif name in _STORING:
                access.stores = True
            else:  # a @wp.func or another builtin: it may do anything with the array
                access.reads = access.stores = True
        elif isinstance(node.ctx, ast.Load) and isinstance(parent, (ast.Return, ast.Expr)):
            pass
        else:  # bound to a local, compared, ...: conservative
            access.reads = access.stores = True

    def _element(self, subscript, access):
        # Climb a[i] -> a[i][j] -> a[i].x: the outermost node says whether the element is stored.
        outer = subscript
        while isinstance(self.parents.get(outer), (ast.Subscript, ast.Attribute)) and self.parents[outer].value is outer:
            outer = self.parents[outer]
        if isinstance(outer.ctx, ast.Store):
            if isinstance(self.parents.get(outer), ast.AugAssign):
                access.accumulates = True  # Warp turns `a[i] += v` into an atomic add
            else:
                access.stores = True
        else:
            access.reads = True


_CACHE: dict = {}


def argument_access(kernel) -> dict:
    """``{argument label: ArgumentAccess}`` for the kernel's array arguments.

    Example::

        import warp_zerostore as wp
        from warp_zerostore.tape.access import argument_access

        @wp.kernel
        def step(x: wp.array(dtype=float), v: wp.array(dtype=float), loss: wp.array(dtype=float)):
            i = wp.tid()
            x[i] = x[i] + v[i]
            wp.atomic_add(loss, 0, x[i])

        access = argument_access(step)
        assert access["x"].reads and access["x"].stores and not access["v"].writes
        assert access["loss"].accumulates and not access["loss"].reads
    """
    cached = _CACHE.get(id(kernel))
    if cached is not None and cached[0] is kernel:
        return cached[1]
    names = [label for label, t in _compat.kernel_parameters(kernel) if _compat.is_array_type(t)]
    visitor = _Visitor(names)
    visitor.visit(_compat.kernel_tree(kernel))
    _CACHE[id(kernel)] = (kernel, visitor.access)
    return visitor.access
