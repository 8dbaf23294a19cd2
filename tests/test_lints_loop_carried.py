"""AdjointWarning for a local assigned in a loop with a run-time bound and then read by an adjoint that needs its
value (Warp's backward does not replay such a loop's values: the fuzzer's runtime-loop-carried-local finding):
each warned kernel's gradient is shown wrong against central differences, each silent twin's right; kernels not
opted in, or built without backward, are not warned."""

from __future__ import annotations

import importlib
import inspect
import sys
import warnings

import numpy as np
import pytest

import warp_zerostore as wp
from warp_zerostore.codegen import adjoint_lints

X = np.array([0.3, 0.7, -0.4, 0.9])
SEED = np.array([1.0, 0.5, -2.0, 0.25])  # a different seed per element: a wrong index shows
N = 3
WARNED = {
    "square_after": ("s", "y[0] = s * s"),
    "product_inside": ("s", "s = s * x[k]"),
    "counter_after": ("c", "y[0] = x[0] * x[1] * float(c)"),
    "sum_used_inside": ("s", "y[k] = s * x[k]"),
    "while_index": ("k", "s += x[k] * x[k]"),
    "branch_after": ("s", "if s > 0.2:"),
    "component_after": ("v", "y[0] = v[0] * v[0]"),
    "field_after": ("s", "y[0] = s.a * s.a"),
}
SILENT = [
    "sum_stored",
    "fresh_each_iteration",
    "while_counter_in_test",
    "while_branch_inside",
    "reassigned_after",
    "constant_bound",
    "component_sum_stored",
]


def backward_warnings(module) -> list:
    """The AdjointWarnings each kernel of ``module`` gets where its backward first runs (`warn_backward`, what
    ``Tape.backward`` calls for every recorded kernel), afresh."""
    adjoint_lints.forget_warnings()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        for kernel in vars(module).values():
            if isinstance(kernel, wp.Kernel):
                adjoint_lints.warn_backward(kernel)
    return [w for w in caught if issubclass(w.category, wp.AdjointWarning)]


@pytest.fixture(scope="module")
def built():
    """Both helper modules imported and loaded once (no warning: nothing is differentiated yet), with the warnings
    their kernels' backwards get."""
    with warnings.catch_warnings(record=True) as loading:
        warnings.simplefilter("always")
        for name in ("kernels_loop_carried_forward_only", "kernels_loop_carried"):
            sys.modules.pop(f"tests.helpers.{name}", None)
            module = importlib.import_module(f"tests.helpers.{name}")
            wp.load_module(module, device="cpu")
    assert not [w for w in loading if issubclass(w.category, wp.AdjointWarning)]
    forward_only = sys.modules["tests.helpers.kernels_loop_carried_forward_only"]
    return module, backward_warnings(forward_only) + backward_warnings(module)


def _loss(kernel, x):
    y = wp.zeros(4, dtype=float)
    wp.launch(kernel, dim=1, inputs=[wp.array(x, dtype=float), N, y])
    return float(np.dot(y.numpy().astype(np.float64), SEED))


def _gradient(kernel, x):
    xa = wp.array(x, dtype=float, requires_grad=True)
    y = wp.zeros(4, dtype=float, requires_grad=True)
    tape = wp.Tape()
    with tape:
        wp.launch(kernel, dim=1, inputs=[xa, N, y])
    tape.backward(grads={y: wp.array(SEED, dtype=float)})
    return xa.grad.numpy().astype(np.float64)


def _central_differences(kernel, x, h=1e-3):
    eye = np.eye(len(x))
    return np.array([(_loss(kernel, x + h * eye[i]) - _loss(kernel, x - h * eye[i])) / (2 * h) for i in range(len(x))])


def _warnings_for(caught, name):
    return [w for w in caught if f"'{name}'" in str(w.message)]


@pytest.mark.parametrize("name", sorted(WARNED))
def test_a_value_read_after_a_runtime_loop_is_warned_at_its_line_and_is_wrong(built, name):
    module, caught = built
    local, line_text = WARNED[name]
    kernel = getattr(module, name)
    found = _warnings_for(caught, name)
    assert found, f"{name}: no AdjointWarning"
    lines, first = inspect.getsourcelines(kernel.func)
    [want] = [first + i for i, text in enumerate(lines) if text.strip().startswith(line_text)]
    assert [(w.filename, w.lineno) for w in found] == [(inspect.getsourcefile(module), want)]
    assert f"reads '{local}'" in str(found[0].message) and "run-time bound" in str(found[0].message)
    assert not np.allclose(_gradient(kernel, X), _central_differences(kernel, X), atol=1e-2)


@pytest.mark.parametrize("name", SILENT)
def test_uses_whose_adjoint_reads_no_value_are_not_warned_and_are_right(built, name):
    module, caught = built
    kernel = getattr(module, name)
    assert not _warnings_for(caught, name)
    assert np.allclose(_gradient(kernel, X), _central_differences(kernel, X), atol=1e-2)


@pytest.mark.parametrize("name", ["square_after_stock", "square_after_forward_only"])
def test_kernels_not_opted_in_or_without_backward_are_not_warned(built, name):
    _, caught = built
    assert not _warnings_for(caught, name)


def test_a_constant_loop_with_a_break_counts_as_runtime_bound(built):
    """Warp unrolls a constant range, but not one with a ``break``: the carried local is warned at its first
    value use (the break's test; besides the break's own warning) and the gradient is wrong; ``constant_bound`` (the same loop without the break) is the silent twin."""
    module, caught = built
    kernel = module.constant_bound_with_break
    lines, first = inspect.getsourcelines(kernel.func)
    [want] = [first + i for i, text in enumerate(lines) if text.strip().startswith("if s > 100.0:")]
    found = [w for w in _warnings_for(caught, "constant_bound_with_break") if "run-time bound" in str(w.message)]
    assert [w.lineno for w in found] == [want] and "reads 's'" in str(found[0].message)
    assert not np.allclose(_gradient(kernel, X), _central_differences(kernel, X), atol=1e-2)
    assert not _warnings_for(caught, "constant_bound")


ANCESTOR = np.array([-1, 0, 1, 1], dtype=np.int32)  # a tree: 0 <- 1 <- 2, 1 <- 3


def _ancestors():
    """ANCESTOR as a view one element into a padded array: a backward that reads ``ancestor[j]`` with the walk's
    final j = -1 reads the padding, not memory outside the allocation."""
    return wp.array(np.concatenate([[-1], ANCESTOR]).astype(np.int32), dtype=int)[1:]


def _walk_loss(kernel, x) -> float:
    y = wp.zeros(16, dtype=float)
    wp.launch(kernel, dim=4, inputs=[_ancestors(), wp.array(x, dtype=float), y])
    return float(np.dot(y.numpy().astype(np.float64), np.arange(1.0, 17.0)))


def _walk_gradient(kernel, x):
    # The wrong kernel's backward indexes x with the walk's final j = -1: x is a view one element into a padded
    # array, so that adjoint lands in the padding instead of corrupting the heap (it aborted warp-lang 1.9.1).
    padded = wp.array(np.concatenate([[0.0], x]), dtype=float, requires_grad=True)
    xa = padded[1:]
    y = wp.zeros(16, dtype=float, requires_grad=True)
    tape = wp.Tape()
    with tape:
        wp.launch(kernel, dim=4, inputs=[_ancestors(), xa, y])
    tape.backward(grads={y: wp.array(np.arange(1.0, 17.0), dtype=float)})
    return padded.grad.numpy()[1:].astype(np.float64)


@pytest.mark.parametrize(
    "name, warned",
    [("while_walk_bare_index", True), ("while_walk_fresh_index", False), ("for_then_while_walk", False)],
)
def test_a_tree_walk_is_warned_only_where_an_adjoint_reads_the_walked_variable_itself(built, name, warned):
    """Newton's eval_rigid_jacobian walks up the tree with ``while j != -1: ...; j = ancestor[j]``: it was warned
    (a false alarm: its gradient is right) for ``joint_qd_start[j]`` (an integer array) and for values computed
    from ``j`` before the walk step. Only a bare ``x[j]`` is wrong, and only it is warned."""
    module, caught = built
    kernel = getattr(module, name)
    eye = np.eye(4)
    fd = np.array(
        [(_walk_loss(kernel, X + 1e-3 * eye[i]) - _walk_loss(kernel, X - 1e-3 * eye[i])) / 2e-3 for i in range(4)]
    )
    found = _warnings_for(caught, name)
    right = np.allclose(_walk_gradient(kernel, X), fd, rtol=1e-3, atol=1e-2)
    assert right is not warned, (name, _walk_gradient(kernel, X), fd)
    if warned:
        lines, first = inspect.getsourcelines(kernel.func)
        [want] = [first + i for i, text in enumerate(lines) if text.strip() == "s = x[j]"]
        assert [(w.lineno, "reads 'j'" in str(w.message)) for w in found] == [(want, True)]
    else:
        assert found == []
