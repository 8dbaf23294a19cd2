"""An in-place update ``y[k] += v`` in a flagged kernel that reads ``y`` back (the fuzzer's
snapshot-inplace-then-another-store finding): the backward replays the update through the kernel's replay log,
which loads ``y[k]``, so the read twin counts the update as a read of the element's launch input and
``Tape(snapshot=True)`` restores it. Each kernel's gradient is checked against central differences (float64);
the negative twins (a stock kernel, a flagged kernel without a read-back) keep ``+=`` a write only."""

from __future__ import annotations

import importlib

import numpy as np
import pytest

import warp_zerostore as wp
from warp_zerostore.tape import read_twin

X0 = np.array([0.5, -0.25])
Y0 = np.array([0.25, -0.5, 0.75, 1.0])


@pytest.fixture(scope="module")
def kernels():
    module = importlib.import_module("tests.helpers.kernels_augmented_readback")
    wp.load_module(module, device="cpu")
    return module


def _loss(kernel, xs):
    x, y = wp.array(xs, dtype=wp.float64), wp.array(Y0, dtype=wp.float64)
    z = wp.zeros(2, dtype=wp.float64)
    wp.launch(kernel, dim=2, inputs=[x, y, z])
    return float(np.sum(z.numpy()) + np.dot(y.numpy(), np.arange(1.0, 5.0)))


def _snapshot_gradient(kernel):
    x = wp.array(X0, dtype=wp.float64, requires_grad=True)
    y = wp.array(Y0, dtype=wp.float64, requires_grad=True)
    z = wp.zeros(2, dtype=wp.float64, requires_grad=True)
    tape = wp.Tape(snapshot=True)
    with tape:
        wp.launch(kernel, dim=2, inputs=[x, y, z])
    tape.backward(grads={z: wp.array(np.ones(2), dtype=wp.float64), y: wp.array(np.arange(1.0, 5.0), dtype=wp.float64)})
    return x.grad.numpy(), tape


def _central(kernel, h=1e-6):
    return np.array([(_loss(kernel, X0 + h * e) - _loss(kernel, X0 - h * e)) / (2 * h) for e in np.eye(2)])


@pytest.mark.parametrize("name", ["other_store", "same_element", "in_helper", "other_store_stock", "no_read_back"])
def test_snapshot_tape_gradient_matches_central_differences(kernels, name):
    kernel = getattr(kernels, name)
    got, tape = _snapshot_gradient(kernel)
    np.testing.assert_allclose(got, _central(kernel), rtol=1e-6, atol=1e-6)
    assert not [h for h in tape.hazards if h.real]


def _before_marks(kernel):
    x = wp.array(X0, dtype=wp.float64)
    y = wp.array(Y0, dtype=wp.float64)
    z = wp.zeros(2, dtype=wp.float64)
    marks = read_twin.element_reads(kernel, {"kernel": kernel, "dim": 2, "inputs": [x, y, z]})
    return marks["y"].before


@pytest.mark.parametrize("name", ["other_store", "in_helper"])
def test_the_update_of_a_logged_array_reads_the_element_before_the_launch(kernels, name):
    np.testing.assert_array_equal(_before_marks(getattr(kernels, name)), [False, True, False, True])


@pytest.mark.parametrize("name", ["other_store_stock", "no_read_back"])
def test_without_a_replay_log_the_update_is_a_write_only(kernels, name):
    """Stock Warp skips the update in its replay, and a flagged kernel that never reads y back keeps no log."""
    marks = read_twin.element_reads(
        getattr(kernels, name),
        {
            "kernel": getattr(kernels, name),
            "dim": 2,
            "inputs": [wp.array(X0, dtype=wp.float64), wp.array(Y0, dtype=wp.float64), wp.zeros(2, dtype=wp.float64)],
        },
    )
    assert "y" not in marks or not np.any(marks["y"].before)
