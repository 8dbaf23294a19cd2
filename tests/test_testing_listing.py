"""A failing drawn program prints as its launch listing in hypothesis's own output."""

import numpy as np
import pytest
from helpers import kernels_checks as K
from hypothesis import HealthCheck, given, settings
from hypothesis.vendor.pretty import pretty

import warp_zerostore as wp
from warp_zerostore.testing import Launch, Op, Program, programs

F32 = {"x": wp.float32, "y": wp.float32}
DOUBLE = Op(K.double, reads="src", writes="dst", linear="src")


def test_program_pretty_prints_as_its_listing():
    program = Program(
        shape=(2,),
        dtypes=F32,
        launches=(Launch(DOUBLE, {"src": "x", "dst": "y"}, 0, 2),),
        data={"x": np.array([1.0, 2.0]), "y": np.zeros(2)},
    )
    assert pretty(program) == repr(program)
    assert "double(src=x, dst=y) on [0:2]" in pretty(program)
    assert "kernel=" not in pretty(program)


def test_falsifying_example_is_the_listing():
    @settings(database=None, derandomize=True, max_examples=5, suppress_health_check=list(HealthCheck))
    @given(program=programs([DOUBLE], F32, max_launches=2))
    def always_fails(program):
        raise AssertionError("fails on purpose")

    with pytest.raises(AssertionError) as info:
        always_fails()
    notes = "\n".join(getattr(info.value, "__notes__", []))
    assert "Falsifying example" in notes or "Failing test case" in notes  # hypothesis < 6.16x / newer
    assert "launches:" in notes and "double(src=" in notes
    assert "Launch(op=" not in notes and "kernel=" not in notes
