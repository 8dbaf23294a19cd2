"""A flagged kernel means the same on every supported Warp: where an older release gets its own adjoint wrong (or does
not build a valid kernel) and a later one fixed it, a ``zero_store=True`` kernel gets the fix on the older one too
(`warp_zerostore.codegen.backports`, `warp_zerostore.copy_adjoint` for ``wp.copy``, the store rewrite for
``wp.tile_store``). Each row of docs/known-issues.md's "Fixed for flagged kernels" table is one test here: the
flagged kernel against a reference computed in NumPy float64 on every version, and its negative twin, the unflagged
kernel, with the installed Warp's own result, bug included (where `_compat` says this Warp has the bug).
"""

import json
import re
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

import warp_zerostore as wp
from warp_zerostore import _compat

HELPERS = Path(__file__).parent / "helpers"

# four inputs away from the ternaries' threshold 0 (a kink there) and from 0 itself (``same`` divides by it)
VALUES = st.floats(0.25, 2.0) | st.floats(-2.0, -0.25)
XS = st.lists(VALUES, min_size=4, max_size=4).map(lambda v: np.array(v, dtype=np.float32))


def _gradient(kernel, x, seed, device, tiled=False):
    """``y`` and ``x.grad`` of one launch of ``kernel(x, y)`` (4 threads, or one tile of 4) on a Tape."""
    xa = wp.array(x, dtype=float, requires_grad=True, device=device)
    y = wp.zeros(4, dtype=float, requires_grad=True, device=device)
    with wp.Tape() as tape:
        if tiled:
            wp.launch_tiled(kernel, dim=[1], inputs=[xa, y], block_dim=1, device=device)
        else:
            wp.launch(kernel, dim=4, inputs=[xa, y], device=device)
    tape.backward(grads={y: wp.array(seed, dtype=float, device=device)})
    return y.numpy(), xa.grad.numpy()


@pytest.fixture(scope="module")
def flagged():
    from helpers import kernels_backports  # noqa: PLC0415 - built at its first launch

    return kernels_backports


@pytest.fixture(scope="module")
def stock():
    from helpers import kernels_backports_stock  # noqa: PLC0415

    return kernels_backports_stock


OTHER = np.roll(np.arange(4), -1)  # the other side's element, x[(i + 1) % 4]


# ---- a ternary whose side is an array element: the second side up to 1.10, no adjoint on 1.11-1.16 -------------


def _ternary_reference(x, seed):
    """``y[i] += x[i] if x[i] > 0 else x[(i + 1) % 4]``: each thread's gradient goes to the side it chose."""
    x64, grad = x.astype(np.float64), np.zeros(4)
    chosen = np.where(x64 > 0.0, np.arange(4), OTHER)
    np.add.at(grad, chosen, seed)
    return x64[chosen], grad


def _stock_ternary(x, seed, y_ref, grad_ref):
    """This Warp's own ``y`` and gradient of the unflagged ternary: each thread's second side, value and gradient,
    whichever side it chose (<= 1.10); no gradient (1.11-1.16); or the right ones."""
    if _compat.TERNARY_TAKES_SECOND_SIDE:
        grad = np.zeros(4)
        np.add.at(grad, OTHER, seed)
        return x.astype(np.float64)[OTHER], grad
    return y_ref, 0.0 if _compat.TERNARY_WITHOUT_ADJOINT else grad_ref


@given(x=XS, seed=st.lists(st.floats(0.5, 2.0), min_size=4, max_size=4))
def test_a_flagged_ternary_is_differentiable_on_every_version(flagged, stock, x, seed, device):
    y_ref, grad_ref = _ternary_reference(x, np.array(seed))
    y, grad = _gradient(flagged.ternary, x, np.float32(seed), device)
    np.testing.assert_allclose(y, y_ref, rtol=1e-6)
    np.testing.assert_allclose(grad, grad_ref, rtol=1e-5)
    # negative twin: the unflagged kernel keeps this Warp's own result, bug included
    y, grad = _gradient(stock.ternary, x, np.float32(seed), device)
    y_stock, grad_stock = _stock_ternary(x, np.array(seed), y_ref, grad_ref)
    np.testing.assert_allclose(y, y_stock, rtol=1e-6)
    np.testing.assert_allclose(grad, grad_stock, rtol=1e-5)


def _ternary_helper_reference(x):
    """``y[i] = pick(x, i) * x[i]`` with ``pick`` the ternary, ``y.grad`` all ones."""
    x64, grad = x.astype(np.float64), np.zeros(4)
    chosen = np.where(x64 > 0.0, np.arange(4), OTHER)
    grad += x64[chosen]  # d/dx[i] of the factor x[i]
    np.add.at(grad, chosen, x64)  # d/dx[chosen] of pick
    return x64[chosen] * x64, grad


def _stock_ternary_helper(x, y_ref, grad_ref):
    """This Warp's own ``y`` and gradient of the unflagged ``pick(x, i) * x[i]``: pick the second side's element
    (<= 1.10; its gradient there follows no simple rule: None); pick without a gradient (1.11-1.16); or the right
    ones."""
    x64 = x.astype(np.float64)
    if _compat.TERNARY_TAKES_SECOND_SIDE:
        return x64[OTHER] * x64, None
    without_pick = x64[np.where(x64 > 0.0, np.arange(4), OTHER)]
    return y_ref, without_pick if _compat.TERNARY_WITHOUT_ADJOINT else grad_ref


@given(x=XS)
def test_a_ternary_in_a_helper_of_a_flagged_kernel_is_differentiable(flagged, stock, x, device):
    y_ref, grad_ref = _ternary_helper_reference(x)
    y, grad = _gradient(flagged.ternary_in_helper, x, np.ones(4, np.float32), device)
    np.testing.assert_allclose(y, y_ref, rtol=1e-6)
    np.testing.assert_allclose(grad, grad_ref, rtol=1e-5)
    y, grad = _gradient(stock.ternary_in_helper, x, np.ones(4, np.float32), device)
    y_stock, grad_stock = _stock_ternary_helper(x, y_ref, grad_ref)
    np.testing.assert_allclose(y, y_stock, rtol=1e-6)
    if grad_stock is not None:
        np.testing.assert_allclose(grad, grad_stock, rtol=1e-5)


@given(x=XS)
def test_a_helper_shared_by_kernels_of_two_modes_is_fixed_for_the_flagged_one_only(stock, x, device):
    """One module, one helper, a flagged and an unflagged kernel: the flagged one calls a variant of the helper built
    with the fix; the unflagged one calls Warp's, and keeps its result, bug included: the same as the unflagged
    kernel of a module without a flagged one."""
    from helpers import kernels_backports_mixed as mixed  # noqa: PLC0415

    y_ref, grad_ref = _ternary_helper_reference(x)
    y, grad = _gradient(mixed.flagged, x, np.ones(4, np.float32), device)
    np.testing.assert_allclose(y, y_ref, rtol=1e-6)
    np.testing.assert_allclose(grad, grad_ref, rtol=1e-5)
    y, grad = _gradient(mixed.unflagged, x, np.ones(4, np.float32), device)
    y_stock, grad_stock = _gradient(stock.ternary_in_helper, x, np.ones(4, np.float32), device)
    np.testing.assert_array_equal(y, y_stock)
    np.testing.assert_array_equal(grad, grad_stock)
    y_stock, grad_stock = _stock_ternary_helper(x, y_ref, grad_ref)
    np.testing.assert_allclose(y, y_stock, rtol=1e-6)
    if grad_stock is not None:
        np.testing.assert_allclose(grad, grad_stock, rtol=1e-5)


# ---- wp.copy's adjoint: a window's offsets swapped up to 1.14, src.grad overwritten up to 1.16 -------------------


@pytest.mark.parametrize("mode", [True, False, None])
def test_copy_adjoint_with_window_offsets(mode, device):
    """``wp.copy(d, s, dest_offset=1, src_offset=2, count=2)``: ``s.grad[2:4] += d.grad[1:3]``. Recorded under the
    flag's rules (``copy_zero_store(True)`` or ``False``) the package's adjoint runs, right on every version; with
    ``None`` Warp's own (the offsets swapped up to 1.14)."""
    s = wp.array([1.0, 2.0, 3.0, 4.0], dtype=float, requires_grad=True, device=device)
    d = wp.zeros(4, dtype=float, requires_grad=True, device=device)
    with wp.Tape() as tape, wp.copy_zero_store(mode):
        wp.copy(d, s, dest_offset=1, src_offset=2, count=2)
    tape.backward(grads={d: wp.array([10.0, 20.0, 30.0, 40.0], dtype=float, device=device)})
    right = mode is not None or _compat.STOCK_COPY_ADJOINT_OFFSETS_RIGHT
    assert s.grad.numpy().tolist() == ([0.0, 0.0, 20.0, 30.0] if right else [0.0, 30.0, 40.0, 0.0])


@pytest.mark.parametrize("mode", [True, False, None])
def test_copy_adjoint_accumulates_into_the_source_gradient(mode, device):
    """``t = copy(s); y = s * s``: ``s.grad = 1 + 2 s``. Under the flag's rules the package's adjoint adds into
    ``s.grad``; Warp's own copies over it up to 1.16 (``s.grad = 1``)."""
    from helpers.kernels_backports_stock import square  # noqa: PLC0415

    s = wp.array([1.0, 2.0], dtype=float, requires_grad=True, device=device)
    t = wp.zeros(2, dtype=float, requires_grad=True, device=device)
    y = wp.zeros(2, dtype=float, requires_grad=True, device=device)
    with wp.Tape() as tape, wp.copy_zero_store(mode):
        wp.copy(t, s)
        wp.launch(square, dim=2, inputs=[s, y], device=device)
    tape.backward(grads={t: wp.ones(2, dtype=float, device=device), y: wp.ones(2, dtype=float, device=device)})
    right = mode is not None or _compat.STOCK_COPY_ADJOINT_ACCUMULATES
    assert s.grad.numpy().tolist() == ([3.0, 5.0] if right else [1.0, 1.0])


# ---- a tile store over a tile store: Warp 1.9's tile_store adjoint accumulates ---------------------------------


@given(x=XS)
def test_a_flagged_tile_store_over_a_tile_store_zeroes(flagged, stock, x, device):
    """``y = x * x`` then ``y = x`` through tile stores: ``x.grad = 1``; where the adjoint accumulates, the first
    store's ``2 x`` flows on too."""
    y, grad = _gradient(flagged.tile_store_twice, x, np.ones(4, np.float32), device, tiled=True)
    np.testing.assert_allclose(y, x, rtol=1e-6)
    np.testing.assert_allclose(grad, 1.0, rtol=1e-6)
    y, grad = _gradient(stock.tile_store_twice, x, np.ones(4, np.float32), device, tiled=True)
    expected = 1.0 if _compat.STOCK_TILE_STORE_ZEROES else 1.0 + 2.0 * x.astype(np.float64)
    np.testing.assert_allclose(grad, expected, rtol=1e-5)


# ---- build errors: tile_map of tanh/sqrt (<= 1.18), a @wp.func_grad called from a helper (1.9) ------------------


@given(x=XS)
def test_a_flagged_tile_map_of_tanh_and_sqrt_builds_and_is_right(x, device):
    """``tanh(t) + sqrt(t * t)`` mapped over a tile: the element adjoints of tanh and sqrt take their result, which
    Warp <= 1.18's tile map does not pass; a flagged kernel's map passes it."""
    from helpers import kernels_backports_tanh as flagged  # noqa: PLC0415

    y, grad = _gradient(flagged.tile_map_tanh, x, np.ones(4, np.float32), device, tiled=True)
    x64 = x.astype(np.float64)
    np.testing.assert_allclose(y, np.tanh(x64) + np.abs(x64), rtol=1e-5)
    np.testing.assert_allclose(grad, 1.0 - np.tanh(x64) ** 2 + np.sign(x64), rtol=1e-4, atol=1e-6)


def test_an_unflagged_tile_map_of_tanh_keeps_warps_build(device):
    """The negative twin, alone in a module of its own: Warp's build error where this Warp has it."""
    from helpers import kernels_backports_tanh_stock as module  # noqa: PLC0415

    x = np.array([0.5, -0.25, 1.0, 2.0], dtype=np.float32)
    if _compat.TILE_MAP_ADJOINT_DISPATCHES:
        _, grad = _gradient(module.tile_map_tanh, x, np.ones(4, np.float32), device, tiled=True)
        np.testing.assert_allclose(grad, 1.0 - np.tanh(x) ** 2 + np.sign(x), rtol=1e-4)
    else:
        with pytest.raises(Exception, match="build failed|compil"):
            _gradient(module.tile_map_tanh, x, np.ones(4, np.float32), device, tiled=True)


def test_an_unflagged_tile_map_of_tanh_builds_in_a_module_with_a_flagged_kernel(device):
    """A module compiles whole, and its flagged kernel builds only if it does: the header's map macros hold for every
    kernel of a module that holds a flagged one (the unflagged kernel's own code is Warp's)."""
    from helpers import kernels_backports_tanh_mixed as mixed  # noqa: PLC0415

    x = np.array([0.5, -0.25, 1.0, 2.0], dtype=np.float32)
    _, grad = _gradient(mixed.unflagged_tile_map_tanh, x, np.ones(4, np.float32), device, tiled=True)
    np.testing.assert_allclose(grad, 1.0 - np.tanh(x.astype(np.float64)) ** 2, rtol=1e-4)


@given(x=XS)
def test_a_hand_written_adjoint_called_from_a_helper_builds_flagged(x, device):
    """``sine`` has a ``@wp.func_grad``, called from ``sine_twice``: ``y = 2 sin x``, ``x.grad = 2 cos x``."""
    from helpers import kernels_backports_custom as flagged  # noqa: PLC0415

    y, grad = _gradient(flagged.custom_adjoint_from_func, x, np.ones(4, np.float32), device)
    np.testing.assert_allclose(y, 2.0 * np.sin(x.astype(np.float64)), rtol=1e-5)
    np.testing.assert_allclose(grad, 2.0 * np.cos(x.astype(np.float64)), rtol=1e-4, atol=1e-6)


def test_an_unflagged_hand_written_adjoint_called_from_a_helper_keeps_warps_build(device):
    from helpers import kernels_backports_custom_stock as module  # noqa: PLC0415

    x = np.array([0.5, -0.25, 1.0, 2.0], dtype=np.float32)
    if _compat.CUSTOM_ADJOINTS_FIRST:
        _, grad = _gradient(module.custom_adjoint_from_func, x, np.ones(4, np.float32), device)
        np.testing.assert_allclose(grad, 2.0 * np.cos(x), rtol=1e-4)
    else:
        with pytest.raises(Exception, match="build failed|compil"):
            _gradient(module.custom_adjoint_from_func, x, np.ones(4, np.float32), device)


# ---- a helper's adjoint where a backward kernel needs it ---------------------------------------------------------


@given(x=XS)
def test_a_forward_only_modules_helper_has_its_adjoint_for_a_flagged_kernel(x, device):
    """``y = x * same(x)`` with ``same(p) = square(p) / p``, in a module built with ``enable_backward=False`` whose
    kernels opt back in: ``x.grad = 2 x``. Up to 1.17 Warp generates no adjoint for the module's helpers, so the
    unflagged twin (same module) gets only the product's own term, ``x``."""
    from helpers import kernels_backports_forward_only as module  # noqa: PLC0415

    x64 = x.astype(np.float64)
    y, grad = _gradient(module.flagged, x, np.ones(4, np.float32), device)
    np.testing.assert_allclose(y, x64 * x64, rtol=1e-5)
    np.testing.assert_allclose(grad, 2.0 * x64, rtol=1e-5)
    y, grad = _gradient(module.unflagged, x, np.ones(4, np.float32), device)
    np.testing.assert_allclose(y, x64 * x64, rtol=1e-5)
    np.testing.assert_allclose(grad, x64 if _compat.HELPER_ADJOINT_FOLLOWS_MODULE_OPTION else 2.0 * x64, rtol=1e-5)


def _fresh_processes(mode: str, x: list, runs: int) -> list:
    script = str(HELPERS / "backports_shared_helper.py")
    outputs = []
    for _ in range(runs):
        done = subprocess.run([sys.executable, script, mode, *map(str, x)], capture_output=True, text=True, check=True)
        outputs.append(json.loads(done.stdout.strip().splitlines()[-1]))
    return outputs


def test_a_helper_first_built_for_a_forward_only_kernel_is_differentiable_flagged_in_every_process():
    """``y = outer(x) * x``, ``outer`` calling ``inner(p) = p * p``, with a forward-only kernel calling ``outer``
    too: ``x.grad = 3 x^2``. Which kernel Warp builds first varies between processes, and up to 1.15, where the
    forward-only one is first, ``inner`` keeps no adjoint (``x.grad = x^2``: in some of six fresh processes on each
    of 1.9.1 to 1.15.0, ``make probe-versions``). Flagged, each of six processes is right; unflagged, each of three
    is one of the two."""
    x = [0.5, -0.75, 1.25, 2.0]
    x64 = np.array(x)
    for run in _fresh_processes("flagged", x, 6):
        np.testing.assert_allclose(run["y"], x64**3, rtol=1e-5)
        np.testing.assert_allclose(run["x_grad"], 3.0 * x64**2, rtol=1e-5)
    unflagged = [run["x_grad"] for run in _fresh_processes("unflagged", x, 3)]
    right = [np.allclose(g, 3.0 * x64**2, rtol=1e-5) for g in unflagged]
    assert all(r or np.allclose(g, x64**2, rtol=1e-5) for r, g in zip(right, unflagged))
    if _compat.HELPER_BACKWARD_USE_PROPAGATED:
        assert all(right)


# ---- a value assigned to a struct local's field (in a kernel, in a helper returning it): no adjoint up to 1.14 ----


@pytest.mark.parametrize("name", ["field", "updated", "nested", "returned"])
def test_a_flagged_struct_field_assignment_is_differentiable(name, device):
    """``s.a = x[i]; y[i] = s.a * s.a`` (also ``s.a = 0.0; s.a += x[i]`` and ``o.inner.a = x[i]``), and
    ``make(x[i]).a`` with ``make`` assigning ``r.a = p * p``: ``x.grad = 2 x``. Warp <= 1.14 gives the assignment no
    adjoint (zero); a flagged kernel, and its helper, get 1.15's code."""
    from helpers import kernels_backports_structs as module  # noqa: PLC0415

    x = np.array([0.5, -0.25, 1.0, 2.0], dtype=np.float32)
    y, grad = _gradient(getattr(module, name), x, np.ones(4, np.float32), device)
    np.testing.assert_allclose(y, x.astype(np.float64) ** 2, rtol=1e-6)
    np.testing.assert_allclose(grad, 2.0 * x.astype(np.float64), rtol=1e-5)


@pytest.mark.parametrize("name", ["field_stock", "updated_stock", "nested_stock", "returned_stock"])
def test_an_unflagged_struct_field_assignment_keeps_warps_gradient(name, device):
    """The negative twins, in the flagged kernels' module (``make`` shared): zero where this Warp drops the
    assignment's adjoint (<= 1.14), else ``2 x``."""
    from helpers import kernels_backports_structs as module  # noqa: PLC0415

    x = np.array([0.5, -0.25, 1.0, 2.0], dtype=np.float32)
    y, grad = _gradient(getattr(module, name), x, np.ones(4, np.float32), device)
    np.testing.assert_allclose(y, x.astype(np.float64) ** 2, rtol=1e-6)
    expected = 2.0 * x.astype(np.float64) if _compat.STOCK_STRUCT_FIELD_STORES_DIFFERENTIABLE else 0.0
    np.testing.assert_allclose(grad, expected, rtol=1e-5)


def _forward_of(module, key: str) -> str:
    """The generated CPU forward function of kernel ``key`` of ``module``, as text."""
    _compat.mark_modified(module)
    out = Path(tempfile.mkdtemp())
    wp.compile_aot_module(module, device="cpu", module_dir=str(out))
    (cpp,) = out.glob("*.cpp")
    (found,) = re.findall(
        rf"^(?:static )?void {key}_[0-9a-f]+_cpu_kernel_forward\(.*?^\}}", cpp.read_text(), re.M | re.S
    )
    return found


@pytest.mark.parametrize(("name", "stores"), [("field", 1), ("updated", 2)])
def test_a_flagged_kernels_field_store_is_generated_once_into_a_copy(name, stores):
    """In a flagged kernel's body a struct local's field store is `local_copies`' (the struct copied, then the field
    stored: Warp 1.15's store on <= 1.14); `backports` gets only what that leaves, so each assignment is one store
    in the forward function on every version, never two, each into a copy of the struct."""
    from helpers import kernels_backports_structs as module  # noqa: PLC0415

    forward = _forward_of(_compat.kernel_module(module.field), name)
    copies = set(re.findall(r"^\s*(var_\d+) = wp::copy\(var_\d+\);", forward, re.M))
    targets = re.findall(r"^\s*(var_\d+)\.a = var_\d+;", forward, re.M)
    assert len(targets) == stores and set(targets) <= copies, forward


def test_a_flagged_nested_field_store_is_generated_once():
    """``o.inner.a = e`` is left by `local_copies` (a part of a field): on <= 1.14 `backports` stores it in place,
    once, as Warp 1.15 does; from 1.15 Warp's own store, the same line."""
    from helpers import kernels_backports_structs as module  # noqa: PLC0415

    forward = _forward_of(_compat.kernel_module(module.field), "nested")
    stores = re.findall(r"^\s*var_\d+\.inner\.a = var_\d+;", forward, re.M)
    assert len(stores) == 1, forward
