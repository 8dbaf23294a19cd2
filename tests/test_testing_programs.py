"""warp_zerostore.testing programs: Op descriptions, drawn launch sequences, replay hazards, shrinking."""

import numpy as np
import pytest
from helpers import kernels_property as kp
from helpers import kernels_testing as kt
from hypothesis import HealthCheck, Phase, find, given, settings
from hypothesis import strategies as st

import warp_zerostore as wp
from warp_zerostore.testing import GradientMismatch, Launch, Op, Program, check_gradients, programs, reference

F32 = {name: wp.float32 for name in ("x0", "x1", "t0", "t1", "t2")}
SCALED_SUM = Op(
    kt.scaled_sum,
    reads=("a", "b"),
    writes="dst",
    linear=("a", "b"),
    offset="off",
    args={"alpha": st.sampled_from([0.5, -2.0])},
)
FIND = settings(database=None, derandomize=True, max_examples=300, suppress_health_check=list(HealthCheck))


@given(program=programs(kp.OPS[("float32", True)] + [SCALED_SUM], F32, min_launches=2, max_launches=5))
def test_drawn_programs_are_well_formed(program):
    assert 2 <= len(program.launches) <= 5 and len(program.shape) == 1
    n = program.shape[0]
    for launch in program.launches:
        assert 0 <= launch.start < launch.start + launch.count <= n
        assert set(launch.bind) == set(launch.op.reads) | set(launch.op.writes)
        assert set(launch.bind.values()) <= set(F32)
        if launch.op is SCALED_SUM:
            assert launch.args["alpha"] in (0.5, -2.0)
    assert program.hazards() == []
    assert set(program.data) == set(F32) and all(v.shape == program.shape for v in program.data.values())
    assert set(program.written) <= set(F32)


@given(program=programs(kp.OPS[("float32", True)] + [SCALED_SUM], F32))
def test_drawn_programs_run_on_a_tape_and_pass_in_zero_mode(program):
    check_gradients(program, program.arrays())


def test_replay_unsafe_programs_are_drawn_only_when_asked_and_hazards_names_them():
    unsafe = programs(kp.OPS[("float32", True)], F32, replay_safe=False)
    hazardous = find(unsafe, lambda p: bool(p.hazards()), settings=settings(FIND, phases=[Phase.generate]))
    assert "its backward pass needs that value" in hazardous.hazards()[0]
    assert any(launch.op.name == "mul" for launch in hazardous.launches)


def mul_then_overwrite(flag):
    """t0 = x0 * x1, then x0 = 2 * x1 overwrites the x0 that mul's backward pass needs."""
    ops = {op.name: op for op in kp.OPS[("float32", flag)]}
    launches = (
        Launch(ops["mul"], {"a": "x0", "b": "x1", "dst": "t0"}, 0, 2),
        Launch(ops["scale"], {"src": "x1", "dst": "x0"}, 0, 2),
    )
    data = {name: np.array([0.5, -1.5]) + i for i, name in enumerate(F32)}
    return Program(shape=(2,), dtypes=F32, launches=launches, data=data)


def test_a_replay_hazard_gives_wrong_gradients_in_zero_mode_too():
    """Why programs() avoids hazards by default: Warp's backward replays mul against the new x0, so even
    zero mode is wrong, and check_gradients (like the reference, which saves what each launch read) says so."""
    program = mul_then_overwrite(True)
    assert len(program.hazards()) == 1 and "launch 1" in program.hazards()[0]
    with pytest.raises(GradientMismatch) as failure:
        check_gradients(program, program.arrays())
    assert failure.value.array in ("x1", "t0", "x0")


def test_shrinking_gives_a_minimal_failing_program():
    """hypothesis shrinks a failing program: in accumulate mode, one launch over one element already fails."""

    def fails(program):
        try:
            check_gradients(program, program.arrays())
        except GradientMismatch:
            return True
        return False

    pool = {name: wp.float32 for name in ("x", "y", "z")}
    minimal = find(programs(kp.OPS[("float32", False)], pool, max_launches=4), fails, settings=FIND)
    assert len(minimal.launches) == 1 and minimal.shape == (1,)
    assert repr(minimal).splitlines()[1] == "  0: scale(src=x, dst=x, off=0) on [0:1]"


def test_generic_ops_bind_arrays_of_one_dtype():
    pool = {"a": wp.float32, "b": wp.float64, "c": wp.float32, "d": wp.float64}
    op = Op(kt.cube_generic, reads="x", writes="y")

    @settings(max_examples=20)
    @given(program=programs([op], pool, max_launches=3))
    def check(program):
        for launch in program.launches:
            assert program.dtypes[launch.bind["x"]] is program.dtypes[launch.bind["y"]]
        result = check_gradients(program, program.arrays())
        assert result.precision == "float64"

    check()


def test_program_repr_with_kernels_and_call():
    program = mul_then_overwrite(True)
    text = repr(program)
    assert "0: mul(a=x0, b=x1, dst=t0, off=0) on [0:2]" in text and "data x0 = [0.5, -1.5]" in text
    accumulate = program.with_kernels(kp.KERNELS[("float32", False)])
    assert [l.op.kernel for l in accumulate.launches] == [kp.KERNELS[("float32", False)][n] for n in ("mul", "scale")]
    assert repr(accumulate) == text
    arrays = program.arrays()
    program(**arrays)
    assert arrays["x0"].numpy().tolist() == [3.0, -1.0]
    with pytest.raises(TypeError, match="missing arrays"):
        program(x0=arrays["x0"])
    with pytest.raises(KeyError, match="no kernel for op 'mul'"):
        program.with_kernels({"scale": kp.KERNELS[("float32", False)]["scale"]})


def test_reference_interprets_drawn_programs():
    """The reference takes the same Program objects (by duck typing; it imports none of this package)."""
    program = mul_then_overwrite(True)
    final = reference.forward(program, kp.RULES)
    assert final["t0"].tolist() == [0.5 * 1.5, -1.5 * -0.5] and final["x0"].tolist() == [3.0, -1.0]


def test_op_descriptions_are_checked():
    scale = kp.KERNELS[("float32", True)]["scale"]
    with pytest.raises(ValueError, match=r"reads names 'source', which is not an array parameter .*src, dst"):
        Op(scale, reads="source", writes="dst", offset="off")
    with pytest.raises(ValueError, match=r"parameter 'off' is not described; .*args=\{'off': ...\}"):
        Op(scale, reads="src", writes="dst")
    with pytest.raises(ValueError, match=r"parameter 'src' is not described; it is an array parameter"):
        Op(scale, writes="dst", offset="off")
    with pytest.raises(ValueError, match="linear names 'dst', which is not in reads"):
        Op(scale, reads="src", writes="dst", linear="dst", offset="off")
    with pytest.raises(ValueError, match="writes is empty"):
        Op(scale, reads=("src", "dst"), offset="off")
    with pytest.raises(ValueError, match="offset names 'src'"):
        Op(scale, reads="src", writes="dst", offset="src", args={"off": 0})
    in_place = Op(kp.KERNELS[("float32", True)]["axpy"], reads=("dst", "src"), writes="dst", offset="off")
    with pytest.raises(ValueError, match=r"reads 'dst' \(not linear\) and stores to it.*replay_safe=False"):
        programs([in_place], F32)
    with pytest.raises(ValueError, match="no array in .* matches parameter 'src'"):
        programs(kp.OPS[("float64", True)], F32)
