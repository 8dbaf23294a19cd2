# Type stub of warp_zerostore.config: this package's two settings, and every setting of warp.config (reads and
# writes pass through to it at run time).

import typing as _typing

from warp.config import *  # noqa: F403 - re-exports warp.config's settings

ZeroStore = _typing.Optional[bool]
CheckLevel = _typing.Literal["off", "warn", "error"]
CHECK_LEVELS: tuple[CheckLevel, ...]

#: The process default of every kernel's zero_store (kernel option > module option > this).
zero_store: bool | None
#: The default ``check`` of warp_zerostore.Tape.
check: CheckLevel
#: The default ``measure`` of warp_zerostore.Tape (a Tape with checks and without snapshots).
measure: bool
#: Progress bars on long work: None (when stderr is a terminal), True, False.
progress: bool | None

def validate_zero_store(value: object, where: str) -> ZeroStore: ...
def validate_check(value: object, where: str) -> CheckLevel: ...
def validate_measure(value: object, where: str) -> bool: ...
def validate_progress(value: object, where: str) -> bool | None: ...
