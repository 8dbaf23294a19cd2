"""Tile stores follow the kernel's flag on every supported Warp (1.9 accumulates, 1.10+ zero when unflagged)."""

import numpy as np
import pytest
from helpers import kernels_tiles as kt

import warp_zerostore as wp
from warp_zerostore import _compat

TOL = {"float32": 2e-5, "float64": 1e-12}


def zeroes(flag) -> bool:
    return _compat.STOCK_TILE_STORE_ZEROES if flag is None else flag


@pytest.mark.parametrize("flag", [True, False, None])
@pytest.mark.parametrize("shape", kt.MATMUL_SHAPES, ids=lambda s: "x".join(map(str, s)))
@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("size", [(8, 8), (10, 7)], ids=["whole-tiles", "partial-tiles"])
def test_tile_matmul_seed(dtype, shape, flag, size, device):
    """c = tile_load(C); tile_matmul(a, b, c, alpha, beta); tile_store(C, c): C.grad = beta*adj_C in zero mode."""
    tm, tn, tk = shape
    m, n = size
    rng = np.random.default_rng(7)
    npt = np.float32 if dtype == "float32" else np.float64
    A, B, C = (rng.random(s).astype(npt) for s in ((m, tk), (tk, n), (m, n)))
    adj_C = rng.random((m, n)).astype(npt)
    T = wp.float32 if dtype == "float32" else wp.float64
    a, b, c = (wp.array(v, dtype=T, requires_grad=True, device=device) for v in (A, B, C))
    with wp.Tape() as tape:
        wp.launch_tiled(
            kt.MATMUL[(dtype, shape, flag)],
            dim=[-(-m // tm), -(-n // tn)],
            inputs=[a, b, c],
            block_dim=32,
            device=device,
        )
    tape.backward(grads={c: wp.array(adj_C, dtype=T, device=device)})
    tol = TOL[dtype]
    A64, B64, C64, G = (v.astype(np.float64) for v in (A, B, C, adj_C))
    np.testing.assert_allclose(c.numpy(), kt.ALPHA * A64 @ B64 + kt.BETA * C64, rtol=tol * 10, atol=tol * 10)
    np.testing.assert_allclose(a.grad.numpy(), kt.ALPHA * G @ B64.T, rtol=tol * 10, atol=tol * 10)
    np.testing.assert_allclose(b.grad.numpy(), kt.ALPHA * A64.T @ G, rtol=tol * 10, atol=tol * 10)
    expected_c = kt.BETA * G if zeroes(flag) else G + kt.BETA * G
    np.testing.assert_allclose(c.grad.numpy(), expected_c, rtol=tol * 10, atol=tol * 10)


def _data(dtype, shape):
    rng = np.random.default_rng(3)
    if dtype == "vec3":
        return rng.random(shape + (3,)).astype(np.float32), wp.vec3
    npt, T = (np.float32, wp.float32) if dtype == "float32" else (np.float64, wp.float64)
    return rng.random(shape).astype(npt), T


OVERWRITE_CASES = {1: ((8,), (2,)), 2: ((8, 4), (2, 2)), 3: ((4, 4, 2), (2, 2, 1))}  # array shape, grid


@pytest.mark.parametrize("flag", [True, False, None])
@pytest.mark.parametrize("dtype", ["float32", "float64", "vec3"])
@pytest.mark.parametrize("ndim", [1, 2, 3])
def test_tile_store_overwrite(ndim, dtype, flag, device):
    """y = x, then y = 2x, both tile stores: x.grad = 2 (zero) or 1 + 2 (accumulate)."""
    shape, grid = OVERWRITE_CASES[ndim]
    values, T = _data(dtype, shape)
    x = wp.array(values, dtype=T, requires_grad=True, device=device)
    y = wp.zeros(shape, dtype=T, requires_grad=True, device=device)
    with wp.Tape() as tape:
        wp.launch_tiled(kt.OVERWRITES[(dtype, flag)][ndim], dim=list(grid), inputs=[x, y], block_dim=32, device=device)
    tape.backward(grads={y: wp.array(np.ones_like(values), dtype=T, device=device)})
    np.testing.assert_allclose(y.numpy(), 2.0 * values, rtol=1e-6)
    np.testing.assert_array_equal(x.grad.numpy(), 2.0 if zeroes(flag) else 3.0)
    np.testing.assert_array_equal(y.grad.numpy(), 0.0 if zeroes(flag) else 1.0)


@pytest.mark.parametrize("flag", [True, False, None])
def test_tile_store_indexed_overwrite(flag, device):
    values, T = _data("float32", (4, 4))
    x = wp.array(values, dtype=T, requires_grad=True, device=device)
    y = wp.zeros((6, 4), dtype=T, requires_grad=True, device=device)
    with wp.Tape() as tape:
        wp.launch_tiled(
            kt.OVERWRITES[("float32", flag)]["indexed"], dim=[2], inputs=[x, y], block_dim=32, device=device
        )
    seed = np.ones((6, 4), dtype=np.float32)
    tape.backward(grads={y: wp.array(seed, dtype=T, device=device)})
    expected_y = np.zeros((6, 4), dtype=np.float32)
    expected_y[[5, 4, 3, 2]] = 2.0 * values
    np.testing.assert_allclose(y.numpy(), expected_y, rtol=1e-6)
    np.testing.assert_array_equal(x.grad.numpy(), 2.0 if zeroes(flag) else 3.0)
    written = np.zeros((6, 4), dtype=bool)
    written[[5, 4, 3, 2]] = True
    np.testing.assert_array_equal(y.grad.numpy()[written], 0.0 if zeroes(flag) else 1.0)
    np.testing.assert_array_equal(y.grad.numpy()[~written], 1.0)  # rows no store touched keep their gradient


@pytest.mark.parametrize("flag", [True, False])
def test_tile_atomic_add_keeps_accumulating(flag, device):
    values, T = _data("float32", (8,))
    x = wp.array(values, dtype=T, requires_grad=True, device=device)
    y = wp.zeros(8, dtype=T, requires_grad=True, device=device)
    with wp.Tape() as tape:
        wp.launch_tiled(kt.OVERWRITES[("float32", flag)]["atomic"], dim=[2], inputs=[x, y], block_dim=32, device=device)
    tape.backward(grads={y: wp.ones(8, dtype=T, device=device)})
    np.testing.assert_allclose(y.numpy(), 3.0 * values, rtol=1e-6)
    np.testing.assert_array_equal(x.grad.numpy(), 3.0)
    np.testing.assert_array_equal(y.grad.numpy(), 1.0)
