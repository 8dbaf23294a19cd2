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
