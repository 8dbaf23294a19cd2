"""Hashing of flagged kernels: a kernel whose effective mode is True or False gets Warp's hash salted with the
mode, the native header's digest and the code generator's source, so flipping a flag (kernel, module or process)
or changing what generates flagged code rebuilds; an unflagged kernel keeps Warp's hash. A flagged kernel's build
is remembered by its salted hash (`replay_records`), and Warp's own wrong adjoints in its source are warned
(`warp_zerostore.lints`) when its module is hashed to be built or loaded: they are wrong whatever memory the
backward sees, so they need no Tape to say so. A component or field of a local assigned after a use is warned once
the build's record says whether the build made that assignment exact (`replay_records.when_recorded`).

The salt's generator digest covers every package file that runs when flagged code is generated, derived from the
import statements of ``codegen/`` (`generator_files`), so a change anywhere in it rebuilds.
"""

from __future__ import annotations

import ast
import hashlib
import logging
import pathlib
import warnings

from .. import _compat, lints
from ..options import effective_zero_store
from . import native, replay, replay_records
from .pre_twin import replay_memory

_log = logging.getLogger(__name__)

_PACKAGE = pathlib.Path(__file__).resolve().parent.parent  # warp_zerostore/


def _module_file(dotted: list) -> pathlib.Path | None:
    """The package file of module ``warp_zerostore.<dotted>`` (a folder's ``__init__.py``), or None."""
    base = _PACKAGE.joinpath(*dotted)
    for candidate in (base.with_suffix(".py"), base / "__init__.py"):
        if candidate.is_file():
            return candidate
    return None


def _imported_files(path: pathlib.Path) -> set:
    """The package files ``path`` imports (relative imports and ``warp_zerostore.*``), read from its source."""
    here = list(path.relative_to(_PACKAGE).parent.parts)
    found = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.ImportFrom):
            if node.level:
                base = here[: len(here) - (node.level - 1)] if node.level > 1 else list(here)
            elif (node.module or "").split(".")[0] == _PACKAGE.name:
                base = []
            else:
                continue
            module = [p for p in (node.module or "").split(".") if p]
            if not node.level:
                module = module[1:]
            # `from .. import x` names modules (or attributes) of a package, not the package's __init__ itself
            candidates = ([base + module] if module else []) + [base + module + [a.name] for a in node.names]
        elif isinstance(node, ast.Import):
            candidates = [n.name.split(".")[1:] for n in node.names if n.name.split(".")[0] == _PACKAGE.name]
        else:
            continue
        found |= {f for f in map(_module_file, candidates) if f is not None}
    return found


def generator_files() -> list:
    """Every package file that runs when a flagged module is generated: the files of ``codegen/`` and, followed
    transitively through their import statements, every package module they import (`_compat`, `builtin_facts`,
    `lints`, ...). Derived, not listed, so that code moved into a new module is covered too."""
    todo = sorted((_PACKAGE / "codegen").glob("*.py"))
    seen: set = set()
    while todo:
        path = todo.pop()
        if path not in seen:
            seen.add(path)
            todo.extend(_imported_files(path) - seen)
    return sorted(seen)


def generator_digest(read=lambda path: path.read_bytes()) -> str:
    """The digest of `generator_files` (each file's package path and contents)."""
    digest = hashlib.sha256()
    for path in generator_files():
        digest.update(str(path.relative_to(_PACKAGE)).encode("utf-8") + b"\0" + read(path) + b"\0")
    return digest.hexdigest()


# What generates flagged code besides the header: a change to it must never reuse a cached binary.
_GENERATOR_DIGEST = generator_digest()


def _salt(kernel_hash: bytes, mode: bool, memory: str = replay.POST) -> bytes:
    text = f"warp_zerostore:zero_store={mode}:header={native.header_digest()}:generator={_GENERATOR_DIGEST}"
    if memory == replay.PRE:
        text += ":replay=pre"
    return hashlib.sha256(kernel_hash + text.encode("utf-8")).digest()


def wrap_hash_kernel(original):
    def hash_kernel(self, kernel, *args, **kwargs):
        kernel_hash = original(self, kernel, *args, **kwargs)
        # Stock kernels by unsalted hash: a flagged twin with the same source must not displace them.
        stock = _compat.hasher_scratch(self, "stock_kernels")
        mode = effective_zero_store(kernel)
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


_ADJOINT_WARNED: set = set()


def _warn_adjoint_bugs(kernel, build: str) -> None:
    """Warn, once per build and process, about constructs whose adjoint Warp itself gets wrong
    (`warp_zerostore.lints`): at each one's line, when the module is hashed to build or load it."""
    if build in _ADJOINT_WARNED or not _compat.kernel_has_backward(kernel):
        return  # once per build; and a kernel never differentiated has no wrong gradient to warn about
    _ADJOINT_WARNED.add(build)
    try:
        found = lints.find(_compat.kernel_tree(kernel), _helper_resolver(kernel))
    except (AttributeError, StopIteration, SyntaxError) as error:  # no source tree: nothing to look at
        _log.debug("kernel %s: no source tree to check for Warp's wrong adjoints (%s)", kernel, error)
        return
    location = _compat.kernel_source_location(kernel)
    key = _compat.kernel_key(kernel)
    candidates = [f for f in found if isinstance(f, lints.UpdateAfterUse) and not f.helper]  # a helper's: Warp's
    _warn_each([f for f in found if f not in candidates], key, location)
    if candidates:  # warned where the build did not make the assignment exact (codegen.local_copies)

        def warn_not_exact(exact_lines):
            _warn_each([f for f in candidates if exact_lines is None or f.line not in exact_lines], key, location)

        replay_records.when_recorded(build, warn_not_exact)


def _helper_resolver(kernel):
    """How the lints find the ``@wp.func`` a call of the kernel names (``h(...)``, ``module.h(...)``): its name, its
    parsed source, file and first line, from the globals of the function that calls it; None for anything else."""

    def resolve(func, namespace=None):
        namespace = _compat.kernel_function(kernel).__globals__ if namespace is None else namespace
        path = []
        while isinstance(func, ast.Attribute):
            path.append(func.attr)
            func = func.value
        if not isinstance(func, ast.Name) or func.id not in namespace:
            return None
        obj = namespace[func.id]
        for attr in reversed(path):
            obj = getattr(obj, attr, None)
        function = _compat.user_function(obj)
        if function is None:
            return None
        try:
            tree = ast.parse(_compat.function_source(function))
            filename, first = _compat.function_location(function)
        except (OSError, TypeError, SyntaxError):
            return None
        definition = next(n for n in ast.walk(tree) if isinstance(n, ast.FunctionDef))
        nested = lambda f: resolve(f, function.__globals__)  # noqa: E731 - a helper's calls: its own globals
        return function.__qualname__, definition, filename, first, nested

    return resolve


def _warn_each(found: list, key: str, location: str) -> None:
    filename, first = location.rsplit(":", 1)
    for f in found:
        line = int(first) + f.line - 1
        warnings.warn_explicit(lints.AdjointWarning(f.message(key, location)), lints.AdjointWarning, filename, line)
