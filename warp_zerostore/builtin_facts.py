"""What this package knows about Warp's kernel builtins: one table, read by every analysis.

Each row is one builtin as a kernel names it (``wp.atomic_add``), with the facts the package's analyses use:

* ``linear``: its adjoint reads no argument's value (a constructor, a cast, a sum, a selection, an
  accumulation). The adjoint lints (`warp_zerostore.lints`)
  count a local passed to any other call as a use whose adjoint reads its value.
* ``linear_args``: the positions in which it is linear on its own: no adjoint reads a value passed there (a tile
  FFT's tile, transformed in place; a transpose's tile; the tile a tile store writes). The other positions are
  read (an offset, say), unless ``linear`` or ``products`` says otherwise.
* ``products``: positions multiplied together (``tile_matmul``'s ``a`` and ``b``): linear in each separately, so
  a value passed at one is read by the adjoint of the others, unless each other one is a constant. A product of
  two loaded values is not linear.
* ``result_is_read``: its result is the values it reads from the array passed to it (a tile load): whether a
  backward reads them is decided by the uses of the result (`warp_zerostore.value_use`).
* ``adjoint_reads_result``: its adjoint reads the element as the launch left it, by design (``atomic_min``: which
  value won), so a write of that element by the launch's own calls of it is what its backward must read.
* ``array``: what it does to an array passed to it: ``"read"``, ``"store"`` (overwrites elements) or
  ``"accumulate"`` (adds into elements, reading none: its adjoint is exact whatever else the launch does).
  A builtin not in the table, given an array, may do anything with it (`warp_zerostore.access` counts the
  array as read and stored).
* ``replay``: for a builtin that writes an array element, whether a flagged kernel's replay log
  (`warp_zerostore.codegen.replay`) follows the write (``"followed"``: a later load in the thread sees it) or
  not (``"not followed"``: a later read of the array is reported); for a tile load, ``"not overlaid"`` (it reads
  memory, never the log). The C++ the replay recognises for these is in `warp_zerostore.codegen.replay`.

What differs between Warp versions is measured in `warp_zerostore._compat` (e.g. which augmented assignments
on an array element are atomics, `augmented_is_atomic`); this table states facts that hold on every supported
release.
"""

from __future__ import annotations

import ast
import dataclasses

from . import _compat


@dataclasses.dataclass(frozen=True)
class Builtin:
    """The facts about one builtin (see the module docstring for each field)."""

    name: str
    linear: bool = False
    array: str = ""  # "read" | "store" | "accumulate" | "" (takes no array, or may do anything with one)
    replay: str = ""  # "followed" | "not followed" | "not overlaid" | ""
    linear_args: tuple = ()
    products: tuple = ()
    result_is_read: bool = False
    adjoint_reads_result: bool = False


_CONSTRUCTORS = ("vec2", "vec3", "vec4", "vector", "mat22", "mat33", "mat44", "matrix", "quat", "transform")
_CASTS = ("vec2f", "vec3f", "vec4f", "vec2d", "vec3d", "vec4d", "float16", "float32", "float64", "float", "int")

TABLE: dict[str, Builtin] = {
    b.name: b
    for b in (
        *(Builtin(name, linear=True) for name in _CONSTRUCTORS + _CASTS),
        Builtin("copy", linear=True),
        Builtin("neg", linear=True),
        Builtin("add", linear=True),
        Builtin("sub", linear=True),
        Builtin("select", linear=True),
        Builtin("where", linear=True),
        # a loop's bound and a compile-time expression: no adjoint at all
        Builtin("range", linear=True),
        Builtin("static", linear=True),
        # element atomics: the replay log follows the thread's own view of the element (old value, update)
        Builtin("atomic_add", linear=True, array="accumulate", replay="followed"),
        Builtin("atomic_sub", linear=True, array="accumulate", replay="followed"),
        # their adjoints read the element (which value won): not accumulations; the array counts as read and stored
        Builtin("atomic_min", replay="followed", adjoint_reads_result=True),
        Builtin("atomic_max", replay="followed", adjoint_reads_result=True),
        Builtin("atomic_exch", replay="followed"),
        # integer bit operations and compare-and-swap: not differentiable; the log does not follow them
        Builtin("atomic_cas", replay="not followed"),
        Builtin("atomic_and", replay="not followed"),
        Builtin("atomic_or", replay="not followed"),
        Builtin("atomic_xor", replay="not followed"),
        # tiles: a tile load reads memory (never the log), tile writes are not followed
        Builtin("tile_load", array="read", replay="not overlaid", result_is_read=True),
        Builtin("tile_load_indexed", array="read", replay="not overlaid", result_is_read=True),
        Builtin("tile_store", array="store", replay="not followed", linear_args=(1,)),
        Builtin("tile_store_indexed", array="store", replay="not followed"),
        # linear maps of a tile: the FFTs transform their tile in place
        Builtin("tile_fft", linear_args=(0,)),
        Builtin("tile_ifft", linear_args=(0,)),
        Builtin("tile_transpose", linear_args=(0,)),
        # out = alpha * a @ b (+ beta * out): bilinear in a and b; alpha, beta and out (one position for two
        # overloads) are read
        Builtin("tile_matmul", products=(0, 1)),
        Builtin("tile_atomic_add", array="accumulate", replay="not followed"),
        Builtin("tile_atomic_add_indexed", array="accumulate", replay="not followed"),
        Builtin("len", array="read"),
    )
}

#: builtins whose adjoint reads no argument's value
LINEAR: frozenset = frozenset(name for name, b in TABLE.items() if b.linear)
#: builtins that only read an array passed to them
READING: frozenset = frozenset(name for name, b in TABLE.items() if b.array == "read")
#: builtins that only store into an array passed to them
STORING: frozenset = frozenset(name for name, b in TABLE.items() if b.array == "store")
#: builtins that only accumulate into an array passed to them
ACCUMULATING: frozenset = frozenset(name for name, b in TABLE.items() if b.array == "accumulate")
#: per builtin, the positions in which it is linear on its own (``linear_args``)
LINEAR_ARGS: dict = {name: frozenset(b.linear_args) for name, b in TABLE.items() if b.linear_args}
#: per builtin, the positions multiplied together (``products``)
PRODUCTS: dict = {name: tuple(b.products) for name, b in TABLE.items() if b.products}
#: builtins whose result is the values they read from an array (tile loads)
RESULT_IS_READ: frozenset = frozenset(name for name, b in TABLE.items() if b.result_is_read)
#: builtins whose adjoint reads the element as the launch left it (``adjoint_reads_result``)
ADJOINT_READS_RESULT: frozenset = frozenset(name for name, b in TABLE.items() if b.adjoint_reads_result)
#: element atomics whose write the replay log follows
REPLAY_FOLLOWED_ATOMICS: frozenset = frozenset(
    name for name, b in TABLE.items() if b.replay == "followed" and name.startswith("atomic_")
)


def call_name(call: ast.Call) -> str:
    """The name a call gives what it calls, as this table keys builtins: ``atomic_add`` for ``wp.atomic_add(...)``
    and ``atomic_add(...)``; "" for anything else (a call of a call, a subscript)."""
    func = call.func
    return func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", "")


def is_element_atomic(name: str) -> bool:
    """``wp.atomic_*(a, i, ..., v)``: a write of one element of ``a`` (the Tape's read twin marks it written)."""
    return name.startswith("atomic_")


def augmented_is_atomic(op) -> bool:
    """Whether Warp makes ``a[i] <op>= v`` (``op`` an ``ast.operator``) an atomic accumulation rather than a load,
    the operation and a store; it depends on the Warp version (`_compat.ATOMIC_AUGMENTED_OPS`)."""
    return _compat.is_atomic_augmented(op)


__all__ = [
    "ACCUMULATING",
    "ADJOINT_READS_RESULT",
    "Builtin",
    "LINEAR",
    "LINEAR_ARGS",
    "PRODUCTS",
    "READING",
    "RESULT_IS_READ",
    "REPLAY_FOLLOWED_ATOMICS",
    "STORING",
    "TABLE",
    "augmented_is_atomic",
    "call_name",
    "is_element_atomic",
]
