"""AdjointWarning: the lint finds a component or field of a local assigned after a whole use (Warp's own adjoint
is wrong there: the fuzzer's component-after-use finding); a flagged kernel's build makes those it reaches exact
(tests/test_local_copies.py), so they are not warned, and its gradient is right; flagged kernels whose use stays
right anyway, and unflagged kernels, get no warning either. Loop jumps are warned (a ternary is not: flagged kernels
get Warp 1.17's code for it, tests/test_backports.py). The
gradients are compared with central differences, so each warning (and each silence) is backed by what Warp
computes."""

from __future__ import annotations

import inspect

import numpy as np
import pytest
from helpers import backward_warnings

import warp_zerostore as wp

X = np.array([[0.5, -0.7, 0.9], [1.1, 0.3, -0.4]])


@pytest.fixture(scope="module")
def built():
    """The helper module imported and loaded once, with the warnings its load gave."""
    return backward_warnings.loaded("kernels_adjoint_bugs")


def _gradient(kernel, x):
    xv = wp.array(x, dtype=wp.vec3, requires_grad=True)
    y = wp.zeros(len(x), dtype=float, requires_grad=True)
    tape = wp.Tape()
    with tape:
        wp.launch(kernel, dim=len(x), inputs=[xv, y])
    tape.backward(grads={y: wp.ones(len(x), dtype=float)})
    return xv.grad.numpy().astype(np.float64), y.numpy().astype(np.float64)


def _central_differences(kernel, x, h=1e-3):
    out = np.zeros_like(x)
    for index in np.ndindex(*x.shape):
        up, down = x.copy(), x.copy()
        up[index] += h
        down[index] -= h
        out[index] = (_gradient(kernel, up)[1].sum() - _gradient(kernel, down)[1].sum()) / (2 * h)
    return out


def _finding(kernel):
    from warp_zerostore import _compat
    from warp_zerostore.lints import UpdateAfterUse, adjoint_bugs

    return [f for f in adjoint_bugs.find(_compat.kernel_tree(kernel)) if isinstance(f, UpdateAfterUse)]


def test_a_component_assigned_after_a_whole_use_is_found_made_exact_and_not_warned(built):
    module, caught = built
    kernel = module.dot_then_assign
    [finding] = _finding(kernel)
    lines, first = inspect.getsourcelines(kernel.func)
    assert first + finding.line - 1 == first + len(lines) - 1 and finding.name == "v" and not finding.field
    assert "local 'v'" in finding.message("k", "f.py:1") and "used whole at line" in finding.message("k", "f.py:1")
    assert not [w for w in caught if "'dot_then_assign'" in str(w.message)]
    assert np.allclose(_gradient(kernel, X)[0], _central_differences(kernel, X), atol=1e-2)
    # the unflagged twin keeps Warp's in-place assignment: dot's adjoint reads the assigned v[0] = 5
    got, want = _gradient(module.dot_then_assign_stock, X)[0], _central_differences(kernel, X)
    assert not np.allclose(got, want, atol=1e-2) and np.allclose(got[:, 0], 10.0)


def test_a_struct_field_assigned_after_a_whole_use_is_found_as_a_field_and_made_exact(built):
    """The fuzzer's struct-field-assign-after-call: the finding names a field of a struct (its remedy is not a
    vector copy); the build makes it exact (on Warp <= 1.14 the field store is given the adjoint 1.15 gives it),
    so it is not warned and d(a*b) = (b, a). The vector's finding above is the twin that keeps the component
    wording."""
    module, caught = built
    [finding] = _finding(module.struct_field_after_call)
    message = finding.message("k", "f.py:1")
    assert finding.field and "field of the local struct 's'" in message and "wp.vec3" not in message
    assert "a field" not in _finding(module.dot_then_assign)[0].message("k", "f.py:1")
    assert not [w for w in caught if "'struct_field_after_call'" in str(w.message)]
    x = np.array([[0.5, -0.7], [1.1, 0.3]])
    xa = wp.array(x, dtype=float, requires_grad=True)
    y = wp.zeros(2, dtype=float, requires_grad=True)
    tape = wp.Tape()
    with tape:
        wp.launch(module.struct_field_after_call, dim=2, inputs=[xa, y])
    tape.backward(grads={y: wp.ones(2, dtype=float)})
    assert np.allclose(xa.grad.numpy(), x[:, ::-1], atol=1e-3)  # d(a*b) = (b, a)


@pytest.mark.parametrize("name", ["components_then_assign", "sum_then_update", "copy_then_assign"])
def test_uses_that_stay_right_are_not_warned(built, name):
    module, caught = built
    assert not [w for w in caught if f"'{name}'" in str(w.message)]
    kernel = getattr(module, name)
    assert np.allclose(_gradient(kernel, X)[0], _central_differences(kernel, X), atol=1e-2)


def test_an_unflagged_kernel_is_not_warned(built):
    """Importing the package changes nothing for kernels that do not opt in."""
    _, caught = built
    assert not [w for w in caught if "dot_then_assign_stock" in str(w.message)]


# A break/continue after other statements of its iteration (the fuzzer's loop-jump finding).
XS = np.array([0.5, -0.7, 1.1])


@pytest.fixture(scope="module")
def jumps():
    return backward_warnings.loaded("kernels_loop_jumps")


def _jump_gradient(kernel, x, n=3):
    """x.grad of sum(y) (y starts at 0), and y."""
    xa = wp.array(x, dtype=float, requires_grad=True)
    y = wp.zeros(len(x), dtype=float, requires_grad=True)
    tape = wp.Tape()
    with tape:
        wp.launch(kernel, dim=len(x), inputs=[xa, y, n])
    tape.backward(grads={y: wp.ones(len(x), dtype=float)})
    return xa.grad.numpy().astype(np.float64), y.numpy().astype(np.float64)


def test_a_jump_after_a_statement_of_its_iteration_is_warned_and_wrong(jumps):
    module, caught = jumps
    [warning] = [w for w in caught if "'break_after_store'" in str(w.message)]
    lines, first = inspect.getsourcelines(module.break_after_store.func)
    assert warning.lineno == first + len(lines) - 1 and "'break' at line" in str(warning.message)
    got, y = _jump_gradient(module.break_after_store, XS)
    assert np.allclose(y, XS * XS) and np.allclose(got, 0.0)  # Warp's: nothing; the right one is 2x
    [warning] = [w for w in caught if "'for_break_first'" in str(w.message)]
    got, y = _jump_gradient(module.for_break_first, XS)
    assert np.allclose(y, 2 * XS * XS) and np.allclose(got, 0.0)  # the right one is 4x
    [warning] = [w for w in caught if "'continue_after_update'" in str(w.message)]
    assert "comes after line" in str(warning.message)
    got, y = _jump_gradient(module.continue_after_update, XS)
    assert np.allclose(y, 3 * XS * XS) and not np.allclose(got, 6 * XS)


@pytest.mark.parametrize("name, calls", [("continue_first", 2), ("break_after_counter", 1)])
def test_jumps_that_stay_right_are_not_warned(jumps, name, calls):
    """A jump first in its iteration, or after only a counter's step: right, and silent."""
    module, caught = jumps
    assert not [w for w in caught if f"'{name}'" in str(w.message)]
    got, y = _jump_gradient(getattr(module, name), XS)
    assert np.allclose(y, calls * XS * XS) and np.allclose(got, calls * 2 * XS)


def test_an_unflagged_kernel_with_a_jump_is_not_warned(jumps):
    _, caught = jumps
    assert not [w for w in caught if "break_after_store_stock" in str(w.message)]
