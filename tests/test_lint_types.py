"""The adjoint lints know a local's type from the source (`lints.local_types`, Warp's rule: the type of its first
assignment) and warn where a backward first runs (`codegen.adjoint_lints`), not when a module builds.

* An integer local carried around a loop with a run-time bound is warned only where its wrong value chooses
  elements or code (an index, a branch) or enters a float value: passed to a helper that returns an int, it is
  not (negative twin: a float local in the same loop, read by a product's adjoint, still is; an int used as an
  index still is).
* A branch Warp decides when it builds (``if wp.static(...)``) is linted as taken.
* A ``while`` body that assigns a carried local before reading it reads the value it made (Warp keeps it in a
  variable of its own): not warned, and right against central differences (negative twin: read before the body
  assigns it, it is the carried variable: warned, and wrong).
* A kernel no backward runs is never warned; its first ``Tape.backward`` warns it (once).
"""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from helpers import kernels_loop_types as k

import warp_zerostore as wp
from warp_zerostore.codegen import adjoint_lints
from warp_zerostore.lints import local_types


def messages(kernel) -> list:
    return [message for message, _, _ in adjoint_lints.messages(kernel)]


def test_local_types_follow_warps_rule():
    kinds = local_types.kinds(k.float_local_read_by_a_backward)
    assert kinds["k"] == "integer" and kinds["s"] == "float" and kinds["n"] == "integer"
    assert kinds["_j"] == "integer"


def test_an_integer_passed_to_a_helper_returning_an_integer_is_not_warned():
    assert messages(k.integer_into_a_helper) == []


def test_a_float_local_read_by_a_backward_in_the_same_loop_is_warned():  # the negative twin
    found = messages(k.float_local_read_by_a_backward)
    assert found and all("reads 's'" in m for m in found) and not any("reads 'k'" in m for m in found)


def test_an_integer_used_as_an_index_is_warned():
    assert any("reads 'k'" in m for m in messages(k.integer_as_an_index))


def test_a_branch_warp_never_builds_is_not_linted():
    assert messages(k.dead_static_branch) == []


def test_the_warning_comes_at_the_first_backward_not_at_build():
    adjoint_lints.forget_warnings()
    x = wp.array([0.5, 0.25], dtype=float, requires_grad=True)
    y = wp.zeros(1, dtype=float, requires_grad=True)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        wp.load_module(k, device="cpu")
        wp.launch(k.never_differentiated, dim=1, inputs=[x, 2, y])  # forward only: nothing to warn
        built = [w for w in caught if issubclass(w.category, wp.AdjointWarning)]
        tape = wp.Tape()
        with tape:
            wp.launch(k.never_differentiated, dim=1, inputs=[x, 2, y])
        tape.backward(grads={y: wp.ones(1, dtype=float)})
        tape.backward(grads={y: wp.ones(1, dtype=float)})  # once per kernel and process
        at_backward = [w for w in caught if issubclass(w.category, wp.AdjointWarning)]
    assert built == []
    assert len(at_backward) == 1 and "reads 's'" in str(at_backward[0].message)
    assert at_backward[0].filename.endswith("kernels_loop_types.py")


def test_a_while_body_reading_a_carried_local_after_assigning_it_is_not_warned():
    assert messages(k.while_reassigned_then_indexed) == []
    assert any("reads 'k'" in m for m in messages(k.while_indexed_then_reassigned))  # the negative twin


SILENT = [k.integer_into_a_helper, k.while_reassigned_then_indexed]


@pytest.mark.parametrize(
    "kernel",
    [k.integer_into_a_helper, k.float_local_read_by_a_backward]
    + [k.while_reassigned_then_indexed, k.while_indexed_then_reassigned],
)
def test_the_silent_kernel_is_right_and_the_warned_one_wrong(kernel):
    # what the lints say is what Warp computes: central differences of y[0] with respect to x (n = 3)
    def loss(values):
        x = wp.array(values, dtype=float)
        y = wp.zeros(1, dtype=float)
        wp.launch(kernel, dim=1, inputs=[x, 3, y])
        return float(y.numpy()[0])

    values = np.array([0.7, 0.4, -0.9, 1.3, 0.2])
    x = wp.array(values, dtype=float, requires_grad=True)
    y = wp.zeros(1, dtype=float, requires_grad=True)
    tape = wp.Tape()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", wp.AdjointWarning)
        with tape:
            wp.launch(kernel, dim=1, inputs=[x, 3, y])
        tape.backward(grads={y: wp.ones(1, dtype=float)})
    h, eye = 1e-3, np.eye(len(values))
    central = [(loss(values + h * eye[i]) - loss(values - h * eye[i])) / (2 * h) for i in range(len(values))]
    right = np.allclose(x.grad.numpy(), central, atol=1e-2)
    assert right is (kernel in SILENT)
    assert bool(messages(kernel)) is not right
