"""Linearity per argument for tile builtins (`builtin_facts`: ``linear_args``, ``products``): a stale read of a
scratch array reused between a tiled FFT, its inverse or a transpose (Warp's own Navier-Stokes example does this,
"safe because FFT/IFFT are linear") is kept as a note, and the plain Tape's gradient equals the snapshot Tape's;
a tile product of two loaded values is bilinear, not linear: its stale read stays real, and there the plain
Tape's gradient is off (the negative twin). Kernels are built once for the module; data is drawn per example."""

import ast
import warnings

import numpy as np
import pytest
from helpers import kernels_tile_linear as k

import warp_zerostore as wp
from warp_zerostore import _compat
from warp_zerostore.value_use import ValueUses

# On the CPU, tile_fft and tile_ifft leave the tile as it is before warp-lang 1.14 (the FFT is a CUDA-only
# implementation there), so a comparison with NumPy's FFT only means something from 1.14 on.
FFT_ON_CPU = _compat.WARP_VERSION >= (1, 14, 0)
NEEDS_CPU_FFT = pytest.mark.skipif(not FFT_ON_CPU, reason="tile_fft is a no-op on the CPU before warp-lang 1.14")

# (the statements after `t = wp.tile_load(x, ...)`, whether a backward reads t's values)
TILE_CASES = [
    ("wp.tile_fft(t)\n    wp.tile_store(y, t)", False),
    ("wp.tile_ifft(t)\n    wp.tile_store(y, t)", False),
    ("wp.tile_store(y, wp.tile_transpose(t))", False),
    ("u = wp.tile_transpose(t)\n    wp.tile_fft(u)\n    wp.tile_store(y, u)", False),
    ("wp.tile_store(y, wp.tile_matmul(t, wp.tile_load(w, shape=(4, 4))))", True),  # bilinear: a product of loads
    ("wp.tile_store(y, wp.tile_matmul(wp.tile_load(w, shape=(4, 4)), t))", True),
    ("wp.tile_cholesky_inplace(t)\n    wp.tile_store(y, t)", True),  # a nonlinear builtin acting in place
    ("wp.tile_store(y, wp.tile_map(wp.sin, t))", True),
    ("wp.tile_store(y, t)\n    v = wp.tile_load(y, shape=(4, 4))\n    wp.tile_store(w, wp.tile_map(wp.sin, v))", True),
]


@pytest.mark.parametrize("body, needed", TILE_CASES, ids=[c[0].split("\n")[0] for c in TILE_CASES])
def test_whether_a_backward_reads_a_loaded_tile(body, needed):
    source = "def f(x, w, y):\n    t = wp.tile_load(x, shape=(4, 4))\n    " + body + "\n"
    tree = ast.parse(source)
    load = next(n for n in ast.walk(tree) if isinstance(n, ast.Call) and getattr(n.func, "attr", "") == "tile_load")
    assert ValueUses(tree, lambda call: isinstance(call.func, ast.Attribute)).is_needed(load) is needed


def _complex(rng, shape):
    return wp.array(rng.normal(size=(*shape, 2)).astype(np.float32), dtype=wp.vec2f, requires_grad=True)


def _fft_program(tape, a, seeds):
    """s = fft(a); b = ifft(s); s = fft(b) (over s, which ifft read); cotangents on b and s."""
    s = wp.zeros((k.ROWS, k.N), dtype=wp.vec2f, requires_grad=True)
    b = wp.zeros((k.ROWS, k.N), dtype=wp.vec2f, requires_grad=True)
    with tape:
        wp.launch_tiled(k.fft_rows, dim=[k.ROWS], inputs=[a, s], block_dim=1)
        wp.launch_tiled(k.ifft_rows, dim=[k.ROWS], inputs=[s, b], block_dim=1)
        wp.launch_tiled(k.fft_rows, dim=[k.ROWS], inputs=[b, s], block_dim=1)
    tape.backward(grads={b: wp.array(seeds[0], dtype=wp.vec2f), s: wp.array(seeds[1], dtype=wp.vec2f)})
    return a.grad.numpy().copy()


def _run(program, tape, *args):
    with warnings.catch_warnings(record=True) as said:
        warnings.simplefilter("always")
        grad = program(tape, *args)
    return grad, [h for h in getattr(tape, "hazards", []) if h.kind == "stale read"], said


@NEEDS_CPU_FFT  # below it the FFTs leave s as it was: the second write changes no byte, and nothing is stale
@pytest.mark.parametrize("seed", range(3))
def test_a_stale_read_through_tiled_ffts_is_a_note_and_changes_no_gradient(seed):
    rng = np.random.default_rng(seed)
    values = rng.normal(size=(k.ROWS, k.N, 2)).astype(np.float32)
    seeds = rng.normal(size=(2, k.ROWS, k.N, 2)).astype(np.float32)
    grads = {}
    for name, tape in (("plain", wp.Tape()), ("snapshot", wp.Tape(snapshot=True)), ("check", wp.Tape(check="warn"))):
        a = wp.array(values, dtype=wp.vec2f, requires_grad=True)
        grads[name], stale, said = _run(_fft_program, tape, a, seeds)
        if name == "check":
            assert stale and not any(h.real for h in stale), [h.message() for h in stale]
            assert [h.reader.kernel for h in stale] == ["ifft_rows"]
            assert not [w for w in said if issubclass(w.category, wp.OverwriteWarning)]
    assert grads["plain"].tobytes() == grads["snapshot"].tobytes() == grads["check"].tobytes()


def _fft_matrix(transform, n: int) -> np.ndarray:
    """The real 2n x 2n matrix of a complex transform of n values (real and imaginary parts interleaved)."""
    columns = []
    for j in range(2 * n):
        e = np.zeros(2 * n)
        e[j] = 1.0
        z = transform(e[0::2] + 1j * e[1::2])
        columns.append(np.stack([z.real, z.imag], axis=-1).reshape(-1))
    return np.array(columns).T


@NEEDS_CPU_FFT
def test_the_fft_programs_gradient_is_numpys():
    rng = np.random.default_rng(7)
    values = rng.normal(size=(k.ROWS, k.N, 2)).astype(np.float32)
    seeds = rng.normal(size=(2, k.ROWS, k.N, 2)).astype(np.float32)
    grad = _fft_program(wp.Tape(), wp.array(values, dtype=wp.vec2f, requires_grad=True), seeds)
    forward = _fft_matrix(np.fft.fft, k.N)
    inverse = _fft_matrix(lambda z: np.fft.ifft(z) * k.N, k.N)  # Warp's inverse is not scaled by 1/N
    b_of_a, s_of_a = inverse @ forward, forward @ inverse @ forward
    for row in range(k.ROWS):
        expected = b_of_a.T @ seeds[0, row].reshape(-1) + s_of_a.T @ seeds[1, row].reshape(-1)
        np.testing.assert_allclose(grad[row].reshape(-1), expected, rtol=1e-4, atol=1e-3)


def _transpose_program(tape, a, c, seed):
    s = wp.zeros((k.ROWS, k.N), dtype=float, requires_grad=True)
    y = wp.zeros((k.N, k.ROWS), dtype=float, requires_grad=True)
    with tape:
        wp.launch(k.scale, dim=(k.ROWS, k.N), inputs=[a, s])
        wp.launch_tiled(k.transpose, dim=[1], inputs=[s, y], block_dim=1)
        wp.launch(k.scale, dim=(k.ROWS, k.N), inputs=[c, s])  # over s, which transpose read
    tape.backward(grads={y: wp.array(seed, dtype=float)})
    return a.grad.numpy().copy()


def test_a_stale_read_through_a_tile_transpose_is_a_note_and_the_gradient_numpys():
    rng = np.random.default_rng(3)
    values, other = rng.normal(size=(2, k.ROWS, k.N)).astype(np.float32)
    seed = rng.normal(size=(k.N, k.ROWS)).astype(np.float32)
    grads = {}
    for name, tape in (("plain", wp.Tape()), ("check", wp.Tape(check="warn"))):
        a = wp.array(values, dtype=float, requires_grad=True)
        c = wp.array(other, dtype=float, requires_grad=True)
        grads[name], stale, _ = _run(_transpose_program, tape, a, c, seed)
        if name == "check":
            assert [(h.reader.kernel, h.real) for h in stale] == [("transpose", False)]
    np.testing.assert_allclose(grads["plain"], 3.0 * seed.T, rtol=1e-6)
    assert grads["plain"].tobytes() == grads["check"].tobytes()


def _product_program(tape, a, c, w, seed):
    s = wp.zeros((k.N, k.N), dtype=float, requires_grad=True)
    y = wp.zeros((k.N, k.N), dtype=float, requires_grad=True)
    with tape:
        wp.launch(k.scale, dim=(k.N, k.N), inputs=[a, s])
        wp.launch_tiled(k.product, dim=[1], inputs=[s, w, y], block_dim=1)
        wp.launch(k.scale, dim=(k.N, k.N), inputs=[c, s])  # over s, which the product read
    tape.backward(grads={y: wp.array(seed, dtype=float)})
    return w.grad.numpy().copy()


def test_a_stale_read_through_a_tile_product_stays_real_and_the_plain_gradient_is_off():  # negative twin
    rng = np.random.default_rng(5)
    values, other, weights = rng.normal(size=(3, k.N, k.N)).astype(np.float32)
    seed = rng.normal(size=(k.N, k.N)).astype(np.float32)
    right = (3.0 * values).T @ seed  # d<seed, s @ w>/dw with s = 3 a, as the product read it
    grads = {}
    for name, tape in (("plain", wp.Tape()), ("snapshot", wp.Tape(snapshot=True)), ("check", wp.Tape(check="warn"))):
        arrays = [wp.array(v, dtype=float, requires_grad=True) for v in (values, other, weights)]
        grads[name], stale, said = _run(_product_program, tape, *arrays, seed)
        if name == "check":
            assert [(h.reader.kernel, h.real) for h in stale] == [("product", True)]
            assert [w for w in said if issubclass(w.category, wp.OverwriteWarning)]
    np.testing.assert_allclose(grads["snapshot"], right, rtol=1e-4, atol=1e-4)
    assert not np.allclose(grads["plain"], right, rtol=1e-2)  # the backward read s = 3 c
