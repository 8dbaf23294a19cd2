"""warp_zerostore broken on purpose, four ways, to show the program fuzzer catches each:
``tests/test_fuzz_programs_mutation.py`` runs each on a small program, ``benchmarks/fuzz_programs_mutants.py`` runs a
one-minute campaign under each.

Each mutant is a context manager that patches one piece of the package and puts it back:

* ``snapshot-save``: the snapshot Tape saves nothing before a launch (`tape.Tape._save_snapshots` does nothing), so
  an in-place update across launches is replayed against the new values, as on a plain Tape;
* ``store-zeroing``: a flagged kernel's store adjoints accumulate instead of zeroing (every ``True`` entry of
  `codegen.store_rewrite.STORE_ADJOINTS` swapped for the ``False`` one);
* ``replay-forwarding``: the replay's store-to-load forwarding forwards zero instead of the stored value
  (`codegen.replay._forwarded`'s values made ``v - v``);
* ``scale-classified-atomic``: ``a[i] *= v`` and ``a[i] /= v`` taken for atomics (``_compat.is_atomic_augmented``
  always true), so the Tape never sees their read and never snapshots it.

A mutant changes generated code without changing a module's hash: each batch module has a name of its own (the
process id and a counter), so Warp's kernel cache never serves a mutated build to an unmutated run or back.
"""

from __future__ import annotations

import contextlib

from warp_zerostore import _compat
from warp_zerostore.codegen import replay, store_rewrite
from warp_zerostore.tape import tape as tape_module


@contextlib.contextmanager
def _patched(owner, name: str, value):
    original = getattr(owner, name)
    setattr(owner, name, value)
    try:
        yield
    finally:
        setattr(owner, name, original)


@contextlib.contextmanager
def snapshot_save():
    with _patched(tape_module.Tape, "_save_snapshots", lambda self, launch: None):
        yield


@contextlib.contextmanager
def store_zeroing():
    saved = {key: dict(modes) for key, modes in store_rewrite.STORE_ADJOINTS.items()}
    for modes in store_rewrite.STORE_ADJOINTS.values():
        modes[True] = modes[False]
    try:
        yield
    finally:
        for key, modes in saved.items():
            store_rewrite.STORE_ADJOINTS[key].update(modes)


@contextlib.contextmanager
def replay_forwarding():
    original = replay._forwarded

    def forwarded(fn, scan):
        return {line: f"({value} - {value})" for line, value in original(fn, scan).items()}

    with _patched(replay, "_forwarded", forwarded):
        yield


@contextlib.contextmanager
def scale_classified_atomic():
    with _patched(_compat, "is_atomic_augmented", lambda op: True):
        yield


MUTANTS = {
    "snapshot-save": snapshot_save,
    "store-zeroing": store_zeroing,
    "replay-forwarding": replay_forwarding,
    "scale-classified-atomic": scale_classified_atomic,
}

__all__ = ["MUTANTS"]
