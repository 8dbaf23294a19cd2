"""AdjointWarning for what a flagged kernel's copy form and replay do not make exact, named at the kernel's line: an
atomic whose returned value is used (in the body; through a helper, followed through the helpers it calls), and a
component assigned after a whole use inside a helper (a helper keeps Warp's code). Their negative twins (a
discarded atomic return, a helper that assigns before the use, an unflagged kernel) are not warned, and the
gradients are compared with the exact ones, so each warning is backed by what Warp computes."""

from __future__ import annotations

import inspect

import numpy as np
import pytest
from helpers import backward_warnings

import warp_zerostore as wp

X = np.array([1.0, 2.0, 3.0, 4.0])


@pytest.fixture(scope="module")
def built():
    return backward_warnings.loaded("kernels_atomic_returns")


def _warnings_of(caught, kernel: str) -> list:
    return [w for w in caught if f"kernel '{kernel}'" in str(w.message)]


def _line(kernel, text: str) -> int:
    lines, first = inspect.getsourcelines(kernel.func)
    return first + next(k for k, line in enumerate(lines) if text in line)


def _packed_gradient(kernel) -> np.ndarray:
    x = wp.array(X, dtype=float, requires_grad=True)
    cursor = wp.zeros(1, dtype=int)
    packed = wp.zeros(8, dtype=float, requires_grad=True)
    tape = wp.Tape()
    with tape:
        wp.launch(kernel, dim=len(X), inputs=[x, cursor, packed])
    tape.backward(grads={packed: wp.array([1.0] * 4 + [0.0] * 4, dtype=float)})
    return x.grad.numpy()


def test_a_used_atomic_return_in_the_body_is_warned_at_its_line_and_wrong(built):
    module, caught = built
    [warning] = _warnings_of(caught, "pack_in_body")
    assert warning.lineno == _line(module.pack_in_body, "slot = wp.atomic_add")
    assert "wp.atomic_add returns" in str(warning.message) and "replays the kernel without its atomics" in str(
        warning.message
    )
    assert not np.allclose(_packed_gradient(module.pack_in_body), 2 * X)


def test_a_used_atomic_return_through_nested_helpers_names_the_helper_and_the_atomic(built):
    module, caught = built
    [warning] = _warnings_of(caught, "pack_through_helper")
    message = str(warning.message)
    assert warning.lineno == _line(module.pack_through_helper, "slot = claim_twice_removed")
    assert "@wp.func 'claim_twice_removed'" in message
    assert f"{inspect.getsourcefile(module)}:{_line(module.claim, 'return wp.atomic_add')}" in message
    assert not np.allclose(_packed_gradient(module.pack_through_helper), 2 * X)


def test_discarded_atomic_returns_are_not_warned_and_stay_right(built):
    module, caught = built
    assert _warnings_of(caught, "count_only") == []
    x = wp.array(X, dtype=float, requires_grad=True)
    cursor, packed = wp.zeros(1, dtype=int), wp.zeros(4, dtype=float, requires_grad=True)
    tape = wp.Tape()
    with tape:
        wp.launch(module.count_only, dim=4, inputs=[x, cursor, packed])
    tape.backward(grads={packed: wp.ones(4, dtype=float)})
    assert np.allclose(x.grad.numpy(), 2 * X)


def test_an_unflagged_kernel_is_not_warned(built):
    _, caught = built
    assert _warnings_of(caught, "pack_in_body_stock") == []


def _helper_gradient(kernel) -> np.ndarray:
    x = wp.array(X, dtype=float, requires_grad=True)
    y = wp.zeros(len(X), dtype=float, requires_grad=True)
    tape = wp.Tape()
    with tape:
        wp.launch(kernel, dim=len(X), inputs=[x, y])
    tape.backward(grads={y: wp.ones(len(X), dtype=float)})
    return x.grad.numpy()


def test_a_component_assigned_after_a_use_in_a_helper_is_warned_at_the_call_and_wrong(built):
    """d/dx (x^2 + 4x^2 + 1 + 3x) = 10x + 3; Warp's helper adjoint reads v[1] = 3."""
    module, caught = built
    [warning] = _warnings_of(caught, "helper_assigns_after_use")
    assert warning.lineno == _line(module.helper_assigns_after_use, "dot_then_assign(x[i])")
    message = str(warning.message)
    assert "@wp.func 'dot_then_assign'" in message and "component of the local 'v'" in message
    assert not np.allclose(_helper_gradient(module.helper_assigns_after_use), 10 * X + 3)


def test_a_helper_that_assigns_before_the_use_is_not_warned_and_right(built):
    """d/dx (x^2 + 4x^2 + 1) = 10x."""
    module, caught = built
    assert _warnings_of(caught, "helper_assigns_before_use") == []
    assert np.allclose(_helper_gradient(module.helper_assigns_before_use), 10 * X)
