"""What each flagged kernel's build reported about its replay, and the warnings made of it at ``backward()``.

A ``zero_store=True`` kernel's code generation (`replay.ModuleReplay`) reports, per memory (`replay.POST`,
`replay.PRE`), the reads its backward cannot replay exactly, and whether its two backwards differ. Those
records are kept per build (named by the salted module hash of the kernel, `remember_build`), in memory and in a
small JSON file beside Warp's kernel cache, so that a build loaded from the cache, which generates no code, has
them too.

Whether a record applies depends on what memory the backward runs against, which only the Tape or bridge that
runs it knows: a plain Tape runs the `POST` backward, the snapshot Tape the `PRE` one where its replay is exact.
The record also holds the source lines whose in-place assignment of a local the build made a copy
(`local_copies.exact_lines`): the adjoint lint's component and field findings are warned only on other lines
(`exact_lines`, read by `adjoint_lints` where the backward first runs).

So no replay issue warns at build time; `warn` is called where a backward is about to run (Warp's ``Tape.backward``,
hooked in `warp_zerostore.codegen.hooks`, which the package's Tape calls; the PyTorch and JAX bridges), once per
build and memory per process, at the store's source line.
"""

from __future__ import annotations

import json
import logging
import os
import pathlib
import tempfile
import warnings

from .. import _compat
from . import replay

_log = logging.getLogger(__name__)

_RECORDS: dict = {}  # salted hash -> {"issues": {memory: [...]}, "pre_differs": bool, "exact_lines": [int]}
_WARNED: set = set()  # (salted hash, memory) warned in this process


def warnings_dir() -> str:
    cache = _compat.kernel_cache_dir()
    return os.path.join(cache, "warp_zerostore", "replay") if cache else ""


def _file(build: str) -> pathlib.Path:
    return pathlib.Path(warnings_dir()) / f"{build}.json"


def remember_build(kernel, build: str) -> None:
    """``kernel`` is built as ``build`` (its salted hash); a record kept beside the kernel cache is read back."""
    if not hasattr(kernel, "__dict__"):
        return
    _compat.memo(kernel)["replay_records.build"] = build  # goes with the kernel
    if build in _RECORDS or not warnings_dir():
        return
    try:
        saved = json.loads(_file(build).read_text(encoding="utf-8"))
        record = {
            "issues": {m: list(saved["issues"][m]) for m in replay.MEMORIES},
            "pre_differs": saved["pre_differs"],
            "exact_lines": [int(line) for line in saved["exact_lines"]],
        }
    except (OSError, ValueError, KeyError, TypeError) as error:
        _log.debug("no cached replay record for build %s (%s): code generation records it", build, error)
        return  # not built yet: code generation records it
    _RECORDS[build] = record


def record(kernel, key: str, location: str, report: replay.Report, exact_lines=()) -> None:
    """Keep a generated kernel's `replay.Report` and the lines of its locals made copies (``exact_lines``) under its
    build, in memory and beside the kernel cache."""
    filename = location.rsplit(":", 1)[0]
    entry = {
        "issues": {
            memory: [
                {"message": i.message(f"kernel '{key}'", location), "filename": filename, "line": i.store_line}
                for i in found
            ]
            for memory, found in report.issues.items()
        },
        "pre_differs": report.differs,
        "exact_lines": sorted(exact_lines),
    }
    build = build_of(kernel)
    if build is None:
        return
    _RECORDS[build] = entry
    _write(build, entry)


def exact_lines(kernel) -> set | None:
    """The source lines (1-based within the kernel's source) of the locals ``kernel``'s build assigned through a
    copy form (`local_copies`): exact there, so not warned. None where the build is not known (a cached binary
    whose record was lost): the caller then warns as if no line were exact."""
    entry = _RECORDS.get(build_of(kernel))
    return None if entry is None else set(entry["exact_lines"])


def _write(build: str, entry: dict) -> None:
    """Atomically, in a folder only this user writes (Warp's kernel cache); a failure only costs the record of a
    cached build (its backward then warns nothing, and a snapshot Tape builds its PRE twin)."""
    if not warnings_dir():
        return
    try:
        folder = pathlib.Path(warnings_dir())
        folder.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=folder, suffix=".tmp")
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            json.dump(entry, f)
        os.replace(tmp, folder / f"{build}.json")
    except OSError as error:
        _log.info("replay record of build %s not cached (%s): a cached build will not warn", build, error)


def build_of(kernel) -> str | None:
    return _compat.memo(kernel).get("replay_records.build") if hasattr(kernel, "__dict__") else None


def issues(kernel, memory: str) -> list | None:
    """The records (``{"message", "filename", "line"}``) of ``kernel``'s backward against ``memory``; None when
    its build is not known (not built in this process and not in the cache)."""
    entry = _RECORDS.get(build_of(kernel))
    return None if entry is None else entry["issues"][memory]


def pre_differs(kernel) -> bool:
    """Whether the kernel's `replay.PRE` backward differs from its `replay.POST` one (True when not known)."""
    entry = _RECORDS.get(build_of(kernel))
    return True if entry is None else bool(entry["pre_differs"])


def warn(kernel, memory: str) -> None:
    """Warn (`replay.ReplayWarning`) about the issues of ``kernel``'s backward against ``memory``, once per build
    and memory in this process."""
    build = build_of(kernel)
    found = issues(kernel, memory)
    if not found or (build, memory) in _WARNED:
        return
    _WARNED.add((build, memory))
    for r in found:
        warnings.warn_explicit(replay.ReplayWarning(r["message"]), replay.ReplayWarning, r["filename"], r["line"])


def forget_warnings() -> None:
    """Warn again about every build (tests, and a long session that wants the warnings back)."""
    _WARNED.clear()
