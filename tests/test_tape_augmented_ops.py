"""``*=`` and ``/=`` on an array element are a load, the operation and a store, not an atomic accumulation.

Only ``+=`` and ``-=`` (and, from Warp 1.10, the bitwise ``&=``, ``|=``, ``^=``) become atomics. ``x[i] *= s[i]``
reads ``x[i]`` before storing over it, so its backward on a plain Tape re-reads the new value: ``Tape(snapshot=True)``
must restore the input (d x/ds = 3 at x = 3, s = 2; it gave 6) and ``Tape(check="warn")`` must name the stale read
(it said nothing). The negative twin, ``+=``, stays an accumulation: exact on every Tape and never reported.
"""

import warnings

import numpy as np
import pytest
import warp

import warp_zerostore as wp
from warp_zerostore.access import argument_access


@wp.kernel
def scale_in_place(x: wp.array(dtype=wp.float64), s: wp.array(dtype=wp.float64)):
    i = wp.tid()
    x[i] *= s[i]


@wp.kernel
def divide_in_place(x: wp.array(dtype=wp.float64), s: wp.array(dtype=wp.float64)):
    i = wp.tid()
    x[i] /= s[i]


@wp.kernel
def add_in_place(x: wp.array(dtype=wp.float64), s: wp.array(dtype=wp.float64)):
    i = wp.tid()
    x[i] += s[i]


CASES = {
    "*=": (scale_in_place, lambda x, s: x),  # d(x*s)/ds = x
    "/=": (divide_in_place, lambda x, s: -x / s**2),  # d(x/s)/ds
    "+=": (add_in_place, lambda x, s: np.ones_like(x)),
}
X, S = np.array([3.0, -1.5]), np.array([2.0, 0.5])


def _run(kernel, tape):
    x = wp.array(X, dtype=wp.float64, requires_grad=True)
    s = wp.array(S, dtype=wp.float64, requires_grad=True)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        with tape:
            wp.launch(kernel, dim=2, inputs=[x, s])
        tape.backward(grads={x: wp.ones(2, dtype=wp.float64)})
    reports = [str(w.message) for w in caught if issubclass(w.category, wp.OverwriteWarning)]
    return s.grad.numpy(), reports


@pytest.mark.parametrize("op", ["*=", "/="])
def test_a_multiplying_update_is_a_read_then_a_store(op):
    kernel, exact = CASES[op]
    access = argument_access(kernel)["x"]
    assert access.reads and access.stores and not access.accumulates
    grad, reports = _run(kernel, wp.Tape(snapshot=True))
    np.testing.assert_allclose(grad, exact(X, S))
    assert not reports
    _, reports = _run(kernel, wp.Tape(check="warn"))
    assert any("stale read" in r and kernel.key in r for r in reports), reports


def test_an_adding_update_stays_an_accumulation_and_is_never_reported():
    kernel, exact = CASES["+="]
    access = argument_access(kernel)["x"]
    assert access.accumulates and not access.stores
    for tape in (warp.Tape(), wp.Tape(snapshot=True), wp.Tape(check="warn")):
        grad, reports = _run(kernel, tape)
        np.testing.assert_allclose(grad, exact(X, S))
        assert not reports
