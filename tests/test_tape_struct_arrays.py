"""Arrays inside a ``@wp.struct`` argument are followed by the Tape's checks and snapshots like array arguments,
labelled by their path (``"s.q"``, ``"n.state.q"``): a stale read through a struct-held array is named, and a
snapshot Tape gives the gradient central differences give where a plain Tape does not. The read twin marks the
elements read through a struct (``s.q[0]`` only: a store into ``s.q[1]`` is no stale read). Each detector test has
its negative twin
(the later launch writes another array: nothing is reported, and every Tape agrees with central differences). A
struct of scalars is not reported; a struct passed to a generic parameter (fields unknown from the kernel) is still
reported "not checked", and ``check`` exits "unchecked" for it.
"""

import warnings
from typing import Any

import numpy as np
import pytest

import warp_zerostore as wp
from warp_zerostore.cli import check as check_command
from warp_zerostore.tape import tape as tape_module


@wp.struct
class State:
    q: wp.array(dtype=float)


@wp.struct
class Nested:
    state: State


@wp.struct
class Params:
    k: float


@wp.kernel
def square_from_struct(s: State, out: wp.array(dtype=float)):
    i = wp.tid()
    out[i] = s.q[i] * s.q[i]


@wp.kernel
def square_from_nested(n: Nested, out: wp.array(dtype=float)):
    i = wp.tid()
    out[i] = n.state.q[i] * n.state.q[i]


@wp.kernel
def step_in_struct(s: State, out: wp.array(dtype=float)):
    i = wp.tid()
    out[i] = s.q[i] * s.q[i]
    s.q[i] = 0.0


@wp.kernel
def square_generic(s: Any, out: wp.array(dtype=float)):
    i = wp.tid()
    out[i] = s.q[i] * s.q[i]


@wp.kernel
def fill_half(x: wp.array(dtype=float)):
    x[wp.tid()] = 0.5


@wp.kernel
def total(out: wp.array(dtype=float), loss: wp.array(dtype=float)):
    wp.atomic_add(loss, 0, out[wp.tid()])


@wp.kernel
def scale_by(p: Params, x: wp.array(dtype=float), out: wp.array(dtype=float)):
    i = wp.tid()
    out[i] = p.k * x[i]


Q = [3.0, -1.5]


def holder(kind: str, q):
    """The struct argument a kernel reads ``q`` through, and that kernel."""
    s = State()
    s.q = q
    if kind == "struct":
        return s, square_from_struct
    n = Nested()
    n.state = s
    return n, square_from_nested


def program(tape, kind: str, q0, overwrite: bool):
    """loss = sum(q0**2), read through a struct; then ``q`` overwritten (``overwrite``) or another array.
    Returns the loss and d loss / d q0 through ``tape`` (None: no Tape, the loss only)."""
    q = wp.array(q0, dtype=float, requires_grad=True)
    other = wp.array(q0, dtype=float, requires_grad=True)
    out = wp.zeros(len(q0), dtype=float, requires_grad=True)
    loss = wp.zeros(1, dtype=float, requires_grad=True)
    arg, kernel = holder(kind, q)
    if tape is None:
        wp.launch(kernel, dim=len(q0), inputs=[arg, out])
        wp.launch(fill_half, dim=len(q0), inputs=[q if overwrite else other])
        wp.launch(total, dim=len(q0), inputs=[out, loss])
        return float(loss.numpy()[0]), None
    with tape:
        wp.launch(kernel, dim=len(q0), inputs=[arg, out])
        wp.launch(fill_half, dim=len(q0), inputs=[q if overwrite else other])
        wp.launch(total, dim=len(q0), inputs=[out, loss])
    tape.backward(loss)
    return float(loss.numpy()[0]), q.grad.numpy().copy()


def central_differences(kind: str, overwrite: bool, eps: float = 1e-2) -> np.ndarray:
    grad = []
    for i in range(len(Q)):
        up, down = list(Q), list(Q)
        up[i] += eps
        down[i] -= eps
        grad.append((program(None, kind, up, overwrite)[0] - program(None, kind, down, overwrite)[0]) / (2 * eps))
    return np.array(grad)


@pytest.mark.parametrize("kind, label", [("struct", "s.q"), ("nested", "n.state.q")])
def test_a_stale_read_through_a_struct_held_array_is_named(kind, label):
    tape = wp.Tape(check="warn")
    with pytest.warns(wp.OverwriteWarning, match=rf"stale read: kernel 'fill_half'.*argument '{label}' reads"):
        program(tape, kind, Q, overwrite=True)
    stale = [h for h in tape.hazards if h.kind == tape_module.STALE_READ]
    assert [(h.reader.argument, h.writer.argument) for h in stale] == [(label, "x")]
    assert tape_module.IN_STRUCT not in [h.kind for h in tape.hazards]
    summary = check_command._summary(tape.hazards)
    assert "1 hazard(s)" in summary and "NOT CHECKED" not in summary


@pytest.mark.parametrize("kind", ["struct", "nested"])
def test_the_struct_held_array_left_alone_is_not_reported(kind):
    tape = wp.Tape(check="warn")
    with warnings.catch_warnings():
        warnings.simplefilter("error", wp.OverwriteWarning)
        program(tape, kind, Q, overwrite=False)
    assert tape.hazards == []
    assert "0 hazard(s)" in check_command._summary(tape.hazards)


@pytest.mark.parametrize("kind", ["struct", "nested"])
def test_snapshots_restore_a_struct_held_array_to_central_differences(kind):
    fd = central_differences(kind, overwrite=True)
    np.testing.assert_allclose(fd, 2 * np.array(Q), rtol=1e-3)
    _, plain = program(wp.Tape(), kind, Q, overwrite=True)
    _, snapshot = program(wp.Tape(snapshot=True), kind, Q, overwrite=True)
    np.testing.assert_allclose(snapshot, fd, rtol=1e-3)
    assert not np.allclose(plain, fd, rtol=1e-2)  # the plain Tape re-reads the 0.5 stored over q


@pytest.mark.parametrize("kind", ["struct", "nested"])
def test_without_the_overwrite_every_tape_agrees_with_central_differences(kind):
    fd = central_differences(kind, overwrite=False)
    for tape in (wp.Tape(), wp.Tape(snapshot=True), wp.Tape(check="error")):
        _, grad = program(tape, kind, Q, overwrite=False)
        np.testing.assert_allclose(grad, fd, rtol=1e-3)


def test_a_kernel_overwriting_its_struct_held_input_is_named_and_snapshotted():
    s = State()
    s.q = wp.array([3.0], dtype=float, requires_grad=True)
    out = wp.zeros(1, dtype=float, requires_grad=True)
    tape = wp.Tape(check="warn")
    with pytest.warns(wp.OverwriteWarning, match=r"stale read: kernel 'step_in_struct'.*argument 's.q'"):
        with tape:
            wp.launch(step_in_struct, dim=1, inputs=[s, out])
    assert [h.kind for h in tape.hazards] == [tape_module.STALE_READ]
    s.q = wp.array([3.0], dtype=float, requires_grad=True)
    out = wp.zeros(1, dtype=float, requires_grad=True)
    tape = wp.Tape(snapshot=True)
    with tape:
        wp.launch(step_in_struct, dim=1, inputs=[s, out])
    tape.backward(grads={out: wp.ones(1, dtype=float)})
    assert s.q.grad.numpy()[0] == pytest.approx(6.0)  # d(q**2)/dq at 3; a plain Tape re-reads the stored 0
    assert s.q.numpy()[0] == 0.0  # the forward's final value, back after backward()


@wp.kernel
def square_first(s: State, out: wp.array(dtype=float)):
    out[0] = s.q[0] * s.q[0]


@wp.kernel
def store_at(x: wp.array(dtype=float), j: int):
    x[j] = 7.0


@pytest.mark.parametrize("element, reported", [(0, True), (1, False)])
def test_reads_through_a_struct_are_element_precise(element, reported):
    # The read twin marks s.q[0] only: a later store into s.q[1] is no stale read, one into s.q[0] is; and the
    # twin, run on a copy of the struct's array, leaves the real one as the forward left it.
    s = State()
    s.q = wp.array([3.0, 2.0], dtype=float, requires_grad=True)
    out = wp.zeros(1, dtype=float, requires_grad=True)
    tape = wp.Tape(check="warn")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", wp.OverwriteWarning)
        with tape:
            wp.launch(square_first, dim=1, inputs=[s, out])
            wp.launch(store_at, dim=1, inputs=[s.q, element])
    stale = [(h.reader.kernel, h.reader.argument) for h in tape.hazards if h.kind == tape_module.STALE_READ]
    assert stale == ([("square_first", "s.q")] if reported else [])
    assert out.numpy().tolist() == [9.0]
    assert s.q.numpy().tolist() == ([7.0, 2.0] if element == 0 else [3.0, 7.0])


def test_a_struct_passed_to_a_generic_parameter_is_still_reported_as_not_checked():
    # The kernel does not say which struct it takes, so the Tape does not know its fields: it says so, and `check`
    # exits "unchecked" rather than claim 0 hazards.
    s = State()
    s.q = wp.array([3.0], dtype=float, requires_grad=True)
    out = wp.zeros(1, dtype=float, requires_grad=True)
    tape = wp.Tape(check="warn")
    with pytest.warns(wp.OverwriteWarning, match=r"not checked \(arrays in a struct\).*'square_generic'.*generic"):
        with tape:
            wp.launch(square_generic, dim=1, inputs=[s, out])
    assert [h.kind for h in tape.hazards] == [tape_module.IN_STRUCT]
    summary = check_command._summary(tape.hazards)
    assert "0 hazard(s)" in summary and "NOT CHECKED" in summary


def test_a_struct_of_scalars_is_not_reported():
    p = Params()
    p.k = 2.0
    x = wp.array([1.0], dtype=float, requires_grad=True)
    out = wp.zeros(1, dtype=float, requires_grad=True)
    tape = wp.Tape(check="warn")
    with warnings.catch_warnings():
        warnings.simplefilter("error", wp.OverwriteWarning)
        with tape:
            wp.launch(scale_by, dim=1, inputs=[p, x, out])
    assert not tape.hazards
