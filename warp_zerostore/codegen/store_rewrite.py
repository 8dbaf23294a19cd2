"""The store forms (`STORE_FORMS`: each stock store adjoint and the header's pair that replaces it, per mode) and the
text rewrite that swaps them; the replay log's adjoint patterns are made from the same table.

The forward code of a kernel is never touched. In the reverse code of a kernel (or of a ``@wp.func``
helper variant) whose mode is True or False, each stock store adjoint below is replaced by the
warp_zerostore adjoint of that mode, defined in ``native/warp_zerostore.h``.
"""

from __future__ import annotations

import dataclasses
import re
from typing import Iterable

#: the suffix of a helper's replay-log variant (`replay.SUFFIX`: `replay` imports this module's neighbours, not it)
LOG_SUFFIX = "__zs_log"


@dataclasses.dataclass(frozen=True)
class StoreForm:
    """One store form of Warp's generated code, named once: its stock adjoint (as generated, without the call's
    parenthesis) and the header's pair that replaces it, ``<twin>_zero`` / ``<twin>_accumulate``
    (``native/warp_zerostore.h``). ``slot``: a component store, whose adjoint takes the stored value's adjoint
    second after the array's; ``logged``: an element store the replay log follows (its adjoint rewinds the log)."""

    adjoint: str
    twin: str
    slot: bool = False
    logged: bool = True


#: the reverse statement this package gives a component store into an array element on Warp <= 1.17 (`building`)
COMPONENT_STORE_ADJOINT = "wp::zs::adj_component_store"

STORE_FORMS = (
    StoreForm("wp::adj_array_store", "wp::zs::adj_array_store"),
    StoreForm("wp::adj_array_store_slot", "wp::zs::adj_array_store_slot", slot=True),
    StoreForm(COMPONENT_STORE_ADJOINT, "wp::zs::adj_array_store_slot", slot=True),
    StoreForm("wp::adj_tile_store", "wp::zs::adj_tile_store", logged=False),
    StoreForm("wp::adj_tile_store_indexed", "wp::zs::adj_tile_store_indexed", logged=False),
)

#: stock native adjoint -> {zero_store=True: its replacement, zero_store=False: its replacement}, from `STORE_FORMS`
STORE_ADJOINTS: dict[str, dict[bool, str]] = {
    f"{form.adjoint}(": {True: f"{form.twin}_zero(", False: f"{form.twin}_accumulate("} for form in STORE_FORMS
}

_STORE_PATTERN = re.compile("|".join(re.escape(k) for k in STORE_ADJOINTS))


def variant_suffix(mode: bool) -> str:
    return "__zs_zero" if mode else "__zs_accumulate"


def rewrite_store_adjoints(source: str, mode: bool) -> str:
    """Swap every stock store adjoint in ``source`` for the adjoint of ``mode``."""
    return _STORE_PATTERN.sub(lambda m: STORE_ADJOINTS[m.group(0)][mode], source)


def rename_helpers(source: str, names: Iterable[str], mode: bool) -> str:
    """Point calls (and definitions) of the helper functions ``names`` at their ``mode`` variants.

    A helper ``h_0`` is called as ``h_0(`` in forward code and ``adj_h_0(`` in reverse code, never with a
    namespace; builtins always carry ``wp::``, so they cannot match. Its replay-log variants
    (``h_0__zs_log``, `replay`) keep that suffix after the mode's.
    """
    names = sorted(set(names), key=len, reverse=True)
    if not names:
        return source
    # a log variant is a template, called with its slots: ``h__zs_log<3, wp::zs::slots<...>>(``
    pattern = re.compile(
        r"(?<![\w:])((?:adj_)?)("
        + "|".join(re.escape(n) for n in names)
        + rf")(?:({re.escape(LOG_SUFFIX)})(?=\s*[<(])|(?=\s*\())"
    )
    suffix = variant_suffix(mode)
    return pattern.sub(lambda m: f"{m.group(1)}{m.group(2)}{suffix}{m.group(3) or ''}", source)


def rewrite_for_mode(source: str, mode, helper_names: Iterable[str] = (), rename: bool = False) -> str:
    """The code of ``source`` for ``mode``: None leaves it as it is."""
    if mode is None:
        return source
    source = rewrite_store_adjoints(source, mode)
    if rename:
        source = rename_helpers(source, helper_names, mode)
    return source
