"""``wp.read_at_backward(u)``: the user's word that the backward must read ``u`` as it is at ``backward()`` (the
adjoint method: the residual recorded at ``u = 0``, ``u`` solved outside the Tape, the residual's adjoint read at
the solution).

Without it, the change after record is reported as real by ``check`` and refused by name by the snapshot Tape, and
the advice names both cases (a bug, or the adjoint method: declare it). With it, ``check`` reports nothing and the
snapshot Tape gives the plain Tape's gradient bitwise. It exempts only changes outside recorded launches: a stale
read by a recorded in-place launch is still reported, and still snapshotted and restored (negative twin).
"""

import gc
import warnings

import numpy as np
import pytest

import warp_zerostore as wp
from warp_zerostore.tape import intent
from warp_zerostore.tape.tape import MUTATED, STALE_READ, OverwriteError


@wp.kernel
def residual(u: wp.array(dtype=float), k: wp.array(dtype=float), r: wp.array(dtype=float)):
    i = wp.tid()
    r[i] = k[i] * u[i] * u[i]


@wp.kernel
def total(r: wp.array(dtype=float), loss: wp.array(dtype=float)):
    wp.atomic_add(loss, 0, r[wp.tid()])


@wp.kernel(zero_store=True)  # its store adjoint zeroes on every Warp version: no overwrite leak
def square_in_place(u: wp.array(dtype=float)):
    i = wp.tid()
    u[i] = u[i] * u[i]


SOLUTION = [3.0, -4.0, 0.5]


def adjoint_method(tape, declare=None, view: bool = False):
    """r = k * u^2 recorded at u = 0; u solved (assigned) outside the Tape; loss = sum r recorded after. Returns
    k.grad (or the OverwriteError) and the hazards; ``declare(u)`` is called after the solve."""
    u = wp.zeros(4, dtype=float, requires_grad=True)
    read = u[1:4] if view else u[0:3]
    k = wp.array([1.0, 2.0, 3.0], dtype=float, requires_grad=True)
    r = wp.zeros(3, dtype=float, requires_grad=True)
    loss = wp.zeros(1, dtype=float, requires_grad=True)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", wp.OverwriteWarning)
        with tape:
            wp.launch(residual, dim=3, inputs=[read, k, r])
        read.assign(SOLUTION)  # the solve
        if declare is not None:
            declare(u, read)
        with tape:
            wp.launch(total, dim=3, inputs=[r, loss])
        try:
            tape.backward(loss)
        except OverwriteError as error:
            return error, list(getattr(tape, "hazards", []))
    return k.grad.numpy().copy(), list(getattr(tape, "hazards", []))


PLAIN = np.array([s * s for s in SOLUTION], dtype=np.float32)


def test_the_plain_tape_reads_the_solution():
    assert np.array_equal(adjoint_method(wp.Tape())[0], PLAIN)


def test_without_the_declaration_check_reports_the_change_as_real_with_both_cases_in_its_advice():
    grad, hazards = adjoint_method(wp.Tape(check="warn"))
    assert np.array_equal(grad, PLAIN)  # check never changes a gradient
    assert [(h.kind, h.real) for h in hazards] == [(MUTATED, True)]
    advice = hazards[0].message()
    assert "bug" in advice and "alias" in advice and "untaped write-back" in advice
    assert "adjoint method" in advice and "read_at_backward" in advice


def test_without_the_declaration_the_snapshot_tape_refuses_by_name():
    found, _ = adjoint_method(wp.Tape(snapshot=True))
    assert isinstance(found, OverwriteError)
    assert "mutated after record" in str(found) and "'residual'" in str(found) and "'u'" in str(found)


@pytest.mark.parametrize("options", [{"check": "warn"}, {"snapshot": True}, {"check": "warn", "snapshot": True}])
def test_with_the_declaration_every_tape_gives_the_plain_gradient_and_reports_nothing(options):
    grad, hazards = adjoint_method(wp.Tape(**options), declare=lambda u, read: wp.read_at_backward(u))
    try:
        assert np.array_equal(grad, PLAIN), grad
        assert hazards == []
    finally:
        intent._DECLARED.clear()


def test_a_declaration_of_the_array_covers_a_view_of_it_and_not_the_reverse():
    declared_whole = adjoint_method(wp.Tape(snapshot=True), declare=lambda u, read: wp.read_at_backward(u), view=True)
    intent._DECLARED.clear()
    assert np.array_equal(declared_whole[0], PLAIN)
    held = []

    def declare_a_part(u, read):
        held.append(u[1:2])  # a view of one element of the three the launch read
        wp.read_at_backward(held[0])

    declared_part = adjoint_method(wp.Tape(snapshot=True), declare=declare_a_part, view=True)
    intent._DECLARED.clear()
    assert isinstance(declared_part[0], OverwriteError)


def test_the_context_form_withdraws_the_declaration_when_the_block_ends():
    u = wp.zeros(2, dtype=float)
    with wp.read_at_backward(u) as declaration:
        assert intent.is_declared(u) and declaration.arrays == (u,)
    assert not intent.is_declared(u)

    def declare_then_withdraw(u, read):
        with wp.read_at_backward(u):
            pass

    found, _ = adjoint_method(wp.Tape(snapshot=True), declare=declare_then_withdraw)
    assert isinstance(found, OverwriteError)


def test_a_freed_array_is_no_longer_declared():
    u = wp.zeros(2, dtype=float)
    wp.read_at_backward(u)
    assert len(intent._DECLARED) == 1
    del u
    gc.collect()
    assert len(intent._DECLARED) == 0


def test_anything_but_an_array_is_refused_by_name():
    with pytest.raises(TypeError, match=r"read_at_backward: argument 1 is a list, not a wp.array"):
        wp.read_at_backward(wp.zeros(1), [1.0])


# -- the negative twin: changes by recorded launches are not exempted


def in_place_after_a_reader(tape):
    """loss = sum(k * u0^2) + sum(u0^2, squared in place): the residual's reader is followed by a recorded
    in-place launch; d loss / d u0 = 2 k u0 + 2 u0 needs the reader's backward to read u0."""
    u = wp.array(SOLUTION, dtype=float, requires_grad=True)
    wp.read_at_backward(u)
    k = wp.array([1.0, 2.0, 3.0], dtype=float, requires_grad=True)
    r = wp.zeros(3, dtype=float, requires_grad=True)
    loss = wp.zeros(1, dtype=float, requires_grad=True)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", wp.OverwriteWarning)
        with tape:
            wp.launch(residual, dim=3, inputs=[u, k, r])
            wp.launch(square_in_place, dim=3, inputs=[u])
            wp.launch(total, dim=3, inputs=[r, loss])
            wp.launch(total, dim=3, inputs=[u, loss])
        tape.backward(loss)
    return u.grad.numpy().copy(), list(getattr(tape, "hazards", []))


def test_a_declared_array_overwritten_by_a_recorded_launch_is_still_reported_and_restored():
    try:
        _, hazards = in_place_after_a_reader(wp.Tape(check="warn"))
        assert STALE_READ in {h.kind for h in hazards if h.real}
        grad, _ = in_place_after_a_reader(wp.Tape(snapshot=True))
        u0, k = np.array(SOLUTION), np.array([1.0, 2.0, 3.0])
        assert np.allclose(grad, 2 * k * u0 + 2 * u0)
        assert not np.allclose(in_place_after_a_reader(wp.Tape())[0], grad)  # the plain Tape's stale read
    finally:
        intent._DECLARED.clear()
