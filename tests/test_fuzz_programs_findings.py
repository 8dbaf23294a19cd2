"""What the program fuzzer found, each shrunk and cut down by hand, as tests: this package's defects as
tests of the fix (each was an ``xfail(strict=True)`` until fixed; their repros say so), and
Warp's own as tests of the known table (``testing.fuzz.programs.known``), with repros under docs/repros/.
"""

import numpy as np
import pytest

import warp_zerostore as wp
from warp_zerostore.testing.fuzz.programs.nodes import Array, Copy, Kernel, Launch, Program


@wp.kernel
def _alias_update_then_read_stock(
    xv: wp.array(dtype=wp.vec3d), y: wp.array(dtype=wp.float64), yv: wp.array(dtype=wp.vec3d)
):
    i = wp.tid()
    yv[i] += yv[i]
    y[i] += wp.dot(xv[i], yv[i])


@wp.kernel(zero_store=True)
def _alias_update_then_read(xv: wp.array(dtype=wp.vec3d), y: wp.array(dtype=wp.float64), yv: wp.array(dtype=wp.vec3d)):
    i = wp.tid()
    yv[i] += yv[i]
    y[i] += wp.dot(xv[i], yv[i])


V0 = np.array([[0.5, -0.25, 1.0], [0.75, 0.5, -1.0]])


def _alias_gradient(kernel, tape) -> np.ndarray:
    v = wp.array(V0, dtype=wp.vec3d, requires_grad=True)
    y = wp.zeros(2, dtype=wp.float64, requires_grad=True)
    with tape:
        wp.launch(kernel, dim=2, inputs=[v, y, v])  # one array under two parameters
    tape.backward(grads={y: wp.ones(2, dtype=wp.float64), v: wp.ones(2, dtype=wp.vec3d)})
    return v.grad.numpy()


def test_one_array_updated_through_one_parameter_and_read_through_another_is_right_stock_and_plain():
    """The negative twins of the defect below: stock on every Tape, and the flagged kernel on a plain and a check
    Tape, give 8 v + 2."""
    for kernel in (_alias_update_then_read_stock, _alias_update_then_read):
        for tape in (wp.Tape(), wp.Tape(check="warn")):
            np.testing.assert_allclose(_alias_gradient(kernel, tape), 8 * V0 + 2)
    np.testing.assert_allclose(_alias_gradient(_alias_update_then_read_stock, wp.Tape(snapshot=True)), 8 * V0 + 2)


def test_one_array_updated_through_one_parameter_and_read_through_another_is_right_flagged_on_a_snapshot_tape():
    """Was worse than stock (docs/repros/zero_store_snapshot_alias_update_then_read.py): the PRE backward's log
    follows a store to later loads of the same parameter only; the Tape now runs the kernel's own backward on
    memory as the launch left it for such a launch."""
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        got = _alias_gradient(_alias_update_then_read, wp.Tape(snapshot=True))
    np.testing.assert_allclose(got, 8 * V0 + 2)


@wp.kernel
def _square(x: wp.array(dtype=float), y: wp.array(dtype=float)):
    i = wp.tid()
    y[i] = x[i] * x[i]


@wp.kernel(enable_backward=False)
def _clear_forward_only(y: wp.array(dtype=float)):
    i = wp.tid()
    y[i] = 0.0


def _checked(*launches, grads=None):
    """A checking Tape over ``(kernel, inputs)`` launches of dim 2 (warnings kept out), then backward with ``grads``."""
    import warnings

    tape = wp.Tape(check="warn")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with tape:
            for kernel, inputs in launches:
                wp.launch(kernel, dim=2, inputs=inputs)
        if grads is not None:
            tape.backward(grads=grads)
    return tape


def test_an_overwrite_by_a_forward_only_kernel_is_reported_as_real():
    """Was labelled safe from warp-lang 1.13 (docs/repros/check_forward_only_overwrite_labelled_safe.py)."""
    x = wp.array([0.5, -1.0], dtype=float, requires_grad=True)
    y = wp.zeros(2, dtype=float, requires_grad=True)
    tape = _checked((_square, [x, y]), (_clear_forward_only, [y]), grads={y: wp.ones(2, dtype=float)})
    assert x.grad.numpy().tolist() == [1.0, -2.0]  # every Tape: y's seed flows through the first launch
    assert [(h.kind, h.real, h.cause) for h in tape.hazards] == [("overwrite", True, "no backward")]
    assert "enable_backward=False" in tape.hazards[0].message()


@wp.kernel(enable_backward=False)
def _fill_forward_only(y: wp.array(dtype=float), value: float):
    i = wp.tid()
    y[i] = value


def test_an_overwrite_of_what_a_forward_only_kernel_wrote_is_real_too():
    """What leaks is not lost in the earlier launch without an adjoint: it stays in y.grad and reaches what that
    launch wrote over (here an input a recorded launch read). Labelling this safe made the program fuzzer's fixed
    campaign find a check miss."""
    y = wp.array([2.0, 3.0], dtype=float, requires_grad=True)
    z = wp.zeros(2, dtype=float, requires_grad=True)
    tape = _checked(
        (_square, [y, z]),  # reads y's input values
        (_fill_forward_only, [y, 3.0]),
        (_fill_forward_only, [y, 4.0]),
        grads={y: wp.ones(2, dtype=float), z: wp.zeros(2, dtype=float)},
    )
    assert y.grad.numpy().tolist() == [1.0, 1.0]  # the right value is 0: y's seed leaked through both
    assert ("overwrite", True, "no backward") in [(h.kind, h.real, h.cause) for h in tape.hazards]


@wp.kernel(enable_backward=False)
def _accumulate_forward_only(x: wp.array(dtype=float), y: wp.array(dtype=float)):
    i = wp.tid()
    y[i] += x[i]


@wp.kernel
def _accumulate(x: wp.array(dtype=float), y: wp.array(dtype=float)):
    i = wp.tid()
    y[i] += x[i]


@pytest.mark.parametrize("kernel, reported", [(_accumulate_forward_only, True), (_accumulate, False)])
def test_an_accumulation_without_backward_over_a_recorded_write_is_an_overwrite(kernel, reported):
    """A kernel built with enable_backward=False writes constants, its `+=` too (docs/testing.md, rule 3): the
    gradient of what it wrote leaks into the earlier writer, where an accumulation with an adjoint is exact."""
    x = wp.array([0.5, -1.0], dtype=float, requires_grad=True)
    y = wp.zeros(2, dtype=float, requires_grad=True)
    tape = _checked((_square, [x, y]), (kernel, [x, y]))
    found = [(h.kind, h.real, h.cause) for h in tape.hazards if h.kind == "overwrite"]
    assert found == ([("overwrite", True, "no backward")] if reported else [])


def test_the_struct_array_scale_build_error_is_known_from_1_15():
    """Warp >= 1.15 cannot build ``s.y[i] *= v`` on a @wp.struct's array field (docs/repros/
    struct_array_scale_build.py); the program fuzzer files it as known there, as a new build error elsewhere."""
    from warp_zerostore.differential.verdicts import Failure
    from warp_zerostore.testing.fuzz.programs import known

    labels = ("array in a struct", "mulstore", "mulstore through a struct")
    failure = Failure(None, ("stock", "plain"), "build")
    assert known.match(failure, labels, "1.15.0") == "struct-array-scale-build-error"
    assert known.match(failure, labels, "1.14.0") == ""
    assert known.match(failure, ("array in a struct", "mulstore"), "1.19.0") == ""  # *= on an array not held


def test_copy_windows_are_row_major_and_their_reference_routes_the_gradient():
    """The reference of ``wp.copy(dest, src, dest_offset=1, src_offset=2, count=2)`` on 2-D arrays (a window in
    row-major order): what the program fuzzer compares Warp's copy adjoint with."""
    from warp_zerostore.testing.fuzz.programs import oracle

    arrays = (Array("s0", "f"), Array("s1", "f"), Array("v0", "v"), Array("v1", "v"), Array("c0", "acc"))
    program = Program("float64", (2, 2), arrays, (), body=(Copy("s1", "s0", 1, 2, 2),))
    data = {"s0": np.arange(4.0), "s1": np.full(4, 9.0), "v0": np.zeros((4, 3)), "v1": np.zeros((4, 3))}
    data["c0"] = np.zeros(2)
    cot = {k: np.ones_like(v) for k, v in data.items()}
    ref = oracle.reference(program, {}, data, cot)
    np.testing.assert_allclose(ref.outputs["s1"], [9.0, 2.0, 3.0, 9.0])
    np.testing.assert_allclose(ref.grads["s0"], [1.0, 1.0, 2.0, 2.0], atol=1e-8)
    assert Kernel and Launch
