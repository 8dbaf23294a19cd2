"""A thread that reads an element between two of its own writes in one launch: Warp's backward reads the element as
the last write left it, so no snapshot can serve that read. The checking and the snapshot Tapes name it ("read
between writes") where the backward that runs reads memory there (a stock kernel, or a flagged one whose replay
reports issues); they stayed silent before, and gave the wrong gradient. Negative twins: a read after the thread's
last write, an accumulation ``force[p] = force[p] + f`` read by later iterations (Newton's ``eval_rigid_tau``), and
a flagged kernel whose replay log serves the read; each right against the exact gradient."""

import warnings

import numpy as np
import pytest
from helpers import kernels_tape_rereads as k

import warp_zerostore as wp
from warp_zerostore import _compat

TAPES = [{"snapshot": True}, {"check": "warn"}, {"check": "warn", "snapshot": True}]


def f64(values, device, requires_grad=True):
    return wp.array(np.asarray(values, dtype=np.float64), dtype=wp.float64, device=device, requires_grad=requires_grad)


def _run(kernel, inputs, seed, wrt, device, tape_options):
    tape = wp.Tape(**tape_options)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        with tape:
            wp.launch(kernel, dim=inputs[0], inputs=inputs[1:], device=device)
        tape.backward(grads=seed)
    named = [str(w.message) for w in caught if issubclass(w.category, wp.OverwriteWarning)]
    return wrt.grad.numpy().copy(), [m for m in named if m.startswith("read between writes")]


@pytest.mark.parametrize("tape_options", TAPES, ids=["snapshot", "check", "both"])
def test_a_read_between_two_writes_is_named(tape_options, device):
    xs = np.array([0.5, 1.5])
    x, y = f64(xs, device), wp.zeros(2, dtype=wp.float64, device=device, requires_grad=True)
    grad, named = _run(
        k.reread_in_a_loop, (2, x, y, 2), {y: wp.ones(2, dtype=wp.float64, device=device)}, x, device, tape_options
    )
    assert (
        len(named) == 1
        and "'reread_in_a_loop'" in named[0]
        and "argument 'y'" in named[0]
        and "2 element(s)" in named[0]
    )
    assert not np.allclose(grad, 3 * xs**2)  # d x^3 / dx: the backward reads y as the last write left it


@pytest.mark.parametrize("tape_options", TAPES, ids=["snapshot", "check", "both"])
def test_reads_memory_serves_are_not_named(tape_options, device):
    xs = np.array([0.5, 1.5, -2.0])
    # a read after the thread's last write
    x, y = f64(xs, device), wp.zeros(3, dtype=wp.float64, device=device, requires_grad=True)
    out = wp.zeros(3, dtype=wp.float64, device=device, requires_grad=True)
    seed = {out: wp.ones(3, dtype=wp.float64, device=device)}
    grad, named = _run(k.read_after_the_last_write, (3, x, y, out), seed, x, device, tape_options)
    assert named == []
    np.testing.assert_allclose(grad, 4 * xs**3, rtol=1e-12)
    # a flagged kernel whose replay log serves the read between its two stores: y = 2 x^3
    x, y = f64(xs, device), wp.zeros(3, dtype=wp.float64, device=device, requires_grad=True)
    grad, named = _run(
        k.reread_in_one_block, (3, x, y), {y: wp.ones(3, dtype=wp.float64, device=device)}, x, device, tape_options
    )
    assert named == []
    np.testing.assert_allclose(grad, 6 * xs**2, rtol=1e-12)


@pytest.mark.parametrize("tape_options", TAPES, ids=["snapshot", "check", "both"])
def test_an_accumulation_read_between_writes_is_not_named(tape_options, device):
    # bodies 0 <- 1, 0 <- 2 (two children), 1 <- 3: force[0] is accumulated by 1 and 2 in turn, then read by body 0
    parent = wp.array(np.array([-1, 0, 0, 1], dtype=np.int32), dtype=int, device=device)
    xs = np.array([0.5, 1.5, -2.0, 0.7])
    x = f64(xs, device)
    force = wp.zeros(4, dtype=wp.float64, device=device, requires_grad=True)
    seed = np.array([1.0, 2.0, 3.0, 4.0])
    grad, named = _run(
        k.children_accumulate_into_a_parent,
        (1, parent, x, force, 4),
        {force: f64(seed, device, False)},
        x,
        device,
        tape_options,
    )
    assert named == []
    # force[p] = sum over its children c of (x_c^2 + force[c]): d(seed . force)/dx_b = 2 x_b * (sum of seeds on b's
    # ancestors)
    ancestors = {0: [], 1: [0], 2: [0], 3: [1, 0]}
    want = np.array([2 * xs[b] * sum(seed[a] for a in ancestors[b]) for b in range(4)])
    if not _compat.STOCK_STORE_ZEROES:
        # Warp <= 1.12's store adjoint keeps force.grad[0] after the second child's store, so the first child's
        # store adds it again: stock Warp's double count on every Tape (zero_store=True is the remedy), not a read
        want[2] *= 2
    np.testing.assert_allclose(grad, want, rtol=1e-12)


@pytest.mark.parametrize("tape_options", TAPES, ids=["snapshot", "check", "both"])
def test_a_read_between_writes_inside_a_helper_with_its_own_adjoint_is_not_named(tape_options, device):
    # Newton's dense_solve: Warp's backward runs the @wp.func_grad, which reads what it needs from memory; the
    # helper's own reads have no adjoint (it named Featherstone's solve before: a false report)
    xs = np.array([0.5, 1.5, -2.0])
    x, y = f64(xs, device), wp.zeros(3, dtype=wp.float64, device=device, requires_grad=True)
    seed = {y: wp.ones(3, dtype=wp.float64, device=device)}
    grad, named = _run(k.calls_a_helper_with_its_own_adjoint, (3, x, y), seed, x, device, tape_options)
    assert named == []
    np.testing.assert_allclose(grad, 3 * xs**2, rtol=1e-12)
