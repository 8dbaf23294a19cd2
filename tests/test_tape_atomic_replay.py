"""An atomic whose returned value a kernel uses (``slot = wp.atomic_add(cursor, 0, 1)``) is named on every Tape, by
kernel, helper and line, with what the backward does there: in the kernel's body Warp's replay skips the atomic, so
the value differs; through a helper the replay runs it again, and ``cursor`` advances during ``backward()``. The
gradient stays Warp's (wrong: ``[1, 0, 0, 0]`` where ``[1, 4, 9, 16]`` is right); the report is what changes.
Negative twin: the same kernel with the atomic's return discarded gets the right gradient and no report."""

import warnings

import numpy as np
import pytest
from helpers import kernels_atomic_replay as k

import warp_zerostore as wp
from warp_zerostore.cli.check import format_report

N = 4
RIGHT = np.array([1.0, 4.0, 9.0, 16.0, 0.0, 0.0, 0.0, 0.0])  # d(x**3 / 3)/dx at 1..4; the other half unused

TAPES = {
    "plain": lambda: wp.Tape(),
    "check": lambda: wp.Tape(check="warn"),
    "snapshot": lambda: wp.Tape(snapshot=True),
}


def _run(kernel, tape):
    x = wp.array(np.arange(1.0, 2 * N + 1.0), dtype=float, requires_grad=True)
    cursor = wp.zeros(1, dtype=int)
    out = wp.zeros(2 * N, dtype=float, requires_grad=True)  # room for the slots a helper's replay claims again
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        with tape:
            wp.launch(kernel, dim=N, inputs=[x, cursor, out])
        claimed = int(cursor.numpy()[0])
        tape.backward(grads={out: wp.array([1.0] * N + [0.0] * N, dtype=float)})
    warned = [str(w.message) for w in caught if issubclass(w.category, wp.OverwriteWarning)]
    atomic = [h for h in tape.hazards if h.kind == "atomic replay"]
    return x.grad.numpy(), claimed, int(cursor.numpy()[0]), atomic, warned


@pytest.mark.parametrize("tape", sorted(TAPES))
def test_a_used_atomic_return_in_the_kernel_body_is_named(tape):
    grad, claimed, after, atomic, warned = _run(k.cube_into_claimed, TAPES[tape]())
    assert not np.allclose(grad, RIGHT)  # Warp's gradient, left as it is: the report is the remedy's start
    assert claimed == after == N  # the kernel body's replay skips the atomic
    (hazard,) = atomic
    assert hazard.real and hazard.cause == "kernel" and hazard.writer.kernel == k.cube_into_claimed.key
    assert hazard.detail.array == "cursor" and hazard.detail.at.endswith("kernels_atomic_replay.py:9")
    message = hazard.message()
    assert "the backward replays this atomic: its return differs" in message.lower()
    assert "kernels_atomic_replay.py:9" in message and "@wp.func_replay" in message
    assert len(warned) == 1 and warned[0] == message  # every Tape warns it, by name


@pytest.mark.parametrize("tape", sorted(TAPES))
def test_a_used_atomic_return_through_a_helper_names_the_helper_and_the_state_it_changes(tape):
    grad, claimed, after, atomic, warned = _run(k.cube_into_helper_claimed, TAPES[tape]())
    assert not np.allclose(grad, RIGHT)
    assert (claimed, after) == (N, 2 * N)  # the helper's atomic ran again in backward(): the forward state changed
    (hazard,) = atomic
    assert hazard.cause == "helper" and hazard.detail.helper == "claim"
    assert hazard.detail.at.endswith("kernels_atomic_replay.py:15")  # the atomic, in the helper
    assert hazard.detail.called_at.endswith("kernels_atomic_replay.py:20")  # the kernel's call of the helper
    message = hazard.message()
    assert "through a helper it changes 'cursor' again" in message and "'claim'" in message
    assert warned == [message]


def test_a_flagged_kernels_helper_replay_writes_no_memory_and_says_so():
    grad, claimed, after, atomic, warned = _run(k.cube_into_helper_claimed_flagged, wp.Tape(check="warn"))
    assert not np.allclose(grad, RIGHT)
    assert claimed == after == N  # the log variant writes no memory
    (hazard,) = atomic
    assert hazard.cause == "helper log" and "writes no memory" in hazard.message()
    assert warned == [hazard.message()]


@pytest.mark.parametrize("tape", sorted(TAPES))
def test_negative_twin_a_discarded_atomic_return_is_not_named(tape):
    grad, claimed, after, atomic, warned = _run(k.cube_and_count, TAPES[tape]())
    np.testing.assert_allclose(grad, RIGHT)
    assert claimed == after == N
    assert atomic == [] and warned == []


def test_the_check_report_lists_both_forms_and_not_the_twin():
    found = []
    for kernel in (k.cube_into_claimed, k.cube_into_helper_claimed, k.cube_and_count):
        found += _run(kernel, wp.Tape(check="warn"))[3]
    report = format_report(found)
    assert report.startswith("warp_zerostore check: 2 hazard(s)")
    assert "== atomic replay: 2" in report
    assert "kernel 'cube_into_claimed'" in report and "kernel 'cube_into_helper_claimed'" in report
    assert "cube_and_count" not in report


def test_a_kernel_without_backward_is_never_named():
    forward_only = wp.kernel(k.cube_into_claimed.func, enable_backward=False, module="unique")
    x = wp.array(np.arange(1.0, 2 * N + 1.0), dtype=float, requires_grad=True)
    tape = wp.Tape(check="warn")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with tape:
            wp.launch(forward_only, dim=N, inputs=[x, wp.zeros(1, dtype=int), wp.zeros(2 * N, dtype=float)])
    assert not [h for h in tape.hazards if h.kind == "atomic replay"]


@pytest.mark.parametrize("tape", sorted(TAPES))
def test_negative_twin_warps_remedy_a_func_replay_is_not_named_and_right(tape):
    x = wp.array(np.arange(1.0, 2 * N + 1.0), dtype=float, requires_grad=True)
    cursor, slots = wp.zeros(1, dtype=int), wp.zeros(N, dtype=int)
    out = wp.zeros(2 * N, dtype=float, requires_grad=True)
    recorder = TAPES[tape]()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        with recorder:
            wp.launch(k.cube_into_replayed_claim, dim=N, inputs=[x, cursor, slots, out])
        recorder.backward(grads={out: wp.array([1.0] * N + [0.0] * N, dtype=float)})
    np.testing.assert_allclose(x.grad.numpy(), RIGHT)  # the replay reads the slots back: right
    assert int(cursor.numpy()[0]) == N
    assert not [h for h in recorder.hazards if h.kind == "atomic replay"]
    assert not [w for w in caught if "atomic replay" in str(w.message)]
