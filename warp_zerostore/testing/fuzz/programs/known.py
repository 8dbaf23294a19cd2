"""Failures of drawn launch sequences that are known, per Warp version (docs/known-issues.md: each with its repro).

An entry matches a failure on one of its paths (``"variant:tape"``, ``"*"`` for any part) of its kind whose program
uses at least the entry's constructs (`programs.shrink.constructs`). The kernel fuzzer's entries (``fuzz.known``)
hold for the kernels of a program too: a program whose launched kernel holds a known trigger matches on the
paths where that kernel's bug shows (a plain or check Tape for an in-place update; every Tape for an adjoint bug).
A failure worse than stock, a check miss and a check false alarm never match: those are this package's.
"""

from __future__ import annotations

import warp

from ..known import ALL, SUPPORTED
from ..known import KNOWN as KERNEL_KNOWN

#: Where a kernel entry's variants show in a program: an in-place update is wrong on the Tapes that replay against
#: memory as it is (plain, check, the PyTorch bridge); an adjoint bug on every Tape.
_ON = {
    "stock": ("stock:*",),
    "zero_store": ("zero_store:*",),
    "zero_store:plain": ("zero_store:plain", "zero_store:check", "zero_store:torch"),
}
UP_TO_1_16 = tuple(v for v in SUPPORTED if tuple(map(int, v.split("."))) < (1, 17))
UP_TO_1_17 = tuple(v for v in SUPPORTED if tuple(map(int, v.split("."))) < (1, 18))
UP_TO_1_14 = tuple(v for v in SUPPORTED if tuple(map(int, v.split("."))) < (1, 15))
REPLAYED = ("*:plain", "*:check", "zero_store:torch")
FROM_1_15 = tuple(v for v in SUPPORTED if tuple(map(int, v.split("."))) >= (1, 15))

#: id -> (Warp versions, paths, kind, constructs).
KNOWN = {
    # Warp's Tape replays a launch's backward against memory as it is at backward(): a later launch (or a copy)
    # that overwrites what an earlier launch read makes that launch's backward re-read the new values. The package's
    # check Tape reports it as a stale read (or a mutation, for a copy) and the snapshot Tape restores it (launches)
    # or refuses it by name (a copy).
    "stale-read-across-launches": (ALL, REPLAYED, "gradient", ("overwrite after read (launches)",)),
    # The same inside one launch through one array under two parameters (x = y: y[i] = x[i] / cosh(v) updates the
    # array in place, read through x): the backward reads the updated value. Check reports it; snapshot right.
    "stale-read-through-an-alias": (ALL, REPLAYED, "gradient", ("x = y (one array)",)),
    "stale-read-through-a-vector-alias": (ALL, REPLAYED, "gradient", ("xv = yv (one array)",)),
    # A step that is not a launch changes what a launch read, inside the Tape or after it (mutation after record):
    # the launch's backward reads the new values. Check reports it; the snapshot Tape refuses it by name.
    "mutated-by-fill-in-tape": (ALL, REPLAYED, "gradient", ("fill_",)),
    "mutated-by-zero-in-tape": (ALL, REPLAYED, "gradient", ("zero_",)),
    "mutated-by-assign-in-tape": (ALL, REPLAYED, "gradient", ("assign",)),
    "mutated-after-the-tape-fill": (ALL, REPLAYED, "gradient", ("fill_ after the Tape",)),
    "mutated-after-the-tape-zero": (ALL, REPLAYED, "gradient", ("zero_ after the Tape",)),
    "mutated-after-the-tape-assign": (ALL, REPLAYED, "gradient", ("assign after the Tape",)),
    "mutated-after-the-tape-copy": (ALL, REPLAYED, "gradient", ("copy after the Tape",)),
    # A write the Tape cannot differentiate (fill_, zero_, assign in the Tape; a launch of an enable_backward=False
    # kernel) over an element a recorded launch wrote: the gradient of that earlier value flows on (Warp's backward
    # skips the write), on every Tape.
    "untaped-write-over-a-recorded-write-fill": (
        ALL,
        ("*:*",),
        "gradient",
        ("constant write over a recorded write", "fill_"),
    ),
    "untaped-write-over-a-recorded-write-zero": (
        ALL,
        ("*:*",),
        "gradient",
        ("constant write over a recorded write", "zero_"),
    ),
    "untaped-write-over-a-recorded-write-assign": (
        ALL,
        ("*:*",),
        "gradient",
        ("assign", "constant write over a recorded write"),
    ),
    # The same constant writes over the source of a recorded copy: the copy's adjoint reads no value, but the
    # written array's gradient (of its new value) is its old value's too; the snapshot Tape follows launches' reads
    # only, so it neither restores nor refuses it. Every Tape.
    "untaped-write-over-a-copy-source-fill": (
        ALL,
        ("*:*",),
        "gradient",
        ("constant write over a copy's source", "fill_"),
    ),
    "untaped-write-over-a-copy-source-zero": (
        ALL,
        ("*:*",),
        "gradient",
        ("constant write over a copy's source", "zero_"),
    ),
    "untaped-write-over-a-copy-source-assign": (
        ALL,
        ("*:*",),
        "gradient",
        ("assign", "constant write over a copy's source"),
    ),
    "forward-only-write-over-a-recorded-write": (
        ALL,
        ("*:*",),
        "gradient",
        ("enable_backward=False", "write after write (launches)"),
    ),
    "module-forward-only-write-over-a-recorded-write": (
        ALL,
        ("*:*",),
        "gradient",
        ("module enable_backward=False", "write after write (launches)"),
    ),
    # The same launches over an element a recorded launch read (an update in place, y[i] += v, by a kernel without
    # backward): Warp's Tape passes the updated element's gradient to the old value unchanged, the reference
    # (rule 3) takes the forward-only result as a constant; every Tape, stock and flagged alike.
    "forward-only-write-over-a-recorded-read": (
        ALL,
        ("*:*",),
        "gradient",
        ("enable_backward=False", "overwrite after read (launches)"),
    ),
    "module-forward-only-write-over-a-recorded-read": (
        ALL,
        ("*:*",),
        "gradient",
        ("module enable_backward=False", "overwrite after read (launches)"),
    ),
    # up to warp-lang 1.17, a @wp.func helper of a module built with enable_backward=False has no adjoint, even
    # for a kernel of it that opts back in with enable_backward=True: the helper's share of the gradient is lost,
    # on every Tape (docs/repros/forward_only_module_helper_adjoint.py; measured on every minor: 1.18.0 is right).
    # Stock only: a flagged kernel's helpers get their adjoint on every version (codegen/backports.py).
    "forward-only-module-helper-no-adjoint": (
        UP_TO_1_17,
        ("stock:*",),
        "gradient",
        ("call", "enable_backward=True in a forward-only module"),
    ),
    # the same for a helper that stores into an array (its store adjoint, zeroing or not, never runs; found by the
    # 20-minute campaign on 1.12.1, seed 2026)
    "forward-only-module-helper-store-no-adjoint": (
        UP_TO_1_17,
        ("stock:*",),
        "gradient",
        ("callstore", "enable_backward=True in a forward-only module"),
    ),
    # wp.copy's adjoint up to warp-lang 1.16 copies dest.grad over src.grad (losing what src.grad held) and keeps
    # dest.grad; flagged programs record copies under wpz.copy_zero_store(True), whose adjoint is right.
    "copy-adjoint-overwrites-src-grad": (UP_TO_1_16, ("stock:*",), "gradient", ("copy",)),
    # and up to warp-lang 1.14 it swaps a window's offsets: d.grad[dest_offset:] goes to s.grad[dest_offset:]
    # (docs/repros/copy_adjoint.py; measured on every minor: 1.15.0 is right).
    "copy-adjoint-window-offsets-swapped": (UP_TO_1_14, ("stock:*",), "gradient", ("copy window",)),
    # a valid kernel Warp >= 1.15 cannot build: ``s.y[i] *= v`` (or ``/=``) on an array field of a @wp.struct
    # argument ("Couldn't find function overload for 'indexref'", 'extract' from 1.18); 1.9.1-1.14.0 build it.
    "struct-array-scale-build-error": (FROM_1_15, ("*:*",), "build", ("mulstore through a struct",)),
    "struct-array-divide-build-error": (FROM_1_15, ("*:*",), "build", ("divstore through a struct",)),
}


def _kernel_entries():
    for key, (versions, variants, kind, needed) in KERNEL_KNOWN.items():
        paths = tuple(p for v in variants for p in _ON.get(v, ()))
        if paths:
            yield f"kernel:{key}", (versions, paths, kind, needed)


ALL_KNOWN = {**KNOWN, **dict(_kernel_entries())}


def _on(path: tuple, patterns) -> bool:
    variant, tape = path
    for pattern in patterns:
        want_variant, want_tape = pattern.split(":")
        if want_variant in ("*", variant) and want_tape in ("*", tape):
            return True
    return False


def match(failure, labels, version: str | None = None) -> str:
    """The id of the known issue ``failure`` (a ``differential.verdicts.Failure``) matches with its program's
    ``labels`` on ``version`` (default: the installed Warp), or ""."""
    if failure.worse or failure.kind in ("check miss", "check false alarm", "check differs"):
        return ""
    version = version or warp.config.version
    labels = set(labels)
    for key, (versions, paths, kind, needed) in ALL_KNOWN.items():
        if version in versions and _on(failure.path, paths) and failure.kind == kind and set(needed) <= labels:
            return key
    return ""


__all__ = ["ALL_KNOWN", "KNOWN", "match"]
