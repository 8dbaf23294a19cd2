"""The program fuzzer catches this package broken on purpose: the snapshot save, the store zeroing, the
replay's store-to-load forwarding and the classification of ``*=`` (tests/helpers/program_mutants.py), each on a
small program that exercises it, one build. Each is caught as a failure no known entry, warning or count explains
(worse than stock where stock is right); the negative twins, unmutated, report nothing of the kind.
``benchmarks/fuzz_programs_mutants.py`` gives each a one-minute campaign of drawn programs instead.
"""

import dataclasses

import numpy as np
import pytest
from helpers import program_mutants

from warp_zerostore import _compat
from warp_zerostore.differential import campaign, check, paths
from warp_zerostore.testing.fuzz.nodes import Binary, Load, Store, Unary
from warp_zerostore.testing.fuzz.nodes import Program as KernelProgram
from warp_zerostore.testing.fuzz.programs.grammar import ProgramCase
from warp_zerostore.testing.fuzz.programs.nodes import Array, Kernel, Launch, Program
from warp_zerostore.testing.fuzz.programs.shrink import constructs

ARRAYS = (Array("s0", "f"), Array("s1", "f"), Array("v0", "v"), Array("v1", "v"), Array("c0", "acc"))
DATA = {
    "s0": np.array([0.5, -0.25, 0.75, 1.0]),
    "s1": np.array([0.1, 0.2, 0.3, 0.4]),
    "v0": np.zeros((4, 3)),
    "v1": np.zeros((4, 3)),
    "c0": np.zeros(2),
}
COT = {"s0": np.array([1.0, 2.0, 3.0, 4.0]), "s1": np.array([-1.0, 0.5, 2.0, 1.5])}
COT.update(v0=np.ones((4, 3)), v1=np.ones((4, 3)), c0=np.ones(2))


def _kernel(*body) -> Kernel:
    return Kernel(KernelProgram("float64", (), (), (), tuple(body)))


def _launch(k, x, y) -> Launch:
    return Launch(k, (("x", x), ("xv", "v0"), ("y", y), ("acc", "c0")))


def _case(kernels, body) -> ProgramCase:
    return ProgramCase(Program("float64", (4,), ARRAYS, tuple(kernels), body=tuple(body)), {}, DATA, COT)


SIN_SQUARE = _kernel(Store("y", "=", Binary("mul", Unary("sin", Load("x")), Load("x"))))
# s1 = sin(s0) s0, then s0 = sin(s1) s1: the second launch overwrites what the first read (the snapshot Tape's job)
ACROSS_LAUNCHES = _case([SIN_SQUARE], [_launch(0, "s0", "s1"), _launch(0, "s1", "s0")])
# s1 = s0 s0, then s1 = sin(s0): an overwrite (the store zeroing's job; stock zeroes too from warp-lang 1.13)
OVERWRITE = _case(
    [_kernel(Store("y", "=", Binary("mul", Load("x"), Load("x")))), _kernel(Store("y", "=", Unary("sin", Load("x"))))],
    [_launch(0, "s0", "s1"), _launch(1, "s0", "s1")],
)
# y = x x; y = sin(y) x: a load of what the thread stored (the replay's forwarding, on either Tape)
READ_BACK = _case(
    [
        _kernel(
            Store("y", "=", Binary("mul", Load("x"), Load("x"))),
            Store("y", "=", Binary("mul", Unary("sin", Load("y")), Load("x"))),
        )
    ],
    [_launch(0, "s0", "s1")],
)
# y *= sin(x): an in-place update in one statement (its read is what the snapshot Tape must save)
SCALE = _case([_kernel(Store("y", "*=", Unary("sin", Load("x"))))], [_launch(0, "s0", "s1")])


def _unexplained(checked) -> list:
    found = []
    for failure in checked.failures:
        if not campaign.explanation(failure, constructs(failure.case.program)):
            found.append((failure.path, failure.kind, failure.worse))
    return found


CASES = {
    "snapshot-save": ACROSS_LAUNCHES,
    "store-zeroing": OVERWRITE,
    "replay-forwarding": READ_BACK,
    "scale-classified-atomic": SCALE,
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_each_mutant_is_caught_and_its_twin_reports_nothing(name):
    case = CASES[name]
    assert _unexplained(check.check_batch([case], bridge_every=0)) == []  # the negative twin
    # a copy of the program: fresh kernels (the access analysis and the replay are per kernel)
    fresh = dataclasses.replace(case, program=dataclasses.replace(case.program, dtype="float64"))
    with program_mutants.MUTANTS[name]():
        caught = _unexplained(check.check_batch([fresh], bridge_every=0))
    assert caught, f"mutant {name} not caught"
    paths_caught = {path for path, _, _ in caught}
    assert paths_caught <= set(paths.TAPE_PATHS)
    if name == "store-zeroing" and _compat.STOCK_STORE_ZEROES:
        assert (("zero_store", "plain"), "gradient", True) in caught  # stock zeroes: worse than stock
    if name in ("snapshot-save", "scale-classified-atomic", "replay-forwarding"):
        assert any(path[1] == "snapshot" for path in paths_caught)
