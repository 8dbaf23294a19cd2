"""AdjointWarning: a flagged kernel that assigns a component of a local vector after using the vector whole gets
a warning at that line (Warp's own adjoint is wrong there: the fuzzer's component-after-use finding); the same
kernel unflagged, and flagged kernels whose use stays right, get none. The gradients are compared with central
differences, so each warning (and each silence) is backed by what Warp computes."""

from __future__ import annotations

import importlib
import inspect
import sys
import warnings

import numpy as np
import pytest

import warp_zerostore as wp
from warp_zerostore.codegen import adjoint_lints

X = np.array([[0.5, -0.7, 0.9], [1.1, 0.3, -0.4]])


def _loaded(name: str):
    """``(module, AdjointWarnings)``: the helper module ``tests.helpers.<name>`` imported afresh and loaded (no
    warning then), and the warnings its kernels get where their backward first runs (`warn_backward`, what
    ``Tape.backward`` calls for every recorded kernel)."""
    sys.modules.pop(f"tests.helpers.{name}", None)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        module = importlib.import_module(f"tests.helpers.{name}")
        wp.load_module(module, device="cpu")
        assert not [w for w in caught if issubclass(w.category, wp.AdjointWarning)]
        adjoint_lints.forget_warnings()
        for kernel in vars(module).values():
            if isinstance(kernel, wp.Kernel):
                adjoint_lints.warn_backward(kernel)
    return module, [w for w in caught if issubclass(w.category, wp.AdjointWarning)]


@pytest.fixture(scope="module")
def built():
    """The helper module imported and loaded once, with the warnings its load gave."""
    return _loaded("kernels_adjoint_bugs")


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


def test_a_component_assigned_after_a_whole_use_is_warned_at_its_line(built):
    module, caught = built
    kernel = module.dot_then_assign
    [warning] = [w for w in caught if "'dot_then_assign'" in str(w.message)]
    lines, first = inspect.getsourcelines(module.dot_then_assign.func)
    assert warning.filename == inspect.getsourcefile(module) and warning.lineno == first + len(lines) - 1
    assert "local 'v'" in str(warning.message) and "used whole at line" in str(warning.message)
    # and Warp's gradient is wrong there: dot's adjoint reads the assigned v[0] = 5
    got, want = _gradient(kernel, X)[0], _central_differences(kernel, X)
    assert not np.allclose(got, want, atol=1e-2) and np.allclose(got[:, 0], 10.0)


def test_a_struct_field_assigned_after_a_whole_use_is_warned_as_a_field(built):
    """The fuzzer's struct-field-assign-after-call: the message names a field of a struct (its remedy is not a
    vector copy); the gradient is wrong (on 1.19 the call's adjoint reads s.a = 1; before 1.13 a field assignment
    has no adjoint at all). The vector's warning above is the twin that keeps the component wording."""
    module, caught = built
    [warning] = [w for w in caught if "'struct_field_after_call'" in str(w.message)]
    message = str(warning.message)
    assert "field of the local struct 's'" in message and "wp.vec3" not in message
    assert "a field" not in next(str(w.message) for w in caught if "'dot_then_assign'" in str(w.message))
    x = np.array([[0.5, -0.7], [1.1, 0.3]])
    xa = wp.array(x, dtype=float, requires_grad=True)
    y = wp.zeros(2, dtype=float, requires_grad=True)
    tape = wp.Tape()
    with tape:
        wp.launch(module.struct_field_after_call, dim=2, inputs=[xa, y])
    tape.backward(grads={y: wp.ones(2, dtype=float)})
    assert not np.allclose(xa.grad.numpy(), x[:, ::-1], atol=1e-3)  # d(a*b) = (b, a)


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
    return _loaded("kernels_loop_jumps")


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
