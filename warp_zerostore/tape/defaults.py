"""Every Tape a program makes, made one mode of this package's `Tape`: what ``warp-suite --tape`` and
``warp-examples`` put in place of ``wp.Tape`` (the ``check`` command does the same with ``config.check``)."""

from __future__ import annotations

import contextlib
from typing import Iterator

from .. import _compat
from .tape import Tape


def tape_class(check: str | None = None, snapshot: bool = False) -> type:
    """A `Tape` subclass whose ``check`` and ``snapshot`` default to these (what a program passes itself wins).

    Args:
        check: The default ``check`` (None: ``warp_zerostore.config.check``).
        snapshot: The default ``snapshot``.

    Returns:
        The class, named ``Tape``.
    """

    class ModeTape(Tape):
        def __init__(self, check=check, snapshot=snapshot):
            super().__init__(check=check, snapshot=snapshot)

    ModeTape.__name__ = ModeTape.__qualname__ = "Tape"
    return ModeTape


@contextlib.contextmanager
def every_tape(check: str | None = None, snapshot: bool = False) -> Iterator[type]:
    """Within the block, ``wp.Tape()`` (``warp.Tape``, ``warp.tape.Tape``) makes a `Tape` with these defaults.

    Args:
        check: The default ``check`` (None: ``warp_zerostore.config.check``).
        snapshot: The default ``snapshot``.

    Yields:
        The class in place of ``wp.Tape``.

    Example:
        ```python
        import warp

        import warp_zerostore as wp
        from warp_zerostore.tape.defaults import every_tape

        with every_tape(snapshot=True):
            tape = warp.Tape()
        assert isinstance(tape, wp.Tape) and tape.snapshot
        ```
    """
    cls = tape_class(check, snapshot)
    with _compat.tape_class_replaced(cls):
        yield cls


__all__ = ["every_tape", "tape_class"]
