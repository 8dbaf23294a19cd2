"""Failures the fuzzer found that are known, per Warp version (docs/known-issues.md has each with its repro).

An entry matches a failure of the same variant and kind whose kernel uses at least the entry's constructs.
"""

from __future__ import annotations

import warp

from .shrink import constructs

#: id -> (Warp versions, variant, kind, constructs that trigger it). Filled from fuzzing campaigns.
KNOWN = {
    "helper-store-readback": (
        ("1.9.1", "1.10.1", "1.12.1", "1.19.0"),
        "zero_store",
        "gradient",
        ("callstore", "readback y[i]"),
    ),
}


def _version() -> str:
    return warp.config.version


def match(failure, version: str | None = None) -> str:
    """The id of the known issue ``failure`` matches on ``version`` (default: the installed Warp), or ""."""
    version = version or _version()
    labels = set(constructs(failure.case.program))
    for key, (versions, variant, kind, needed) in KNOWN.items():
        if version in versions and failure.variant == variant and failure.kind == kind and set(needed) <= labels:
            return key
    return ""
