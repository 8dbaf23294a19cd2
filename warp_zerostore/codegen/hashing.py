"""Hashing of flagged kernels: a kernel whose effective mode is True or False gets Warp's hash salted with the
mode, the native header's digest and the code generator's source, so flipping a flag (kernel, module or process)
or changing what generates flagged code rebuilds; an unflagged kernel keeps Warp's hash. A flagged kernel's build
is remembered by its salted hash (`replay_records`, with the lines of locals its build made exact); Warp's own
wrong adjoints in its source are warned where its backward first runs (`adjoint_lints`), not here: a kernel no
backward runs has no wrong gradient to warn about.

The salt's generator digest covers every package file that runs when flagged code is generated, derived from the
import statements of ``codegen/`` (`generator_files`), so a change anywhere in it rebuilds.
"""

from __future__ import annotations

import ast
import hashlib
import logging
import pathlib

from .. import _compat
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
        unique = _compat.hasher_unique_kernels(self)
        if unique.get(kernel_hash) is kernel:
            if kernel_hash in stock:
                unique[kernel_hash] = stock[kernel_hash]
            else:
                del unique[kernel_hash]
        unique[salted] = kernel
        return salted

    return hash_kernel
