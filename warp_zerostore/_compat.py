"""The Warp boundary: every import of Warp's private modules and every private attribute this package reads or writes.

Nothing else in warp_zerostore imports Warp internals (an import-linter contract in pyproject.toml checks it).
Sections follow Warp's own concepts: versions and features, hook points, kernels and modules, module building
and hashing, code generation, types, structs, arrays, the Tape and launches, whole-array copies. Type queries
live here too: which of them ``warp.types`` exports publicly differs between versions. The version differences
this package depends on, over the eleven supported minors (1.9.1, 1.10.1, 1.11.1, 1.12.1, 1.13.0, 1.14.0,
1.15.0, 1.16.0, 1.17.0, 1.18.0, 1.19.0). The stock behaviours were measured on each release with
``scripts/probe_warp_versions.py`` (``make probe-versions``); the code tests features, not version numbers,
wherever Warp offers one:

===================================  =========================================================================
what                                 where it changed
===================================  =========================================================================
internals                            1.9: ``warp.codegen``, ``warp.context``; 1.10+: ``warp._src.*``
``ModuleHasher.hash_kernel``         ``(kernel)``; 1.19: ``(kernel, grid_stride)``
augmented ``a[i] op= v`` atomics     ``+=``, ``-=``; the bitwise ones from 1.10 (``ATOMIC_AUGMENTED_OPS``)
a constant loop with ``continue``    dynamic up to 1.12; unrolled from 1.13 (``UNROLLS_LOOPS_WITH_CONTINUE``)
a ternary ``a if c else b``          a side that is an array element: wrong up to 1.16
                                     (``TERNARY_WITHOUT_ADJOINT``): the second side's value and gradient in
                                     every thread up to 1.10 (``TERNARY_TAKES_SECOND_SIDE``), no gradient on
                                     1.11-1.16; copied, right, from 1.17
store adjoint in stock Warp          accumulates up to 1.12; zeroes from 1.13 (``STOCK_STORE_ZEROES``)
``retain_grad`` array flag           from 1.13 (``ARRAY_FLAG_RETAIN_GRAD``, ``HAS_RETAIN_GRAD``)
component stores ``a[i].x = v``      ``address`` + ``indexref`` + ``store``: no gradient at all up to 1.13;
                                     differentiable from 1.14; emitted as ``wp::adj_array_store_slot`` "slot"
                                     stores from 1.18 (``HAS_SLOT_STORES``, ``Adjoint.array_slot_adjoint``)
component ``a[i].x += v``            no gradient up to 1.17 (1.14-1.17 differentiate ``=`` but not ``+=``);
                                     slot atomics from 1.18 (``HAS_SLOT_STORES``)
``wp.copy`` adjoint on a Tape        ``adj_copy`` copies dest.grad over src.grad up to 1.16; from 1.17 it
                                     accumulates into src.grad and zeroes dest.grad (``dest_retain_grad=``
                                     from 1.13)
tile_store adjoint                   accumulates on 1.9; zeroes from 1.10
a ``@wp.func``'s adjoint             generated only where the module's ``enable_backward`` is on, up to 1.17
                                     (``HELPER_ADJOINT_FOLLOWS_MODULE_OPTION``); a helper's use by a backward
                                     reaches the helpers it calls only where first built so, up to 1.15
                                     (``HELPER_BACKWARD_USE_PROPAGATED``: from 1.16, to a fixpoint)
``tile_map`` over a builtin          whose adjoint takes its result (``tanh``, ``sqrt``, ...): does not build up to
                                     1.18 (``TILE_MAP_ADJOINT_DISPATCHES``, read from ``tile.h``); the map macros
                                     take a result tile up to 1.10 (``TILE_MAP_TAKES_RESULT``)
a ``@wp.func_grad``'s adjoint        emitted after the adjoints that call it on 1.9 (``CUSTOM_ADJOINTS_FIRST``)
``tile_global_t::index`` type        ``int``; ``int64_t`` from 1.13 (read from ``tile.h``)
deterministic mode                   1.19 (also emits ``wp::adj_array_store``)
a kernel's launch dimension          inferred from ``i, j = wp.tid()`` when the receiver resolves to the
                                     ``warp`` module itself (``_is_tid_call``, 1.17): the facade must resolve
                                     to ``warp`` (hook ``Adjoint.resolve_external_reference``, every version)
``@wp.struct`` array fields          a native descriptor holding the array's grad pointer at assignment, on
                                     every version; re-assigning the field refreshes it
``Tape.launches`` entries            ``[kernel, dim, max_blocks, inputs, outputs, device, block_dim,
                                     metadata]``, or a callable (``record_func``), on every version
the active Tape                      ``context.runtime.tape`` (under ``warp._src`` from 1.10)
``Tape.record_launch``               called by ``launch()`` *after* the kernel ran; from 1.10 ``warp.launch``
                                     and ``context.launch`` are separate names (``launch_tiled`` calls the latter)
the ``Tape`` class                   ``warp.Tape``, ``warp.tape.Tape``; ``warp._src.tape.Tape`` from 1.10
a kernel's parsed source             ``kernel.adj.tree`` (the ``ast.Module`` Warp compiles), every version
===================================  =========================================================================
"""

from __future__ import annotations

import ast
import contextlib
import ctypes
import dataclasses
import inspect
import math
import os
import pathlib
import re
import sys
from typing import Any, Callable, Iterable

import warp

# ============================================================================================================
# Versions and features

#: the latest patch of each supported minor, each tested (docs/development.md says which suite runs where)
SUPPORTED = (
    "1.9.1",
    "1.10.1",
    "1.11.1",
    "1.12.1",
    "1.13.0",
    "1.14.0",
    "1.15.0",
    "1.16.0",
    "1.17.0",
    "1.18.0",
    "1.19.0",
)
_MIN_VERSION = (1, 9, 1)
_MAX_VERSION_EXCLUSIVE = (1, 20, 0)


def _parse_version(text: str) -> tuple[int, int, int]:
    parts = [int(p) for p in re.findall(r"\d+", text)[:3]]
    while len(parts) < 3:
        parts.append(0)
    return tuple(parts)  # type: ignore[return-value]


WARP_VERSION_TEXT: str = getattr(warp.config, "version", None) or getattr(warp, "__version__", "0.0.0")
WARP_VERSION = _parse_version(WARP_VERSION_TEXT)


def check_version() -> None:
    """Raise ImportError when the installed warp-lang is outside the supported range."""
    if not (_MIN_VERSION <= WARP_VERSION < _MAX_VERSION_EXCLUSIVE):
        raise ImportError(
            f"warp_zerostore supports warp-lang {SUPPORTED[0]} to 1.19.x (tested: {', '.join(SUPPORTED)}), "
            f"but warp-lang {WARP_VERSION_TEXT} is installed. Install a supported version, e.g. "
            f"`pip install warp-lang=={SUPPORTED[-1]}`."
        )


check_version()

if hasattr(warp, "_src") and hasattr(warp._src, "codegen"):
    import warp._src.codegen as codegen
    import warp._src.context as context
    import warp._src.tape as tape_module
    import warp._src.types as wtypes
else:  # warp-lang 1.9.x
    import warp.codegen as codegen  # type: ignore[no-redef]
    import warp.context as context  # type: ignore[no-redef]
    import warp.tape as tape_module  # type: ignore[no-redef]
    import warp.types as wtypes  # type: ignore[no-redef]

Adjoint = codegen.Adjoint
Kernel = context.Kernel
ModuleBuilder = context.ModuleBuilder
ModuleHasher = context.ModuleHasher

# Warp >= 1.13 tags arrays created with retain_grad=True; its native header has ARRAY_FLAG_RETAIN_GRAD.
HAS_RETAIN_GRAD: bool = "retain_grad" in inspect.signature(warp.array.__init__).parameters

# Warp >= 1.14 differentiates a component store into an array element (measured on each release: 1.13.0 drops
# the gradient, 1.14.0 has it); no feature of Warp's tells it, so the version does.
STOCK_COMPONENT_STORES_DIFFERENTIABLE: bool = WARP_VERSION >= (1, 14, 0)

# Warp >= 1.15 gives a field assignment of a struct local, ``s.a = e``, an adjoint (``Adjoint._store_attribute``
# stores the field and passes its adjoint to ``e``); earlier versions store through a pointer the backward's replay
# skips and whose adjoint is missing (the gradient through the field is zero). Read in each release's codegen.py.
STOCK_STRUCT_FIELD_STORES_DIFFERENTIABLE: bool = WARP_VERSION >= (1, 15, 0)

# Warp >= 1.18 emits component stores into array elements as differentiable "slot" stores itself.
HAS_SLOT_STORES: bool = hasattr(Adjoint, "array_slot_adjoint")

# Warp 1.19 loads modules from several threads at once: codegen serialised under a lock, the C++ compile outside
# it (so two modules compile on two cores). Earlier versions' codegen is not thread-safe.
THREADED_BUILDS: bool = hasattr(codegen, "_codegen_lock")


def _tile_header() -> str:
    """The installed Warp's native tile.h, read to detect what its tiles offer."""
    try:
        return (pathlib.Path(warp.__file__).parent / "native" / "tile.h").read_text(encoding="utf-8", errors="replace")
    except OSError:
        return ""


_TILE_H = _tile_header()

# The element-index type of tile_global_t::index: int, int64_t in 1.19.
if _TILE_H:
    TILE_INDEX_TYPE: str = "int64_t" if "bool index(const Coord& coord, int64_t& out)" in _TILE_H else "int"
else:
    TILE_INDEX_TYPE = "int64_t" if WARP_VERSION >= (1, 13, 0) else "int"

# Warp >= 1.10 tiles can zero the global gradient block they read (grad_zero_global).
HAS_TILE_GRAD_ZERO_GLOBAL: bool = ("grad_zero_global" in _TILE_H) if _TILE_H else WARP_VERSION >= (1, 10, 0)

# Warp >= 1.10 zeroes in its stock tile_store adjoint; 1.9 accumulates.
STOCK_TILE_STORE_ZEROES: bool = WARP_VERSION >= (1, 10, 0)

# The augmented assignments Warp turns into an atomic on an array element (``a[i] += v``: an accumulation, no read);
# the others (``*=``, ``/=``, ...) are a load, the operation and a store. The bitwise ones from 1.10. (Elements of
# 8- and 16-bit integers are never atomic: not differentiable, and the access analysis does not see dtypes.)
ATOMIC_AUGMENTED_OPS: frozenset = frozenset(
    ("Add", "Sub") + (("BitAnd", "BitOr", "BitXor") if WARP_VERSION >= (1, 10, 0) else ())
)


def is_atomic_augmented(op) -> bool:
    """Whether Warp makes ``a[i] <op>= v`` (``op`` an ``ast.operator``) an atomic rather than load-op-store."""
    return type(op).__name__ in ATOMIC_AUGMENTED_OPS


# Warp >= 1.17 accumulates ``dest.grad`` into ``src.grad`` in ``wp.copy``'s adjoint (and zeroes ``dest.grad``); up to
# 1.16 it copies ``dest.grad`` over ``src.grad``. Up to 1.14 a window's two offsets are swapped in it. Measured on
# every minor; `copy_adjoint` replaces the adjoint for copies recorded with ``zero_store`` True or False.
STOCK_COPY_ADJOINT_ACCUMULATES: bool = WARP_VERSION >= (1, 17, 0)
STOCK_COPY_ADJOINT_OFFSETS_RIGHT: bool = WARP_VERSION >= (1, 15, 0)

# Warp >= 1.13 zeroes in stock store adjoints.
STOCK_STORE_ZEROES: bool = WARP_VERSION >= (1, 13, 0)

# Warp >= 1.13 unrolls a constant-bound loop with ``continue``; before, such a loop is dynamic (``break`` always is).
UNROLLS_LOOPS_WITH_CONTINUE: bool = WARP_VERSION >= (1, 13, 0)

# Warp <= 1.16 gets a ternary wrong where a side is a reference (an array element: ``x[i] if c else x[j]``): up to
# 1.10 the side goes to ``where`` as the reference itself, and the ternary is the second side, value and gradient,
# in every thread, whichever side it chose (``TERNARY_TAKES_SECOND_SIDE``; also with a local first side:
# ``a if c else x[j]``); 1.11-1.16 load the side without an adjoint (right value, zero gradient). From 1.17 the side
# is copied (``copy`` has an adjoint). Measured on every minor, with threads taking either side
# (scripts/probe_warp_versions.py).
TERNARY_WITHOUT_ADJOINT: bool = WARP_VERSION < (1, 17, 0)
TERNARY_TAKES_SECOND_SIDE: bool = WARP_VERSION < (1, 11, 0)

# Warp <= 1.17 generates a ``@wp.func``'s adjoint only where the module's ``enable_backward`` is on, even for a kernel
# of a forward-only module that opts back in with ``@wp.kernel(enable_backward=True)`` (1.18 asks whether a backward
# kernel uses the function). Measured on every minor.
HELPER_ADJOINT_FOLLOWS_MODULE_OPTION: bool = WARP_VERSION < (1, 18, 0)

# Warp >= 1.16 propagates "used by a backward kernel" through the call graph to a fixpoint after the build; before,
# a helper first built for a forward-only kernel keeps its callees without adjoints when a differentiable kernel
# calls it later (which kernel builds first varies between processes). Measured on every minor, in fresh processes.
HELPER_BACKWARD_USE_PROPAGATED: bool = WARP_VERSION >= (1, 16, 0)

# Warp 1.19's tile map calls an element adjoint that takes the result (``adj_tanh(x, ret, adj_x, adj_ret)``) with it;
# earlier versions call ``adj_op(x, adj_x, adj_ret)`` only, so ``wp.tile_map(wp.tanh, t)`` does not build.
TILE_MAP_ADJOINT_DISPATCHES: bool = ("tile_map_call_adj" in _TILE_H) if _TILE_H else WARP_VERSION >= (1, 19, 0)
# The tile map macros take a result tile (``adj_tile_unary_map(op, a, r, adj_op, adj_a, adj_r, adj_ret)``) up to 1.10.
TILE_MAP_TAKES_RESULT: bool = "define adj_tile_unary_map(op, a, r," in _TILE_H if _TILE_H else WARP_VERSION < (1, 11, 0)

# Warp >= 1.10 emits every custom adjoint (``@wp.func_grad``) before the generated adjoints that may call it; 1.9 emits
# functions in build order, so a custom adjoint called from another helper's adjoint is used before it is declared.
CUSTOM_ADJOINTS_FIRST: bool = hasattr(ModuleBuilder, "_codegen_functions")


# ============================================================================================================
# Hook points: each place this package wraps, as (owner, attribute); reversible

HOOK_POINTS: dict[str, tuple[Any, str]] = {
    "Kernel.__init__": (Kernel, "__init__"),
    "ModuleHasher.hash_kernel": (ModuleHasher, "hash_kernel"),
    "ModuleBuilder.__init__": (ModuleBuilder, "__init__"),
    "ModuleBuilder.build_kernel": (ModuleBuilder, "build_kernel"),
    "ModuleBuilder.build_function": (ModuleBuilder, "build_function"),
    "ModuleBuilder.codegen": (ModuleBuilder, "codegen"),
    "Adjoint.add_builtin_call": (Adjoint, "add_builtin_call"),
    # which @wp.func a call resolves to, while a flagged module builds: its call graph (`codegen.backports`)
    "Adjoint.resolve_func": (Adjoint, "resolve_func"),
    # each node of a function's body as Warp generates it: a flagged kernel's struct local copied before a field is
    # assigned (`codegen.local_copies`), and what older Warp generates without an adjoint (`codegen.backports`)
    "Adjoint.eval": (Adjoint, "eval"),
    # how a kernel's global names resolve: Warp's codegen tests `is warp` on the module a kernel names (1.17's
    # `_is_tid_call` infers the launch dimension so), which the facade module is not
    "Adjoint.resolve_external_reference": (Adjoint, "resolve_external_reference"),
    "codegen.codegen_kernel": (codegen, "codegen_kernel"),
    "codegen.codegen_func": (codegen, "codegen_func"),
    "codegen.codegen_snippet": (codegen, "codegen_snippet"),
    # whole-array stores: wp.copy / array.assign record `lambda: adj_copy(...)` on the Tape
    "Tape.record_func": (tape_module.Tape, "record_func"),
    # where a backward runs: replay warnings for the memory each flagged kernel's backward sees
    "Tape.backward": (tape_module.Tape, "backward"),
    "context.adj_copy": (context, "adj_copy"),
    # wp.copy copies src.grad into dest.grad in the forward pass by calling the module's own `copy` again
    "context.copy": (context, "copy"),
}

_ORIGINALS: dict[str, Callable] = {}


def wrap(point: str, make_wrapper: Callable[[Callable], Callable]) -> None:
    """Replace the hook point with ``make_wrapper(original)``; idempotent per point."""
    if point in _ORIGINALS:
        return
    owner, attr = HOOK_POINTS[point]
    original = getattr(owner, attr)
    _ORIGINALS[point] = original
    wrapper = make_wrapper(original)
    wrapper.__wrapped__ = original  # type: ignore[attr-defined]
    setattr(owner, attr, wrapper)


@contextlib.contextmanager
def stock_warp():
    """Within the block, Warp runs without any of this package's wrappers (tests compare against it)."""
    installed = {point: getattr(*HOOK_POINTS[point]) for point in _ORIGINALS}
    for point, original in _ORIGINALS.items():
        owner, attr = HOOK_POINTS[point]
        setattr(owner, attr, original)
    try:
        yield
    finally:
        for point, wrapper in installed.items():
            owner, attr = HOOK_POINTS[point]
            setattr(owner, attr, wrapper)


# ============================================================================================================
# Kernels and modules


def warp_module():
    """The ``warp`` package itself (what Warp's codegen compares a kernel's module globals with)."""
    return warp


def kernel_cache_dir() -> str:
    """Warp's kernel cache folder (set by ``warp.init``; empty before it)."""
    return warp.config.kernel_cache_dir or ""


def memo(obj) -> dict:
    """The package's facts about one Warp kernel or ``@wp.func`` (its source analysis, read twins, launch plans),
    kept on the object itself: they live and die with it. A kernel redefined under the same name leaves Warp's
    module with the new one, and the old one's facts go with it (a table keyed by ``id(kernel)`` would keep every
    redefinition). Callers key the dict by what they keep."""
    found = obj.__dict__.get("_wzs_memo")
    if found is None or found[0] != id(obj):  # a copy of another object's ``__dict__`` holds that one's
        found = obj.__dict__["_wzs_memo"] = (id(obj), {})
    return found[1]


def kernel_options(kernel) -> dict:
    return kernel.options


def kernel_module(kernel):
    return kernel.module


def kernel_key(kernel) -> str:
    return kernel.key


def kernel_adjoint(kernel):
    """The ``Adjoint`` that generates a kernel's code (`adjoint_scratch` keeps what a build found on it)."""
    return kernel.adj


def kernel_source_line(kernel) -> tuple:
    """``(file, line of the kernel's first source line)``, the line None where it cannot be known. Warp builds an
    overload of a generic kernel (warp.fem's, warp.optim's) from the generic kernel's source text and gives it no
    line (``fun_lineno`` 0, every version): the function's own first line is the same text's, where the file holds
    it there; a kernel built from other text has no line."""
    import linecache  # noqa: PLC0415

    adj = kernel.adj
    if adj.fun_lineno:
        return adj.filename, adj.fun_lineno
    code = getattr(inspect.unwrap(kernel.func), "__code__", None)
    first = (adj.source or "").lstrip("\n").splitlines()[:1]
    if code is not None and first and os.path.abspath(code.co_filename) == os.path.abspath(adj.filename):
        if linecache.getline(code.co_filename, code.co_firstlineno).strip() == first[0].strip():
            return adj.filename, code.co_firstlineno
    return adj.filename, None


def kernel_source_location(kernel) -> str:
    """``file:line`` of a kernel's source (`kernel_source_line`), or ``file (line unknown: ...)``."""
    filename, line = kernel_source_line(kernel)
    if line is None:
        return f"{filename} (line unknown: a kernel built from source text)"
    return f"{filename}:{line}"


def kernel_function(kernel):
    """The Python function a ``@wp.kernel`` was made from (its signature and annotations)."""
    return kernel.func


def kernel_parameters(kernel) -> list:
    """``[(name, type), ...]`` of a kernel's parameters, in launch order."""
    return [(arg.label, arg.type) for arg in kernel.adj.args]


def kernel_argument_labels(kernel) -> list:
    return [arg.label for arg in kernel.adj.args]


def kernel_tree(kernel):
    """The ``ast.Module`` of a kernel's Python source, as Warp parsed it (one ``FunctionDef``)."""
    return kernel.adj.tree


def kernel_has_backward(kernel) -> bool:
    """False for a kernel built with ``enable_backward=False`` (its own option, else its module's): Warp's Tape
    never runs its adjoint, so its reads are never replayed."""
    enabled = kernel.options.get("enable_backward")
    if enabled is None:
        enabled = kernel.module.options.get("enable_backward")
    return enabled is not False


def kernel_copy_in_new_module(kernel, suffix: str):
    """A new ``wp.Kernel`` over the same function, with the same options and key, alone in a new module named
    ``<module><suffix>`` with a copy of the module's options; None for a generic kernel or an overload of one
    (its concrete argument types are not the function's)."""
    if getattr(kernel, "is_generic", False) or any(is_generic(t) for _, t in kernel_parameters(kernel)):
        return None
    module = context.Module(f"{kernel.module.name}{suffix}", None)
    module.options.update(dict(kernel.module.options))
    copy = context.Kernel(kernel.func, key=kernel.key, module=module, options=dict(kernel.options))
    if getattr(copy, "is_generic", False) or kernel_argument_labels(copy) != kernel_argument_labels(kernel):
        return None
    return copy


def kernel_source(kernel) -> str:
    """The dedented Python source of a kernel's function, decorators included, as Warp read it."""
    return kernel.adj.source


def module_options(module) -> dict:
    return module.options


def all_modules() -> Iterable:
    return list(context.user_modules.values())


def mark_modified(module) -> None:
    module.mark_modified()


def live_kernels(module) -> list:
    getter = getattr(module, "_get_live_kernels", None)
    kernels = list(getter()) if getter is not None else list(module.kernels.values())
    out = []
    for k in kernels:
        if getattr(k, "is_generic", False):
            out.extend(k.overloads.values())
        else:
            out.append(k)
    return out


def get_module(name: str):
    return context.get_module(name)


def caller_module_name(stack_level: int) -> str:
    """Name of the Python module ``stack_level`` frames above the caller of this function."""
    frame = inspect.currentframe()
    for _ in range(stack_level + 1):
        frame = frame.f_back  # type: ignore[union-attr]
    return frame.f_globals.get("__name__", "__main__")  # type: ignore[union-attr]


def warp_package_dirs() -> tuple:
    """Folders of Warp's own Python files (call sites inside them are not the user's, except in
    `warp_user_code_dirs`)."""
    return (os.path.dirname(warp.__file__) + os.sep,)


def warp_user_code_dirs() -> tuple:
    """Folders inside Warp's package that hold programs written as a user writes them, not Warp's runtime: its
    examples and its tests (a launch made from them is the user's)."""
    base = os.path.dirname(warp.__file__)
    return tuple(os.path.join(base, name) + os.sep for name in ("examples", "tests"))


def builtin_function(name: str):
    """Warp's kernel builtin ``name`` (e.g. ``tid``), or None.

    Warp's code generator resolves ``wp.tid()`` through the module ``wp`` names; builtins such as ``tid``
    are not attributes of ``warp`` itself, so the facade hands them out from here.
    """
    return context.builtin_functions.get(name)


# ============================================================================================================
# Module building and hashing


def builder_kernels(builder) -> list:
    return list(builder.kernels)


def builder_functions(builder) -> list:
    return list(builder.functions.keys())


def function_native_name(func) -> str:
    return func.native_func


def hasher_unique_kernels(hasher) -> dict:
    """The hasher's ``{hash: kernel}`` table, which decides which kernel object is built for a hash."""
    return hasher.unique_kernels


def _scratch(obj, name: str) -> dict:
    return obj.__dict__.setdefault(f"_zs_{name}", {})


def hasher_scratch(hasher, name: str) -> dict:
    """A dict this package keeps on one ``ModuleHasher`` (lives as long as that hashing pass)."""
    return _scratch(hasher, name)


def builder_scratch(builder, name: str) -> dict:
    """A dict this package keeps on one ``ModuleBuilder`` (lives as long as that build)."""
    return _scratch(builder, name)


# ============================================================================================================
# Code generation (Adjoint, its variables)


def adjoint_scratch(adj, name: str) -> dict:
    """A dict this package keeps on one ``Adjoint`` (lives as long as that kernel's code generation)."""
    return _scratch(adj, name)


def clear_adjoint_scratch(adj) -> None:
    """Forget what this package kept on an ``Adjoint`` (a new build of its function starts afresh)."""
    for name in [n for n in adj.__dict__ if n.startswith("_zs_")]:
        adj.__dict__[name].clear()


def add_reverse(adj, statement: str) -> None:
    adj.add_reverse(statement)


def var_expr(var) -> str:
    return var.emit()


def var_adj_expr(var) -> str:
    return var.emit_adj()


def var_type(var):
    return codegen.strip_reference(var.type)


def is_reference(var) -> bool:
    return codegen.is_reference(var.type)


def adjoint_symbols(adj) -> dict:
    """The names of a function being generated, each bound to the variable that holds its value now."""
    return adj.symbols


def adjoint_line(adj) -> int:
    """The source line (1 = the function's first, as the ``ast`` of `kernel_tree` numbers them) whose code is being
    generated."""
    return (adj.lineno or 0) + 1


def set_adjoint_line(adj, node) -> None:
    """Generate what follows under ``node``'s source line (what ``Adjoint.eval`` does first for a node)."""
    if hasattr(node, "lineno"):
        adj.set_lineno(node.lineno - 1)


def in_dynamic_loop(adj) -> bool:
    """Whether the code being generated is inside a loop Warp does not unroll (a run-time bound, a ``while``)."""
    return bool(adj.loop_blocks)


def is_int_var(var) -> bool:
    """Whether a variable holds an integer (an index, not a slice)."""
    return wtypes.type_is_int(codegen.strip_reference(var.type))


def struct_field_path(aggregate, fields) -> tuple | None:
    """``(labels, type)`` of the field chain ``fields`` (``["a"]`` for ``s.a``, ``["b", "a"]`` for ``s.b.a``) on a
    struct local's variable ``aggregate``: the C++ member names and the last field's type; None where a level is
    not a struct's field (a vector's component) or the struct is held by reference."""
    kind = getattr(aggregate, "type", None)
    if kind is None or codegen.is_reference(kind):
        return None
    labels = []
    for field in fields:
        if not isinstance(kind, codegen.Struct) or field not in kind.vars:
            return None
        labels.append(kind.vars[field].label)
        kind = kind.vars[field].type
    return labels, kind


def store_struct_field(adj, aggregate, fields, rhs) -> None:
    """``aggregate.a = rhs`` (``fields`` ``["a"]``; ``["b", "a"]`` for ``aggregate.b.a``) on a struct local, generated
    as Warp >= 1.15 generates it: the store in the forward body, which the backward replays; in reverse, the field's
    adjoint added to ``rhs``'s, then cleared. For the versions whose own field store has no adjoint
    (`STOCK_STRUCT_FIELD_STORES_DIFFERENTIABLE`); the one implementation of it (`codegen.local_copies` stores into a
    copy, `codegen.backports` in place). ``fields`` must name a struct local's field (`struct_field_path`)."""
    labels, kind = struct_field_path(aggregate, fields)
    if codegen.is_reference(rhs.type):
        rhs = adj.add_builtin_call("copy", [rhs])
    if not types_equal(codegen.strip_reference(rhs.type), kind):
        raise codegen.WarpCodegenTypeError(
            f"Error, assigning to struct field `{fields[-1]}` ({kind}) with different type ({rhs.type})"
        )
    member = "." + ".".join(labels)
    adj.add_forward(f"{aggregate.emit()}{member} = {rhs.emit()};")
    adj.add_reverse(f"{aggregate.emit_adj()}{member} = {{}};")
    if adj.is_differentiable_value_type(kind):
        adj.add_reverse(f"{rhs.emit_adj()} += {aggregate.emit_adj()}{member};")


def is_component_value_type(t) -> bool:
    """A vector, quaternion, matrix or transform: the value types whose components ``v[i] = e`` assigns."""
    return (
        wtypes.type_is_vector(t)
        or wtypes.type_is_quaternion(t)
        or wtypes.type_is_matrix(t)
        or wtypes.type_is_transformation(t)
    )


# ============================================================================================================
# Types


def is_plain_array_type(t) -> bool:
    """True for ``wp.array`` types (not indexed or fabric arrays)."""
    return type(t) is wtypes.array


def is_array_type(t) -> bool:
    return wtypes.is_array(t)


def array_type_dtype(t):
    return t.dtype


def array_type_ndim(t) -> int:
    return t.ndim


def types_equal(a, b) -> bool:
    return wtypes.types_equal(a, b)


def type_repr(t) -> str:
    return wtypes.type_repr(t) if hasattr(wtypes, "type_repr") else str(t)


def dtype_matches(dtype, template) -> bool:
    """True when arrays of ``dtype`` can be passed where ``template`` (possibly generic) is expected."""
    return wtypes.type_matches_template(dtype, template)


def is_generic(t) -> bool:
    return wtypes.type_is_generic(t)


def scalar_type(dtype):
    """The scalar of a Warp dtype: ``float32`` for ``vec3``, ``float64`` for ``mat22d``."""
    return wtypes.type_scalar_type(dtype)


def element_shape(dtype) -> tuple:
    """The trailing NumPy dimensions of one element: ``()`` for scalars, ``(3,)`` for vec3, ``(2, 2)`` for mat22."""
    return tuple(getattr(dtype, "_shape_", ()))


def dtype_size_bytes(dtype) -> int:
    size = _SIZES.get(dtype)  # Warp's own cache is weakly keyed: several times slower to ask, at every launch
    if size is None:
        size = wtypes.type_size_in_bytes(dtype)
        if len(_SIZES) > 1024:  # dtypes made anew (structs redefined): start over rather than grow
            _SIZES.clear()
        _SIZES[dtype] = size
    return size


_SIZES: dict = {}  # Warp dtype -> its size in bytes


def numpy_scalar(dtype):
    """The NumPy dtype holding one scalar of a Warp dtype."""
    return wtypes.warp_type_to_np_dtype[scalar_type(dtype)]


def is_float(dtype) -> bool:
    """True for float16/32/64 scalars and the vectors, matrices, quaternions and transforms over them."""
    try:
        return scalar_type(dtype) in (wtypes.float16, wtypes.float32, wtypes.float64)
    except Exception:  # noqa: BLE001 - structs and other dtypes have no scalar type
        return False


def value_kind(t) -> str | None:
    """``"integer"`` for a type whose values carry no gradient (an integer or bool scalar, vector or matrix; a struct
    of such fields and arrays), ``"float"`` for one that does, None where it cannot tell (a tuple, an unknown)."""
    if t is bool or t is int or t is getattr(wtypes, "bool", None):
        return "integer"
    if t is float:
        return "float"
    if is_struct_type(t):
        kinds = {value_kind(var.type) for var in t.vars.values() if not is_array_type(var.type)}
        return "float" if "float" in kinds else None if None in kinds else "integer"
    try:
        scalar = wtypes.type_scalar_type(t)
    except Exception:  # noqa: BLE001 - not a Warp value type
        return None
    if scalar in wtypes.int_types or scalar is bool or scalar is getattr(wtypes, "bool", None):
        return "integer"
    if scalar in wtypes.float_types:
        return "float"
    return None


def is_value_type(t) -> bool:
    """A Warp scalar, vector, matrix, quaternion or transform type (a constructor of values)."""
    return (
        t in wtypes.scalar_types
        or wtypes.type_is_vector(t)
        or wtypes.type_is_matrix(t)
        or t is getattr(wtypes, "bool", None)
    )


def component_type(t):
    """The type of ``v.x`` or ``v[0]`` of a vector (a scalar), of ``m[0]`` of a matrix (its row vector); None."""
    if wtypes.type_is_vector(t):
        return wtypes.type_scalar_type(t)
    if wtypes.type_is_matrix(t):
        return wtypes.vector(length=t._shape_[1], dtype=wtypes.type_scalar_type(t))
    return None


def struct_field_type(t, name: str):
    """The type of field ``name`` of a ``@wp.struct`` type, or None."""
    var = t.vars.get(name) if is_struct_type(t) else None
    return None if var is None else var.type


def carries_gradient(array) -> bool:
    """Does the array have a gradient a store adjoint could leak into: a float dtype and ``requires_grad`` (an
    integer or bool array has no adjoint; one without ``.grad`` gets none)?"""
    return bool(getattr(array, "requires_grad", False)) and is_float(array.dtype)


def with_scalar_type(dtype, scalar):
    """The same kind of Warp dtype (scalar, vector, matrix, quaternion, transform) over another scalar."""
    if dtype in (wtypes.float16, wtypes.float32, wtypes.float64):
        return scalar
    if wtypes.type_is_quaternion(dtype):
        return wtypes.quaternion(dtype=scalar)
    if wtypes.type_is_transformation(dtype):
        return wtypes.transformation(dtype=scalar)
    if wtypes.type_is_matrix(dtype):
        return wtypes.matrix(shape=dtype._shape_, dtype=scalar)
    if wtypes.type_is_vector(dtype):
        return wtypes.vector(length=dtype._length_, dtype=scalar)
    return dtype


# ============================================================================================================
# Structs: a @wp.struct instance keeps a native descriptor of each array field


def is_struct_instance(value) -> bool:
    return isinstance(value, codegen.StructInstance)


def is_struct_type(t) -> bool:
    """True for a ``@wp.struct`` type (a kernel parameter's annotation)."""
    return isinstance(t, codegen.Struct)


def struct_array_fields(struct_type) -> list:
    """``[(path, array type)]`` of a ``@wp.struct`` type's array fields, nested structs followed (``("inner", "q")``
    for ``s.inner.q``)."""
    out = []
    for name, var in struct_type.vars.items():
        if is_array_type(var.type):
            out.append(((name,), var.type))
        elif is_struct_type(var.type):
            out.extend(((name, *path), t) for path, t in struct_array_fields(var.type))
    return out


def struct_field_names(struct_type) -> list:
    """The fields of a ``@wp.struct`` type, in the order its constructor takes them."""
    return list(struct_type.vars)


def struct_field(instance, path: tuple):
    """The value at ``path`` (`struct_array_fields`) in a struct instance."""
    for name in path:
        instance = getattr(instance, name)
    return instance


def struct_arrays(instance) -> list:
    """The ``wp.array`` fields of a struct instance, nested structs included."""
    out = []
    for name in instance._cls.vars:
        value = getattr(instance, name)
        if isinstance(value, warp.array):
            out.append(value)
        elif is_struct_instance(value):
            out.extend(struct_arrays(value))
    return out


def struct_array_paths(instance) -> list:
    """``[(path, array)]`` of the ``wp.array`` fields of a struct instance, nested structs followed."""
    out = []
    for name in instance._cls.vars:
        value = getattr(instance, name)
        if isinstance(value, warp.array):
            out.append(((name,), value))
        elif is_struct_instance(value):
            out.extend(((name, *path), arr) for path, arr in struct_array_paths(value))
    return out


def struct_copy(instance, arrays: dict):
    """A new instance of the struct's type with the same values, each array field replaced by ``arrays[id(it)]``
    (nested structs copied the same way): what the read twin passes, so no real array is reachable through it."""
    out = instance._cls()
    for name in instance._cls.vars:
        value = getattr(instance, name)
        if isinstance(value, warp.array):
            value = arrays[id(value)]
        elif is_struct_instance(value):
            value = struct_copy(value, arrays)
        setattr(out, name, value)
    return out


def _refresh_struct(instance) -> None:
    for name in instance._cls.vars:
        value = getattr(instance, name)
        if is_struct_instance(value):
            _refresh_struct(value)
            setattr(instance, name, value)  # a nested struct is copied into its parent's native descriptor
        elif isinstance(value, warp.array):
            setattr(instance, name, value)


# ============================================================================================================
# The Tape and launches
#
# A Tape's ``launches`` holds, per recorded kernel launch, ``[kernel, dim, max_blocks, inputs, outputs, device,
# block_dim, metadata]`` (every supported version), or a callable recorded by ``record_func``.

#: Warp's own Tape class, captured at import (before ``python -m warp_zerostore check`` replaces the names).
WarpTape = tape_module.Tape


def is_kernel_launch(entry) -> bool:
    """True for a recorded kernel launch, False for a callable recorded by ``record_func``."""
    return not callable(entry)


def launch_kernel(entry):
    """The kernel (the overload actually launched) of a recorded kernel launch."""
    return entry[0]


def tape_kernels(tape) -> list:
    """The kernels of a Tape's recorded kernel launches, in recording order (each once)."""
    kernels = [entry[0] for entry in tape.launches if not callable(entry)]
    return list({id(k): k for k in kernels}.values())


def replace_launch_kernel(tape, index: int, kernel) -> None:
    """Make the Tape's ``index``-th recorded launch run ``kernel``'s adjoint at ``backward()`` (a kernel with the
    same parameters: a twin built apart)."""
    tape.launches[index][0] = kernel


def replace_launch_kernel_entry(entry, kernel) -> None:
    """`replace_launch_kernel` on the entry itself (its place on the Tape may move as entries are inserted)."""
    entry[0] = kernel


def is_copy_adjoint(entry) -> bool:
    """Whether a recorded callable is Warp's own adjoint of ``wp.copy`` / ``assign`` (the lambda ``context.copy``
    records, on every supported version; `copy_adjoint` wraps it and says so with ``__wrapped__``): gradient work
    only, which a second backward may run again."""
    function = inspect.unwrap(entry) if callable(entry) else None
    code = getattr(function, "__code__", None)
    return code is not None and code.co_filename == context.__file__ and code.co_name == "<lambda>"


def launch_caller(entry) -> str:
    """``file:line`` where a recorded kernel launch was made: what the package's Tape noted (`note_launch_caller`:
    Warp's own record names the launch hook's frame there), else the caller Warp keeps in the entry's metadata on
    every supported version, else ""."""
    metadata = entry[7] if len(entry) > 7 and isinstance(entry[7], dict) else {}
    noted = metadata.get(_NOTED_CALLER)
    if noted:
        return noted
    caller = metadata.get("caller")
    return f"{caller['file']}:{caller['lineno']}" if caller else ""


_NOTED_CALLER = "warp_zerostore_caller"


def note_launch_caller(entry, location: str) -> None:
    """Keep the user's ``file:line`` of a recorded kernel launch in its entry's metadata (`launch_caller`)."""
    if len(entry) > 7 and isinstance(entry[7], dict):
        entry[7][_NOTED_CALLER] = location


def launch_values(entry) -> list:
    """The argument values of a recorded kernel launch, inputs then outputs."""
    return list(entry[3]) + list(entry[4])


def recorded_arguments(entry) -> list:
    """``[(parameter label, value), ...]`` of a recorded kernel launch, in launch order."""
    return list(zip(kernel_argument_labels(launch_kernel(entry)), launch_values(entry)))


def launch_dim(entry) -> tuple:
    """The launch dimensions of a recorded kernel launch, as a tuple."""
    dim = entry[1]
    return (dim,) if isinstance(dim, int) else tuple(dim)


def tape_entries(tape) -> list:
    """A Tape's recorded entries, in recording order: kernel launches and ``record_func`` callables."""
    return list(tape.launches)


def relaunch_forward(entry) -> None:
    """Run a recorded kernel launch's forward again with the arguments it was recorded with, recorded on no
    Tape (a tiled launch's recorded ``dim`` already ends with its block dimension)."""
    _LAUNCH_ORIGINAL(
        entry[0],
        dim=entry[1],
        inputs=entry[3],
        outputs=entry[4],
        device=entry[5],
        max_blocks=entry[2],
        block_dim=entry[6],
        record_tape=False,
    )


def hold_source(array, source, storage_base: int, storage_nbytes: int) -> None:
    """What ``wp.from_torch`` sets on an array over a tensor's memory: a reference keeping the tensor (and so the
    memory) alive, and the bounds of its whole allocation (APIC capture uses them to match views of one buffer)."""
    array._tensor = source
    array._storage_base_ptr = storage_base
    array._storage_nbytes = storage_nbytes


def retains_grad(array) -> bool:
    """Whether the array was created with ``retain_grad=True`` (Warp >= 1.13), which no store adjoint zeroes."""
    return bool(getattr(array, "retain_grad", False))


def tape_arrays(tape) -> list:
    """Every ``wp.array`` a Tape's backward pass reads ``.grad`` from: arguments of recorded kernel launches
    (including arrays inside ``@wp.struct`` arguments) and arrays registered by ``record_func`` (``wp.copy``).

    Each array once, in recording order.
    """
    seen: dict[int, Any] = {}

    def add(value):
        if isinstance(value, warp.array):
            seen.setdefault(id(value), value)
        elif is_struct_instance(value):
            for arr in struct_arrays(value):
                seen.setdefault(id(arr), arr)

    for entry in tape.launches:
        if is_kernel_launch(entry):
            for value in launch_values(entry):
                add(value)
    for value in list(tape.gradients):
        add(value)
    return list(seen.values())


def refresh_struct_arguments(tape) -> None:
    """Re-store every array field of the ``@wp.struct`` arguments of a Tape's launches.

    A struct keeps a native descriptor of each array field, with the gradient pointer the array had when it
    was assigned; Warp's backward reads it. After giving arrays new ``.grad`` buffers, re-assigning the fields
    makes the descriptors point at the new buffers.
    """
    for entry in tape.launches:
        if is_kernel_launch(entry):
            for value in launch_values(entry):
                if is_struct_instance(value):
                    _refresh_struct(value)


def active_tape():
    return context.runtime.tape if getattr(context, "runtime", None) is not None else None


class _WarningsLogger:
    """A Warp logger (1.17+: ``warp.set_logger``) whose warnings are Python warnings; the rest goes to ``inner``."""

    def __init__(self, inner):
        self.inner = inner

    def debug(self, message: str) -> None:
        self.inner.debug(message)

    def info(self, message: str) -> None:
        self.inner.info(message)

    def warning(self, message: str, category=None, stacklevel: int = 1) -> None:
        import warnings  # noqa: PLC0415

        warnings.warn(message, category or UserWarning, stacklevel=stacklevel + 1)

    def error(self, message: str) -> None:
        self.inner.error(message)


@contextlib.contextmanager
def warp_warnings_as_warnings():
    """Within the block, Warp's own warnings (``Running the tape backwards may produce incorrect gradients ...``)
    are Python warnings, which ``warnings.catch_warnings(record=True)`` records, instead of lines Warp prints
    itself: its logger's (``warp.set_logger``, 1.17+), else ``warp.utils.warn``, which prints through its own
    ``showwarning`` (up to 1.16)."""
    import warnings  # noqa: PLC0415

    if hasattr(warp, "set_logger"):
        previous = warp.get_logger()
        warp.set_logger(_WarningsLogger(previous))
        try:
            yield
        finally:
            warp.set_logger(previous)
        return
    utils = sys.modules.get("warp._src.utils") or sys.modules.get("warp.utils")
    original = getattr(utils, "warn", None)
    if original is None:
        yield
        return

    def warn(message, category=None, stacklevel=1, once=False):
        warnings.warn(message, category or UserWarning, stacklevel=stacklevel + 1)

    utils.warn = warn
    try:
        yield
    finally:
        utils.warn = original


@contextlib.contextmanager
def no_active_tape():
    """Run the body with no ``wp.Tape`` active, then restore the caller's Tape (if any).

    The bridge records on its own Tape; launches inside a bridged op must not land on a Tape the caller
    happens to hold open around PyTorch code, and a second Tape cannot be entered while one is active.
    """
    warp.init()  # no-op once initialised; before it there is no runtime to hold a Tape
    saved = context.runtime.tape
    context.runtime.tape = None
    try:
        yield
    finally:
        context.runtime.tape = saved


@contextlib.contextmanager
def autograd_array_access_unverified():
    """Within the block, ``warp.config.verify_autograd_array_access`` is off: this package's own instrument kernels
    (the read twin) and their scratch copies are built and run without Warp's read and write flags, whose
    warnings would name the package's kernels and mark the user's arrays read. The user's launches keep them."""
    saved = getattr(warp.config, "verify_autograd_array_access", None)
    if not saved:
        yield
        return
    warp.config.verify_autograd_array_access = False
    try:
        yield
    finally:
        warp.config.verify_autograd_array_access = saved


def _tape_namespaces() -> list:
    """Every ``(owner, "Tape")`` a user script may take Warp's Tape class from."""
    owners = [(warp, "Tape"), (tape_module, "Tape")]
    public = sys.modules.get("warp.tape")
    if public is not None and public is not tape_module and hasattr(public, "Tape"):
        owners.append((public, "Tape"))
    return owners


@contextlib.contextmanager
def tape_class_replaced(cls):
    """Within the block, ``warp.Tape`` (and the tape modules' ``Tape``) is ``cls``."""
    saved = [(owner, attr, getattr(owner, attr)) for owner, attr in _tape_namespaces()]
    for owner, attr, _ in saved:
        setattr(owner, attr, cls)
    try:
        yield
    finally:
        for owner, attr, value in saved:
            setattr(owner, attr, value)


# ``warp.launch`` and ``context.launch`` are separate names (``launch_tiled`` calls the latter); ``launch()``
# calls ``Tape.record_launch`` after the kernel ran.
_LAUNCH_OWNERS = ((warp, "launch"), (context, "launch"))
_LAUNCH_ORIGINAL = context.launch
_LAUNCH_PARAMETERS = inspect.signature(_LAUNCH_ORIGINAL)
_launch_users = 0


_installed_launch: dict = {}  # (owner, attr) -> [(our hook function, what it wraps), ...], innermost first


def _install_layer(installed: dict, owners, wrap) -> None:
    """Our wrapper on each name (``wrap(what it holds, attr)``), unless it is what the name holds already. A name set
    anew since we wrapped it (a user's wrapper over ours, or what we wrapped put back) gets one more layer over what
    it holds now, so a Tape entered later still intercepts; the hooks' reentrancy guard lets only the outer act."""
    for owner, attr in owners:
        layers = installed.setdefault((owner, attr), [])
        current = getattr(owner, attr)
        if layers and current is layers[-1][0]:
            continue
        wrapper = wrap(current, attr)
        setattr(owner, attr, wrapper)
        layers.append((wrapper, current))


def _remove_layers(installed: dict) -> None:
    """Take our wrappers out where they are still what the names hold, outermost first; where someone wrapped one
    meanwhile, theirs stays (ours then pass calls through: no Tape intercepts)."""
    for (owner, attr), layers in list(installed.items()):
        for wrapper, previous in reversed(layers):
            if getattr(owner, attr) is wrapper:
                setattr(owner, attr, previous)
    installed.clear()


def install_launch_hook(hook) -> None:
    """Make ``warp.launch`` / ``context.launch`` call ``hook(previous, args, kwargs)``, where ``previous`` is
    whatever each name held when the hook went in (a user's or a library's own wrapper included, which so stays
    in the chain); counted, so nested users share one installation. Only tapes with checks or snapshots install
    it (while entered, and until their ``backward()``): plain launches stay untouched."""
    global _launch_users
    _launch_users += 1

    def wrap(previous, attr):
        def launch(*args, _previous=previous, **kwargs):
            return hook(_previous, args, kwargs)

        launch.__wrapped__ = previous  # type: ignore[attr-defined]
        return launch

    _install_layer(_installed_launch, _LAUNCH_OWNERS, wrap)


def remove_launch_hook() -> None:
    """Take the hook out where it is still what the name holds; where someone wrapped it meanwhile, their wrapper
    stays (the hook then passes launches through: no Tape intercepts)."""
    global _launch_users
    _launch_users = max(0, _launch_users - 1)
    if _launch_users == 0:
        _remove_layers(_installed_launch)


# Host-side whole-array writes a snapshot Tape records while it is entered, and a checking or snapshot Tape's journal
# names until its backward() (`tape.journal`): the array methods and the copy function users call
# (``array.assign`` calls ``warp.copy`` by that name, on every supported version).
HOST_WRITES = ((warp.array, "zero_"), (warp.array, "fill_"), (warp.array, "assign"), (warp, "copy"))
_host_write_users = 0
_installed_host_writes: dict = {}  # (owner, attr) -> [(our wrapper, what it wraps), ...], innermost first


def install_host_write_hook(hook) -> None:
    """Make each of `HOST_WRITES` call ``hook(name, previous, args, kwargs)`` (``name``: ``"zero_"``, ``"fill_"``,
    ``"assign"`` or ``"copy"``; ``args`` of a method start with the array); counted, as `install_launch_hook`.
    Only Tapes with checks or snapshots install it, from the moment they are entered until their ``backward()``:
    outside them these calls are Warp's own."""
    global _host_write_users
    _host_write_users += 1

    def wrap(previous, attr):
        def write(*args, _previous=previous, _name=attr, **kwargs):
            return hook(_name, _previous, args, kwargs)

        write.__wrapped__ = previous  # type: ignore[attr-defined]
        write.__name__ = write.__qualname__ = attr
        write.__doc__ = previous.__doc__
        return write

    _install_layer(_installed_host_writes, HOST_WRITES, wrap)


def remove_host_write_hook() -> None:
    """Take the host-write hooks out where they are still what the names hold (as `remove_launch_hook`)."""
    global _host_write_users
    _host_write_users = max(0, _host_write_users - 1)
    if _host_write_users == 0:
        _remove_layers(_installed_host_writes)


_COPY_PARAMETERS = inspect.signature(context.copy)


def copy_arguments(args, kwargs) -> dict:
    """``warp.copy``'s arguments by name (dest, src, dest_offset, src_offset, count, stream)."""
    bound = _COPY_PARAMETERS.bind(*args, **kwargs)
    bound.apply_defaults()
    return dict(bound.arguments)


_LAUNCH_NAMES = [name for name, p in _LAUNCH_PARAMETERS.parameters.items() if p.kind is p.POSITIONAL_OR_KEYWORD]
_LAUNCH_KEYWORDS = frozenset(_LAUNCH_PARAMETERS.parameters)
_LAUNCH_REQUIRED = frozenset(_LAUNCH_NAMES)
_LAUNCH_DEFAULTS = {
    name: p.default for name, p in _LAUNCH_PARAMETERS.parameters.items() if p.default is not inspect.Parameter.empty
}


def launch_arguments(args, kwargs) -> dict:
    """``launch()``'s arguments by name (kernel, dim, inputs, outputs, adjoint, record_tape, record_cmd, ...)."""
    if len(args) <= len(_LAUNCH_NAMES) and _LAUNCH_KEYWORDS.issuperset(kwargs):  # no bind()
        out = dict(_LAUNCH_DEFAULTS)
        out.update(zip(_LAUNCH_NAMES, args))
        out.update(kwargs)
        if out.keys() >= _LAUNCH_REQUIRED:
            return out
    bound = _LAUNCH_PARAMETERS.bind(*args, **kwargs)
    bound.apply_defaults()
    return dict(bound.arguments)


def prepared_launch(kernel, dim, params: list, device, max_blocks: int, block_dim: int):
    """A ``warp.Launch`` of ``kernel`` (packed once; ``.set_param_at_index(i, v)``, then ``.launch()``): the
    Tape's twin launches cost a fraction of ``warp.launch`` this way."""
    return _LAUNCH_ORIGINAL(
        kernel,
        dim=dim,
        inputs=params,
        device=device,
        max_blocks=max_blocks,
        block_dim=block_dim,
        record_tape=False,
        record_cmd=True,
    )


def copy_on_device(dest, src) -> None:
    """``dest`` takes ``src``'s content (same shape and dtype) on their device, never through the host: on the CPU
    with NumPy on the memory in place (`cpu_view`), else one memcpy (Warp's native ``wp_memcpy_d2d``, named so on
    every supported version) where both are contiguous on one device, else ``warp.copy`` (recorded on no Tape)."""
    if src.device.is_cpu and dest.device.is_cpu and dest.shape == src.shape:
        import numpy as np  # noqa: PLC0415

        np.copyto(cpu_view(dest), cpu_view(src))  # the CPU's memory, in place (a third of a memcpy call's cost)
        return
    if dest.is_contiguous and src.is_contiguous and dest.device == src.device and dest.size == src.size:
        nbytes = src.size * dtype_size_bytes(src.dtype)
        core = context.runtime.core
        if not nbytes:
            return
        if src.device.is_cpu:
            done = core.wp_memcpy_h2h(dest.ptr, src.ptr, nbytes)
        else:
            done = core.wp_memcpy_d2d(dest.device.context, dest.ptr, src.ptr, nbytes, dest.device.stream.cuda_stream)
        if done:
            return
    with no_active_tape():
        warp.copy(dest, src)


def cpu_view(arr):
    """A NumPy view of a CPU array's own memory, in place (the CPU device's memory is the host's: nothing is
    transferred); made once per array object. Only for CPU arrays."""
    cached = arr.__dict__.get("_wzs_cpu_view")  # only CPU arrays get one
    if cached is not None and cached[0] == arr.ptr:
        return cached[1]
    if not arr.device.is_cpu:
        raise ValueError(f"cpu_view of an array on {arr.device}: its memory is not the host's")
    import numpy as np  # noqa: PLC0415

    # NumPy over the array's memory through a ctypes buffer at its address, from its pointer, shape and strides:
    # Warp's array interface costs several microseconds the first time an array is asked (a rollout's check views
    # each new state), and the view holds no reference to the array (cached on it, it would make a cycle)
    layout = _cpu_layout(arr.dtype)
    strides = arr.strides
    if layout is None or not arr.size or not arr.ptr or any(st < 0 for st in strides):
        view = np.asarray(arr)  # through the array interface, in place (what ``arr.numpy()`` does on the CPU)
    else:
        scalar, inner_shape, inner_strides = layout
        span = sum((n - 1) * st for n, st in zip(arr.shape, strides)) + dtype_size_bytes(arr.dtype)
        view = np.ndarray(
            (*arr.shape, *inner_shape),
            dtype=scalar,
            buffer=(ctypes.c_char * span).from_address(arr.ptr),
            strides=(*strides, *inner_strides),
        )
    arr.__dict__["_wzs_cpu_view"] = (arr.ptr, view)
    return view


def cpu_bytes(arr) -> bytes:
    """A CPU array's elements' bytes, element after element in row-major order, read from its memory in place (the
    CPU's memory is the host's: nothing is transferred): one copy of the memory where it is contiguous, else through
    `cpu_view`. Only for CPU arrays."""
    span = arr.__dict__.get("_wzs_cpu_span")  # (pointer, bytes) of a contiguous array, kept on it
    if span is None or span[0] != arr.ptr:
        size = arr.size
        if not size:
            return b""
        if not arr.is_contiguous:
            return cpu_view(arr).tobytes()
        span = arr.__dict__["_wzs_cpu_span"] = (arr.ptr, size * dtype_size_bytes(arr.dtype))
    return ctypes.string_at(span[0], span[1])


def _cpu_layout(dtype):
    """``(NumPy scalar dtype, inner shape, inner byte strides)`` of a Warp scalar, vector or matrix dtype (what Warp's
    array interface flattens an element into); None for others (structs): `cpu_view` asks the interface then."""
    found = _CPU_LAYOUTS.get(dtype, False)
    if found is False:
        found = None
        if dtype in wtypes.scalar_and_bool_types or (isinstance(dtype, type) and issubclass(dtype, ctypes.Array)):
            try:
                scalar = numpy_scalar(dtype)
            except (KeyError, TypeError, AttributeError):
                scalar = None
            if scalar is not None:
                inner = tuple(getattr(dtype, "_shape_", ()))
                item = dtype_size_bytes(scalar_type(dtype))
                strides = tuple(item * math.prod(inner[k + 1 :]) for k in range(len(inner)))
                found = (scalar, inner, strides)
        if len(_CPU_LAYOUTS) < 256:
            _CPU_LAYOUTS[dtype] = found
    return found


_CPU_LAYOUTS: dict = {}  # Warp dtype -> `_cpu_layout`


def host_view(arr):
    """A NumPy view of a CPU array's memory, made once per array object (``arr.numpy()`` costs about 15 us a
    call); for other devices, ``arr.numpy()`` (a copy to the host). The one way this package reads an array's
    content on the host (a transfer off the CPU)."""
    cached = arr.__dict__.get("_wzs_host_view")  # only CPU arrays get one
    if cached is not None and cached[0] == arr.ptr:
        return cached[1]
    if not arr.device.is_cpu:
        return arr.numpy()
    view = arr.numpy()
    arr.__dict__["_wzs_host_view"] = (arr.ptr, view)
    return view


# ============================================================================================================
# Whole-array copies: the arguments of Warp's private ``adj_copy``


@dataclasses.dataclass(frozen=True)
class CopyAdjointCall:
    """One call of Warp's ``adj_copy``, by name (``dest_retain_grad`` exists from 1.13; False before)."""

    adj_dest: Any
    adj_src: Any
    dest_offset: int = 0
    src_offset: int = 0
    count: int = 0
    stream: Any = None
    dest_retain_grad: bool = False


def copy_adjoint_call(original: Callable, args: tuple, kwargs: dict) -> CopyAdjointCall:
    """Bind a call of ``adj_copy`` (``original`` is Warp's function) to its parameters, whatever the version."""
    bound = inspect.signature(original).bind(*args, **kwargs)
    bound.apply_defaults()
    fields = {f.name for f in dataclasses.fields(CopyAdjointCall)}
    return CopyAdjointCall(**{k: v for k, v in bound.arguments.items() if k in fields})


# ---- JAX bridge
# Warp's JAX FFI: ``warp.jax_callable`` / ``warp.jax_kernel`` in 1.19 (``warp._src.jax.ffi``), registering
# handlers for CPU and CUDA; ``warp.jax_experimental.ffi`` (same calls) in 1.9-1.12
# (``warp._src.jax_experimental.ffi`` from 1.10), registering CUDA handlers only.


def jax_ffi_module():
    """The module holding Warp's FFI ``jax_callable`` and ``jax_kernel``, or None on a Warp without it."""
    if hasattr(warp, "jax_callable") and hasattr(warp, "jax_kernel"):
        return warp
    try:
        from warp.jax_experimental import ffi  # noqa: PLC0415 - public on 1.9-1.12, imports jax
    except ImportError:
        return None
    return ffi if hasattr(ffi, "jax_callable") else None


def warp_dtype_from_numpy(np_dtype):
    """The Warp scalar type of a NumPy (or JAX) dtype, or None."""
    import numpy as np  # noqa: PLC0415

    return wtypes.np_dtype_to_warp_type.get(np.dtype(np_dtype))


def is_scalar_type(t) -> bool:
    """True for Warp's scalar value types (``float32``, ``int64``, ``bool``, ...)."""
    return t in wtypes.scalar_types


def jax_ffi_platforms() -> frozenset:
    """The JAX platforms Warp's FFI registers handlers for: ``{"cpu", "cuda"}`` on 1.19, ``{"cuda"}`` on 1.9-1.12."""
    if jax_ffi_module() is None:
        return frozenset()
    try:
        import warp._src.jax as warp_jax  # noqa: PLC0415 - 1.19's package; warp imports its ffi module
    except ImportError:
        return frozenset({"cuda"})
    implementation = getattr(warp_jax, "ffi", None)
    return frozenset({"cpu", "cuda"}) if hasattr(implementation, "_FFI_PLATFORM_CPU") else frozenset({"cuda"})


def jax_graph_mode_none():
    """``jax_callable(graph_mode=...)`` value that turns CUDA graph capture off (for calls that read the host)."""
    module = jax_ffi_module()
    modes = getattr(module, "JaxCallableGraphMode", None) or getattr(module, "GraphMode", None)
    return modes.NONE


# ---- Tape safety on Newton: annotations, @wp.func helpers, Tape.launches entries, capture


def is_plain_array(t) -> bool:
    """True for every spelling of a plain array annotation: ``wp.array(dtype=float)``, ``wp.array1d``/``2d``...,
    and the subscript forms ``wp.array[float]``, ``wp.array2d[float]`` (Warp >= 1.17 keeps those as annotations
    until the kernel is built). Indexed and fabric arrays are not plain."""
    if type(t) is wtypes.array:
        return True
    annotation = getattr(wtypes, "_ArrayAnnotation", None)
    return annotation is not None and type(t) is annotation


def has_custom_adjoint(obj) -> bool:
    """Whether a user ``@wp.func`` has a ``@wp.func_grad``: Warp's backward runs that instead of the function's own
    adjoint (every supported version keeps it as ``custom_grad_func``)."""
    function_class = getattr(context, "Function", None)
    return function_class is not None and isinstance(obj, function_class) and obj.custom_grad_func is not None


def has_custom_replay(function) -> bool:
    """Whether a user ``@wp.func`` has a ``@wp.func_replay`` (or a native replay snippet): Warp's backward runs that
    where it replays the function's forward code (every supported version keeps it as ``custom_replay_func``)."""
    return getattr(function, "custom_replay_func", None) is not None or bool(getattr(function, "replay_snippet", None))


def user_function(obj):
    """A user ``@wp.func`` as Warp keeps it (``wp.Function``), or None for builtins and anything else."""
    function_class = getattr(context, "Function", None)
    if function_class is None or not isinstance(obj, function_class):
        return None
    if obj.is_builtin() or getattr(obj, "func", None) is None:
        return None
    return obj


def function_overloads(function) -> list:
    """The overloads of a user ``@wp.func`` (`user_function`), each with its own parsed source (warp.fem makes one
    per field type); which one a call picks is decided by argument types when the module is built."""
    overloads = getattr(function, "user_overloads", None) or {}
    return list(overloads.values()) or [function]


def function_namespace(func) -> dict:
    """The names a kernel's or helper's Python function resolves, as Warp resolves them: its module's globals and
    its closure's variables (warp.fem makes kernels inside functions: ``quadrature.point_coords(...)``)."""
    out = dict(func.__globals__)
    if func.__closure__:
        for name, cell in zip(func.__code__.co_freevars, func.__closure__):
            try:
                out[name] = cell.cell_contents
            except ValueError:  # a cell not filled yet
                continue
    return out


def function_python(function):
    """The Python function a user ``@wp.func`` (`user_function`) was made from: its signature, globals, closure."""
    return function.func


def function_argument_types(function) -> dict:
    """``{parameter: type}`` a user ``@wp.func`` (one overload) is built with (warp.fem gives its integrands concrete
    field types their source does not spell)."""
    return {name: t for name, t in function.adj.arg_types.items() if name != "return"}


def function_tree(function) -> ast.Module:
    """The source of a user ``@wp.func`` (`user_function`) as Warp compiles it: parsed, after the code transformers
    it was made with (warp.fem rewrites its integrands' field calls), one ``FunctionDef``. Shared with Warp: copy it
    before changing it. Raises ``OSError`` where Warp holds no source."""
    adj = getattr(function, "adj", None)
    tree = getattr(adj, "tree", None)
    if tree is None:
        raise OSError(f"no source for @wp.func {getattr(function, 'key', function)!r}")
    return tree


def reference_parameters(obj) -> frozenset:
    """Positions of a Warp function's parameters annotated ``wp.ref[T]`` (warp-lang >= 1.15; a native or a Python
    ``@wp.func``): an argument passed there, an array element included, may be written by the callee. Empty for
    anything else, and on a Warp without references."""
    function_class = getattr(context, "Function", None)
    is_reference = getattr(wtypes, "is_reference", None)
    if is_reference is None or function_class is None or not isinstance(obj, function_class):
        return frozenset()
    types = getattr(obj, "input_types", None) or {}
    return frozenset(position for position, t in enumerate(types.values()) if is_reference(t))


def compared_reference_parameters(obj) -> frozenset:
    """Positions of `reference_parameters` whose ``T`` a kernel can compare with ``==`` (a scalar, a vector, a
    matrix or a quaternion): the read twin tells whether the callee changed such an element."""
    types = getattr(obj, "input_types", None) or {}
    comparable = (wtypes.type_is_vector, wtypes.type_is_matrix, wtypes.type_is_quaternion)
    found = set()
    for position in reference_parameters(obj):
        value_type = getattr(list(types.values())[position], "value_type", None)
        if value_type in wtypes.scalar_types or any(test(value_type) for test in comparable):
            found.add(position)
    return frozenset(found)


def is_builtin_function(obj) -> bool:
    """Whether ``obj`` is one of Warp's kernel builtins (``wp.sin``), not a user ``@wp.func``."""
    function_class = getattr(context, "Function", None)
    return function_class is not None and isinstance(obj, function_class) and bool(obj.is_builtin())


def function_source(func) -> str:
    """The dedented source of a ``@wp.func``'s Python function (decorators included)."""
    import textwrap  # noqa: PLC0415

    return textwrap.dedent(inspect.getsource(func))


def function_location(func) -> tuple:
    """``(source file, first line)`` of a Python function (its first decorator's line, as ``function_source``
    starts)."""
    return inspect.getsourcefile(func) or "?", inspect.getsourcelines(func)[1]


def append_tape_callback(tape, callback) -> None:
    """Add a callable to ``tape.launches``: Warp's backward calls it in reverse order like a launch's adjoint."""
    tape.launches.append(callback)


def insert_tape_callback(tape, index: int, callback) -> None:
    """Insert a callable before entry ``index`` of ``tape.launches``: backward calls it right after that
    entry's adjoint."""
    tape.launches.insert(index, callback)


def tape_launch_count(tape) -> int:
    return len(tape.launches)


def is_capturing(device) -> bool:
    """True while ``wp.ScopedCapture`` records on ``device``; on the CPU (Warp >= 1.19) launches are then recorded
    without running."""
    try:
        return bool((device if isinstance(device, context.Device) else warp.get_device(device)).is_capturing)
    except Exception:  # noqa: BLE001 - older Warp: no CPU capture; a CUDA query failing means no capture either
        return False


# ============================================================================================================
# Newer Warp's fixes to its own code generation, for zero_store=True kernels on older Warp (codegen/backports.py)


def adjoint_of(obj):
    """The ``Adjoint`` that generates a kernel's or a ``@wp.func``'s code."""
    return obj.adj


def adjoint_source_tree(adj):
    """The ``ast.Module`` of the function an ``Adjoint`` builds, as Warp parsed it (None where it holds none)."""
    return getattr(adj, "tree", None)


def adjoint_builder(adj):
    """The ``ModuleBuilder`` building an ``Adjoint`` now (None outside its build)."""
    return getattr(adj, "builder", None)


def is_custom_adjoint(adj) -> bool:
    """Whether an ``Adjoint`` generates a user's ``@wp.func_grad`` (an adjoint written by hand)."""
    return bool(getattr(adj, "custom_reverse_mode", False))


def custom_functions(function) -> list:
    """A ``@wp.func``'s hand-written adjoint and replay (``@wp.func_grad``, ``@wp.func_replay``), those it has."""
    return [f for f in (function.custom_grad_func, function.custom_replay_func) if f is not None]


_CODEGEN_FUNC = codegen.codegen_func  # Warp's own, before any wrapper
_CODEGEN_FUNC_PARAMETERS = inspect.signature(_CODEGEN_FUNC)


def generates_function(original: Callable) -> bool:
    """Whether ``original`` is Warp's ``codegen_func`` (a ``@wp.func`` from its source), not ``codegen_snippet``."""
    return original is _CODEGEN_FUNC


def codegen_func_with_adjoint(original: Callable, args: tuple, kwargs: dict) -> str:
    """What Warp's ``codegen_func`` (``original``, called with ``args`` and ``kwargs``) generates for a helper whose
    adjoint a backward kernel needs, as Warp >= 1.18 decides it: the adjoint is generated whatever the module's
    ``enable_backward`` says, for a helper used by a backward kernel (`HELPER_ADJOINT_FOLLOWS_MODULE_OPTION`,
    `HELPER_BACKWARD_USE_PROPAGATED`). The ``Adjoint`` is left as it was."""
    bound = _CODEGEN_FUNC_PARAMETERS.bind(*args, **kwargs)
    adj = bound.arguments["adj"]
    bound.arguments["options"] = {**(bound.arguments.get("options") or {}), "enable_backward": True}
    used = adj.used_by_backward_kernel
    adj.used_by_backward_kernel = True
    try:
        return original(*bound.args, **bound.kwargs)
    finally:
        adj.used_by_backward_kernel = used


def emit_ternary_with_adjoint(adj, node):
    """``a if c else b`` (``node``, an ``ast.IfExp``) generated as Warp >= 1.17 generates it: each side evaluated in
    its branch, a side that is a reference (an array element) copied, whose adjoint reaches the element (Warp
    1.11-1.16 load it, which has none; up to 1.10 ``where`` takes the reference itself, and yields the second side: `TERNARY_WITHOUT_ADJOINT`),
    then ``where``."""
    if hasattr(node, "lineno"):
        adj.set_lineno(node.lineno - 1)
    cond = adj.eval(node.test)
    if cond.constant is not None:
        return adj.eval(node.body) if cond.constant else adj.eval(node.orelse)

    def side(var):
        return adj.add_builtin_call("copy", [var]) if codegen.is_reference(var.type) else adj.load(var)

    adj.begin_if(cond)
    body = side(adj.eval(node.body))
    adj.end_if(cond)
    adj.begin_else(cond)
    orelse = side(adj.eval(node.orelse))
    adj.end_else(cond)
    return adj.add_builtin_call("where", [cond, body, orelse])


def _field_chain(target) -> tuple | None:
    """``(name, [attr, ...])`` of ``s.a`` or ``s.b.a`` (a chain of attributes on a local by name), else None."""
    attrs = []
    while isinstance(target, ast.Attribute):
        attrs.insert(0, target.attr)
        target = target.value
    return (target, attrs) if isinstance(target, ast.Name) and attrs else None


def is_struct_field_store(node) -> bool:
    """Whether a statement assigns (``=``, or an operator's ``op=``) a field of a local by name, ``s.a = e``,
    ``s.b.a += e`` (a struct's field, or a vector's component: told apart when generated)."""
    if isinstance(node, ast.Assign) and len(node.targets) == 1:
        return _field_chain(node.targets[0]) is not None
    return isinstance(node, ast.AugAssign) and _field_chain(node.target) is not None


def emit_struct_field_store_with_adjoint(adj, node) -> bool:
    """``s.a = e``, ``s.b.a = e`` or ``s.a op= e`` (``node``, `is_struct_field_store`) on a struct local generated as
    Warp >= 1.15 generates it, in place (`store_struct_field`; an ``op=`` as the field read, the operation, and that
    store); Warp <= 1.14 gives it no adjoint (`STOCK_STRUCT_FIELD_STORES_DIFFERENTIABLE`). False, with nothing
    generated, where each level is not a struct local's field (a vector's component, a struct held by reference):
    Warp's own code then."""
    target = node.targets[0] if isinstance(node, ast.Assign) else node.target
    name, fields = _field_chain(target)
    if hasattr(node, "lineno"):
        adj.set_lineno(node.lineno - 1)
    root = adj.eval(name)  # a name: generates nothing
    if struct_field_path(root, fields) is None:
        return False
    if isinstance(node, ast.Assign):
        rhs = adj.eval(node.value)
    else:  # s.a op= e: the field read (Warp's, differentiable), then the operation
        read = ast.copy_location(ast.Attribute(value=target.value, attr=target.attr, ctx=ast.Load()), target)
        rhs = adj.eval(ast.copy_location(ast.BinOp(left=read, op=node.op, right=node.value), node))
    store_struct_field(adj, root, fields, rhs)
    return True


def rebuild(adj, builder) -> None:
    """Build a function's code again with the builder that built it (Warp's own ``build``: it starts afresh)."""
    adj.build(builder)
