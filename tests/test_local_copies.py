"""A flagged kernel's local assigned in place after a whole use gets Warp's copy form: the gradient is right (NumPy
float64 central differences), where the same kernel unflagged keeps Warp's in-place code and its wrong gradient,
and an unflagged kernel's C++ stays stock's byte for byte. Forms the copy form does not reach (inside a loop Warp
does not unroll, a component of a field) keep Warp's code and are warned at their line."""

from __future__ import annotations

import inspect
import pathlib
import re
import sys
import tempfile

import numpy as np
import pytest
import warp
from helpers import backward_warnings
from hypothesis import given
from hypothesis import strategies as st

import warp_zerostore as wp
from warp_zerostore import _compat

ROWS = 3


@pytest.fixture(scope="module")
def built():
    """``(module, AdjointWarnings)``: the helper module imported afresh and both of its modules loaded once, with the
    warnings its kernels get where their backward first runs."""
    return backward_warnings.loaded("kernels_local_copies", also=lambda module: [module.STOCK_MODULE])


def _gradient(kernel, x: np.ndarray, *extra) -> np.ndarray:
    xa = wp.array(x, dtype=float, requires_grad=True)
    y = wp.zeros(len(x), dtype=float, requires_grad=True)
    tape = wp.Tape()
    with tape:
        wp.launch(kernel, dim=len(x), inputs=[xa, y, *extra])
    tape.backward(grads={y: wp.ones(len(x), dtype=float)})
    return xa.grad.numpy().astype(np.float64)


def _reference_gradient(reference, x: np.ndarray, h: float = 1e-6) -> np.ndarray:
    """Central differences of the NumPy float64 reference, row by row."""
    out = np.zeros_like(x)
    for index in np.ndindex(*x.shape):
        up, down = x.copy(), x.copy()
        up[index] += h
        down[index] -= h
        row = index[0]
        out[index] = (reference(*up[row]) - reference(*down[row])) / (2 * h)
    return out


rows = st.lists(
    st.lists(st.floats(-1.5, 1.5, allow_nan=False).filter(lambda v: abs(v) > 0.05), min_size=3, max_size=3),
    min_size=ROWS,
    max_size=ROWS,
).map(lambda r: np.array(r, dtype=np.float64))

NAMES = [
    "component_assign",
    "component_overwrite",
    "attribute_assign",
    "component_add",
    "component_subtract",
    "component_scale",
]
NAMES += ["matrix_element_assign", "transform_rotation_assign", "field_assign", "field_add", "field_scale"]


@pytest.mark.parametrize("name", NAMES)
@given(x=rows)
def test_a_flagged_kernel_is_right_where_its_unflagged_twin_is_warps(built, name, x):
    module, _ = built
    _, reference = module.CONSTRUCTS[name]
    want = _reference_gradient(reference, x)
    x32 = x.astype(np.float32).astype(np.float64)  # the reference at the values Warp sees
    want = _reference_gradient(reference, x32)
    assert np.allclose(_gradient(module.FLAGGED[name], x32), want, rtol=1e-3, atol=1e-3)
    # the negative twin: Warp's in-place assignment, its adjoint reading the new value (or, for a struct field on
    # Warp <= 1.14, no adjoint at all)
    assert not np.allclose(_gradient(module.STOCK[name], x32), want, rtol=1e-3, atol=1e-3)


def test_the_constructs_made_exact_are_not_warned(built):
    module, caught = built
    assert not [w for w in caught if any(f"'{name}'" in str(w.message) for name in NAMES)]


def _warning(caught, kernel: str):
    """The kernel's warning about a component or field assigned after a use (its loops may add their own)."""
    [found] = [w for w in caught if f"'{kernel}'" in str(w.message) and "after '" in str(w.message)]
    return found


def _line_of(module, kernel, text: str) -> int:
    lines, first = inspect.getsourcelines(kernel.func)
    return first + next(k for k, line in enumerate(lines) if text in line)


def test_an_assignment_in_a_loop_warp_does_not_unroll_is_warned_at_its_line(built):
    module, caught = built
    warning = _warning(caught, "assign_in_runtime_loop")
    assert warning.lineno == _line_of(module, module.assign_in_runtime_loop, "v[1] = 3.0")
    assert "inside the loop at line" in str(warning.message) and "which Warp does not unroll" in str(warning.message)


def test_a_component_of_a_field_is_warned_at_its_line(built):
    module, caught = built
    warning = _warning(caught, "component_of_a_field")
    assert warning.lineno == _line_of(module, module.component_of_a_field, "h.v.x = 1.0")
    assert "a part of a field or of a component" in str(warning.message)
    # and it is wrong: the length's adjoint reads h.v = (1, b, c)
    x = np.array([[0.5, -0.7, 0.9], [1.1, 0.3, -0.4]])
    want = x / np.linalg.norm(x, axis=1, keepdims=True)
    assert not np.allclose(_gradient(module.component_of_a_field, x), want, atol=1e-3)


def _cpu_source(module) -> str:
    _compat.mark_modified(module)
    out = pathlib.Path(tempfile.mkdtemp())
    warp.compile_aot_module(module, device="cpu", module_dir=str(out))
    (cpp,) = out.glob("*.cpp")
    return cpp.read_text()


def _functions_of(source: str, key: str) -> str:
    """The generated functions of kernel ``key`` (forward and backward), as text."""
    found = re.findall(rf"^[^\n]*\b{key}_[0-9a-f]+_cpu_kernel_(?:forward|backward)\(.*?^\}}", source, re.M | re.S)
    assert found, key
    return "\n".join(found)


def test_an_unflagged_kernel_beside_a_flagged_one_keeps_warps_code(built):
    """The flagged kernels' module generates its unflagged kernel (the loop one is flagged; a stock twin lives in
    the other module) with Warp's code: the twin module, all unflagged, is byte-identical to stock, and within the
    flagged module a kernel's text is only changed where it is flagged."""
    module, _ = built
    with_extension = _cpu_source(module.STOCK_MODULE)
    with _compat.stock_warp():
        stock = _cpu_source(module.STOCK_MODULE)
    assert with_extension == stock and "assign_copy" not in with_extension
    flagged = _cpu_source(_compat.kernel_module(module.FLAGGED["component_assign"]))
    assert "wp::assign_copy(" in _functions_of(flagged, "_component_assign")
    assert "wp::assign_copy(" not in _functions_of(flagged, "assign_in_runtime_loop")  # in a loop: Warp's code


REPROS = pathlib.Path(__file__).resolve().parent.parent / "docs" / "repros"


@pytest.mark.parametrize(
    "script, flagged, stock",
    [
        ("component_update_after_use.py", None, []),  # one flagged kernel: the whole output
        ("component_assign_after_use.py", None, []),
        ("struct_field_assign_after_use.py", ["through_func_then_assign_flagged:"], ["through_func_then_assign:"]),
        ("struct_field_assign_no_adjoint.py", ["struct_field_flagged:"], []),
    ],
)
def test_the_repros_print_the_right_value_when_flagged(script, flagged, stock):
    """docs/known-issues.md's repros of these constructs: every flagged kernel's line is right (no WRONG mark), and
    the stock twin stays wrong where the repro has one."""
    import subprocess

    out = subprocess.run(
        [sys.executable, str(REPROS / script)], capture_output=True, text=True, check=True, timeout=600
    ).stdout
    lines = out.splitlines()
    if flagged is None:
        assert "WRONG" not in out and "expected" in out, out
    for start in flagged or ():
        [line] = [line for line in lines if line.startswith(start)]
        assert "WRONG" not in line, line
    for start in stock:
        [line] = [line for line in lines if line.startswith(start)]
        assert "WRONG" in line, line
