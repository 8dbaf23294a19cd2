"""Failures the fuzzer found and that are known, per Warp version (docs/known-issues.md: each with its repro).

An entry matches a failure of one of its variants and its kind whose kernel uses at least the entry's
constructs (the constructs of the shrunk repro). A variant is a kernel on either Tape (``"stock"``) or on one
(``"zero_store:plain"``: `batch.PATHS`). Matching unshrunk kernels by a subset is loose on purpose: the CI
campaign does not shrink, and a kernel that contains a known trigger is not evidence of a new bug. A failure
worse than stock (``Failure.worse``: a package path wrong where stock Warp on a plain Tape is right) is this
package's defect and never matches.
"""

from __future__ import annotations

import warp

from ..._compat import SUPPORTED
from .shrink import constructs

#: Every supported Warp (`_compat.SUPPORTED`: the latest patch of each minor). An entry for ALL is a property of
#: Warp's design (its backward replays the forward against memory as it is), measured on 1.9.1, 1.10.1, 1.12.1
#: and 1.19.0 and run by the fixed-seed campaigns of the fast suite on the other minors.
ALL = SUPPORTED
BOTH = ("stock", "zero_store")
#: An in-place update (a read of an element, then a store over it): wrong on a plain Tape flagged or not (the
#: launch's input is gone; the flagged kernel gives what stock gives), right flagged on the snapshot Tape.
IN_PLACE = ("stock", "zero_store:plain")
OLD = tuple(v for v in SUPPORTED if tuple(map(int, v.split("."))) < (1, 13))  # store adjoints accumulate (<= 1.12)

#: Store adjoints of array components: ``a[i].x = v`` has none up to 1.13, ``a[i].x += v`` none up to 1.17 (measured
#: per release, docs/semantics.md); flagged kernels have both on every version.
NO_COMPONENT_STORE = tuple(v for v in SUPPORTED if tuple(map(int, v.split("."))) < (1, 14))
NO_COMPONENT_AUGSTORE = tuple(v for v in SUPPORTED if tuple(map(int, v.split("."))) < (1, 18))
#: Where stock Warp gets wrong what flagged kernels get right on every version (codegen/backports.py; measured per
#: release, scripts/probe_warp_versions.py): a ternary's array-element side, tile maps of tanh.
TERNARY_WRONG = tuple(v for v in SUPPORTED if tuple(map(int, v.split("."))) < (1, 17))
TERNARY_SECOND_SIDE = tuple(v for v in SUPPORTED if tuple(map(int, v.split("."))) < (1, 11))
UP_TO_1_18 = tuple(v for v in SUPPORTED if tuple(map(int, v.split("."))) < (1, 19))
#: Where a struct local's field assignment has no adjoint in stock Warp (flagged kernels get 1.15's code: backports).
NO_STRUCT_FIELD_STORE = tuple(v for v in SUPPORTED if tuple(map(int, v.split("."))) < (1, 15))

#: id -> (Warp versions, variants, kind, constructs that trigger it).
KNOWN = {
    # y[i] read, then y[i] stored in the same launch (an in-place update): Warp's backward re-reads the new
    # value. Flagged kernels are right on Tape(snapshot=True), the package's remedy; a plain Tape is wrong for
    # both, and Tape(check=...) reports it as a stale read. Unflagged, the snapshot Tape cannot serve an element
    # read both before and after the store (one replayed read; it warns "read before and after write").
    "read-then-overwrite": (ALL, IN_PLACE, "gradient", ("readback y[i]", "store")),
    "read-then-augstore": (ALL, IN_PLACE, "gradient", ("readback y[i]", "augstore")),
    "helper-store-readback": (ALL, IN_PLACE, "gradient", ("callstore", "readback y[i]")),
    # the same through one statement (feature "augops"): y[i] *= e and y[i] /= e read y[i] and store over it.
    "in-place-scale": (ALL, IN_PLACE, "gradient", ("mulstore",)),
    "in-place-divide": (ALL, IN_PLACE, "gradient", ("divstore",)),
    # the same on the vec3 array of feature "vec_stores": yv[i] (or a component) read, then stored or updated.
    "read-then-overwrite-vec": (ALL, IN_PLACE, "gradient", ("readback yv[i]", "store yv")),
    "read-then-augstore-vec": (ALL, IN_PLACE, "gradient", ("augstore yv", "readback yv[i]")),
    "read-then-overwrite-component": (ALL, IN_PLACE, "gradient", ("readback yv[i]", "store yv.c")),
    "read-then-augstore-component": (ALL, IN_PLACE, "gradient", ("augstore yv.c", "readback yv[i]")),
    # a component stored or updated in an array element (yv[i].x = e, yv[i].x += e): no adjoint in stock Warp.
    "component-store-no-adjoint": (NO_COMPONENT_STORE, ("stock",), "gradient", ("store yv.c",)),
    "component-augstore-no-adjoint": (NO_COMPONENT_AUGSTORE, ("stock",), "gradient", ("augstore yv.c",)),
    # the same on a 2-D output (feature "arrays2d"): ym[i, c] read, then ym[i, c] stored or augmented.
    "read-then-overwrite-2d": (ALL, IN_PLACE, "gradient", ("readback ym[i, c]", "store ym")),
    "read-then-augstore-2d": (ALL, IN_PLACE, "gradient", ("augstore ym", "readback ym[i, c]")),
    # a local vector's component updated after the vector was used: Warp's adjoint of the update is wrong. A flagged
    # kernel gets Warp's copy form (codegen/local_copies.py) and is right, except inside a loop Warp does not unroll.
    "component-update-after-use": (ALL, ("stock",), "gradient", ("setcomponent(+=)",)),
    "component-assign-after-use": (ALL, ("stock",), "gradient", ("setcomponent(=)",)),
    "component-subtract-after-use": (ALL, ("stock",), "gradient", ("setcomponent(-=)",)),
    "component-scale-after-use": (ALL, ("stock",), "gradient", ("setcomponent(*=)",)),
    **{
        f"{loop_id}-component-{name}": (ALL, BOTH, "gradient", (loop, f"setcomponent({op})"))
        for loop_id, loop in (("runtime-loop", "for(runtime)"), ("while-loop", "while"))
        for name, op in (("assign", "="), ("update", "+="), ("subtract", "-="), ("scale", "*="))
    },
    # a local reassigned inside a runtime-bound loop, used nonlinearly after it: Warp's loop adjoint is wrong.
    "runtime-loop-carried-local": (ALL, BOTH, "gradient", ("assign(=)", "for(runtime)")),
    # the same with `+=` (`a0 += (k - a0) / wp.cosh(x[i])` in the loop; benchmarks/fuzz_false_alarms.py, seed 7).
    "runtime-loop-carried-update": (ALL, BOTH, "gradient", ("assign(+=)", "for(runtime)")),
    # the same through a while loop (a counter-bound `while`: Warp's loop adjoint, as for a runtime bound).
    "while-loop-carried-local": (ALL, BOTH, "gradient", ("assign(=)", "while")),
    "while-loop-carried-augmented-local": (ALL, BOTH, "gradient", ("assign(+=)", "while")),
    # the same with the struct local (features "structs", "struct_helpers"): reassigned whole (s0 = h(...)), or a
    # field assigned (s0.a = e, s0.a = s0.a + e, s0.a = s0.a * e) in the loop; the package warns as for a local.
    "runtime-loop-carried-struct": (ALL, BOTH, "gradient", ("assign struct", "for(runtime)")),
    "while-loop-carried-struct": (ALL, BOTH, "gradient", ("assign struct", "while")),
    "runtime-loop-carried-field": (ALL, BOTH, "gradient", ("for(runtime)", "setfield(=)")),
    "runtime-loop-carried-field-update": (ALL, BOTH, "gradient", ("for(runtime)", "setfield(+=)")),
    "runtime-loop-carried-field-scale": (ALL, BOTH, "gradient", ("for(runtime)", "setfield(*=)")),
    "runtime-loop-carried-field-subtract": (ALL, BOTH, "gradient", ("for(runtime)", "setfield(-=)")),
    "while-loop-carried-field": (ALL, BOTH, "gradient", ("setfield(=)", "while")),
    "while-loop-carried-field-update": (ALL, BOTH, "gradient", ("setfield(+=)", "while")),
    "while-loop-carried-field-scale": (ALL, BOTH, "gradient", ("setfield(*=)", "while")),
    "while-loop-carried-field-subtract": (ALL, BOTH, "gradient", ("setfield(-=)", "while")),
    # a break/continue taken after other statements of its iteration: Warp's backward replays the jump too and
    # skips those statements' adjoints (a constant-bound loop with only `continue` is unrolled, and right, on 1.19).
    "loop-break-after-statements": (ALL, BOTH, "gradient", ("break",)),
    "loop-continue-after-statements": (ALL, BOTH, "gradient", ("continue",)),
    # `a if c else b` where a side is an array element: Warp <= 1.10 gives the second side, value and gradient, in
    # every thread, 1.11-1.16 drop the side's adjoint (zero gradient through it); wp.where is right. Stock only:
    # flagged kernels get 1.17's code for it (codegen/backports.py).
    "ternary-no-adjoint": (TERNARY_WRONG, ("stock",), "gradient", ("ternary",)),
    "ternary-takes-second-side": (TERNARY_SECOND_SIDE, ("stock",), "forward", ("ternary",)),
    # a valid kernel Warp cannot build: static loops (each `for k0 in range(1)`) in both branches of an if.
    "static-loops-in-both-branches": (("1.12.1", "1.19.0"), BOTH, "build", ("for(static)", "if(parity)")),
    # the same family: a static loop's counter name reused by a runtime loop inside an `if` (fuzz_false_alarms seed 7).
    "static-loop-name-reused-in-branch": (
        ("1.12.1", "1.19.0"),
        BOTH,
        "build",
        ("for(runtime)", "for(static)", "if(threshold)"),
    ),
    # a valid kernel Warp 1.9.1 cannot build: a @wp.func with a @wp.func_grad called from another @wp.func (the
    # custom adjoint is called before the generated C++ declares it); 1.10.1 and later build it, right. A module that
    # holds a flagged kernel builds it on 1.9.1 too (the header declares such adjoints first: codegen/backports.py),
    # so a batch's kernels (stock and flagged in one module) meet it only in a module of their own.
    "func-grad-helper-called-from-func": (("1.9.1",), ("stock",), "build", ("nested call(func_grad)",)),
    # a value assigned to a field of a struct local (s = S(); s.a = x[i]) has no adjoint on Warp <= 1.14: zero
    # gradient through the field, read directly or through a @wp.func taking the struct (feature "structs"). The
    # fuzzer's struct local is built field by field, so any kernel with one and a field read anywhere. Stock only: a
    # flagged kernel's field stores get Warp 1.15's code (its own body: codegen/local_copies.py; its helpers:
    # codegen/backports.py).
    "struct-field-assign-no-adjoint": (NO_STRUCT_FIELD_STORE, ("stock",), "gradient", ("struct", "struct field")),
    # the same inside a @wp.func that returns the struct (r = S(); r.a = p0 * p1; return r): zero gradient through
    # every field of the returned struct, read as h(...).a or after s0 = h(...) (feature "struct_helpers").
    "struct-return-no-adjoint": (NO_STRUCT_FIELD_STORE, ("stock",), "gradient", ("struct field", "struct return")),
    # a field of a struct local assigned after the struct was passed whole to a @wp.func: the struct is one C++
    # variable the assignment overwrites in place, and the call's adjoint reads the final value (as
    # component-update-after-use; a flagged kernel copies the struct first and is right).
    "struct-field-assign-after-call": (ALL, ("stock",), "gradient", ("setfield(=)", "struct arg")),
    "struct-field-update-after-call": (ALL, ("stock",), "gradient", ("setfield(+=)", "struct arg")),
    "struct-field-scale-after-call": (ALL, ("stock",), "gradient", ("setfield(*=)", "struct arg")),
    "struct-field-subtract-after-call": (ALL, ("stock",), "gradient", ("setfield(-=)", "struct arg")),
    # the tile form (feature "tiles"): this thread's region of yt tile-loaded, then tile-stored or tile-atomic-added
    # over in the same launch; Warp's backward re-reads the new values. Right on the snapshot Tape, as above.
    "tile-read-then-store": (ALL, IN_PLACE, "gradient", ("tile readback yt", "tile_store")),
    "tile-read-then-atomic-add": (ALL, IN_PLACE, "gradient", ("tile readback yt", "tile_atomic_add")),
    # a valid kernel Warp <= 1.18 cannot build: wp.tile_map(wp.tanh, t) (the tile map's adjoint calls adj_tanh
    # without the return value tanh's adjoint takes); sin and cos map and build. A module that holds a flagged kernel
    # builds it on every version (the header's map macros: codegen/backports.py), a batch's module included.
    "tile-map-tanh-build-error": (UP_TO_1_18, ("stock",), "build", ("tile_map(tanh)",)),
    # two stores to one element: Warp <= 1.12 keeps the overwritten store's gradient (what zero_store fixes), on
    # either Tape (the snapshot Tape restores values, not adjoints).
    "overwrite-accumulates": (OLD, ("stock",), "gradient", ("store",)),
    "overwrite-accumulates-in-helper": (OLD, ("stock",), "gradient", ("callstore",)),
    "overwrite-accumulates-2d": (OLD, ("stock",), "gradient", ("store ym",)),
    "overwrite-accumulates-vec": (OLD, ("stock",), "gradient", ("store yv",)),
    # a tile store over yt's region: Warp 1.9's tile_store adjoint accumulates too (1.10 and later zero).
    "tile-overwrite-accumulates": (("1.9.1",), ("stock",), "gradient", ("tile_store",)),
}


def trigger(known_id: str) -> tuple:
    """The constructs that trigger the known issue ``known_id`` (those of its shrunk repro)."""
    return KNOWN[known_id][3]


def match(failure, version: str | None = None) -> str:
    """The id of the known issue ``failure`` matches on ``version`` (default: the installed Warp), or "" (always
    for a failure worse than stock)."""
    if getattr(failure, "worse", False):
        return ""
    version = version or warp.config.version
    labels = set(constructs(failure.case.program))
    tape = getattr(failure, "tape", "") or ""
    for key, (versions, variants, kind, needed) in KNOWN.items():
        on = failure.variant in variants or f"{failure.variant}:{tape}" in variants
        if version in versions and on and failure.kind == kind and set(needed) <= labels:
            return key
    return ""
