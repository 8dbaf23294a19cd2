"""An overwrite is "safe" only where the store adjoint zeroes the array's gradient; an array made with
``retain_grad=True`` (Warp >= 1.13) is never zeroed, stock or flagged, so its overwrite double counts and is real.
"""

import warnings

import numpy as np
import pytest
from helpers.seed import SEED

import warp_zerostore as wp
from warp_zerostore import _compat

pytestmark = pytest.mark.skipif(not _compat.HAS_RETAIN_GRAD, reason="retain_grad arrays exist from warp-lang 1.13")


# The seed program's kernels, flagged: the second launch's store adjoint zeroes y.grad, unless y retains it.
write_2x, write_3x = SEED[True]


def _seed(retain: bool):
    x_a = wp.ones(2, dtype=float, requires_grad=True)
    x_b = wp.ones(2, dtype=float, requires_grad=True)
    y = wp.zeros(2, dtype=float, requires_grad=True, retain_grad=retain)
    tape = wp.Tape(check="warn")
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        with tape:
            wp.launch(write_2x, dim=2, inputs=[x_a, y])
            wp.launch(write_3x, dim=2, inputs=[x_b, y])
    tape.backward(grads={y: wp.ones(2, dtype=float)})
    overwrites = [h for h in tape.hazards if h.kind == "overwrite"]
    warned = [str(w.message) for w in caught if issubclass(w.category, wp.OverwriteWarning)]
    return x_a.grad.numpy(), overwrites, warned


def test_an_overwrite_of_a_retain_grad_array_is_real_and_warned():
    grad, overwrites, warned = _seed(retain=True)
    np.testing.assert_array_equal(grad, 2.0)  # the double count the report names
    assert overwrites and all(h.real for h in overwrites)
    assert any("overwrite" in w and "write_3x" in w for w in warned), warned


def test_the_same_overwrite_of_an_ordinary_array_is_safe_and_silent():
    grad, overwrites, warned = _seed(retain=False)
    np.testing.assert_array_equal(grad, 0.0)
    assert overwrites and not any(h.real for h in overwrites)
    assert not warned


# The report names the cause and its remedy, on every Tape: no flag mends it, so "decorate it with zero_store=True"
# would send the user round in a circle (the later kernel here is flagged already).

TAPES = {
    "plain": lambda: wp.Tape(),
    "check": lambda: wp.Tape(check="warn"),
    "snapshot": lambda: wp.Tape(snapshot=True),
}


def _written(times: int, tape):
    """``y`` (``retain_grad=True``) written ``times`` times by flagged kernels, then ``backward()``."""
    x_a = wp.ones(2, dtype=float, requires_grad=True)
    x_b = wp.ones(2, dtype=float, requires_grad=True)
    y = wp.zeros(2, dtype=float, requires_grad=True, retain_grad=True)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        with tape:
            wp.launch(write_2x, dim=2, inputs=[x_a, y])
            if times == 2:
                wp.launch(write_3x, dim=2, inputs=[x_b, y])
        tape.backward(grads={y: wp.ones(2, dtype=float)})
    warned = [str(w.message) for w in caught if issubclass(w.category, wp.OverwriteWarning)]
    named = [h for h in tape.hazards if h.cause == "retain_grad"]
    return x_a.grad.numpy(), named, warned


@pytest.mark.parametrize("tape", sorted(TAPES))
def test_retain_grad_written_twice_is_named_with_its_cause_and_advice(tape):
    grad, named, warned = _written(2, TAPES[tape]())
    np.testing.assert_array_equal(grad, 2.0)  # the gradient stays Warp's: counted where 0 is right
    (hazard,) = named
    assert hazard.kind == "overwrite" and hazard.real
    assert hazard.earlier.kernel == write_2x.key and hazard.writer.kernel == write_3x.key
    message = hazard.message()
    assert "retain_grad=True" in message and "counted twice" in message
    assert "separate array" in message and "only on an array written once" in message
    assert "decorate it with @wp.kernel(zero_store=True)" not in message
    assert warned == [message]  # warned by name on every Tape, check="off" included


@pytest.mark.parametrize("tape", sorted(TAPES))
def test_negative_twin_retain_grad_written_once_is_never_reported(tape):
    grad, named, warned = _written(1, TAPES[tape]())
    np.testing.assert_array_equal(grad, 2.0)  # y = 2 x_a, written once: right
    assert named == [] and warned == []
