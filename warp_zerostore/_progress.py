"""Progress bars (tqdm) for long work: finite differences in ``check_gradients``, a checkpointed rollout's sweeps,
a fuzzing campaign's budget.

On by default only when stderr is a terminal; ``warp_zerostore.config.progress`` (None: that default, True,
False) turns them on or off for the process, and a call's own ``progress=`` wins over it. Bars not asked for by
name wait a second before they appear (tqdm's ``delay``), so short work prints nothing. Without tqdm there is no
bar (a record on the ``warp_zerostore`` logger), unless one was asked for.
"""

from __future__ import annotations

import logging
import sys

from . import config

_log = logging.getLogger(__name__)


def enabled(requested: bool | None = None) -> bool:
    """Whether a bar is shown: ``requested``, else ``config.progress``, else whether stderr is a terminal."""
    value = config.progress if requested is None else requested
    if value is None:
        isatty = getattr(sys.stderr, "isatty", None)
        return bool(isatty and isatty())
    return bool(value)


class _NoBar:
    def update(self, n: int = 1) -> None:
        pass

    def set_postfix_str(self, s: str = "", refresh: bool = True) -> None:
        pass

    def close(self) -> None:
        pass


def bar(
    total: int | None,
    description: str,
    unit: str,
    requested: bool | None = None,
    leave: bool = True,
    bar_format: str | None = None,
):
    """A tqdm bar on stderr (``bar_format``: tqdm's, default its own), or an object with the same ``update``/
    ``set_postfix_str``/``close`` that shows nothing."""
    if not enabled(requested):
        return _NoBar()
    try:
        from tqdm.auto import tqdm  # noqa: PLC0415 - optional: the checkpoint and test extras bring it
    except ImportError as error:
        if requested or config.progress:
            raise ImportError(f"{description}: a progress bar needs tqdm: pip install tqdm") from error
        _log.debug("%s: no progress bar (tqdm is not installed)", description)
        return _NoBar()
    delay = 0.0 if requested else 1.0  # a bar asked for by name shows at once, even for short work
    return tqdm(
        total=total, desc=description, unit=unit, leave=leave, delay=delay, file=sys.stderr, bar_format=bar_format
    )
