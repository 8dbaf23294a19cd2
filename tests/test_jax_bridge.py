"""The JAX bridge: gradients equal jax.grad of the same jnp math, cotangents never written, in-place kernels.

Kernels live in ``helpers/kernels_jax.py`` (built once per session); tests draw data, not kernels. Skipped,
saying why, where JAX is not installed or the warp-lang has no JAX FFI on CPU (before 1.19).
"""

import os
import pathlib
import runpy
import subprocess
import sys

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

pytest.importorskip(
    "jax", reason="warp_zerostore.jax needs JAX: pip install 'warp_zerostore[jax]' (jax==0.10.2 jaxlib==0.10.2)"
)

import warp  # noqa: E402

from warp_zerostore import _compat  # noqa: E402

if _compat.jax_ffi_module() is None:
    pytest.skip(f"warp-lang {warp.__version__} has no JAX FFI (jax_callable)", allow_module_level=True)
if "cpu" not in _compat.jax_ffi_platforms():
    pytest.skip(f"warp-lang {warp.__version__}'s JAX FFI runs on CUDA only (CPU from 1.19)", allow_module_level=True)

import jax  # noqa: E402
import jax.numpy as jnp  # noqa: E402
import jax.test_util  # noqa: E402
from helpers import kernels_jax as K  # noqa: E402

import warp_zerostore as wp  # noqa: E402
import warp_zerostore.jax as wpj  # noqa: E402


@pytest.fixture(autouse=True, scope="module")
def float64_jax():
    """float64 references (the bridge's float32 paths are tested too); restored after, for other test modules."""
    saved = jax.config.jax_enable_x64
    jax.config.update("jax_enable_x64", True)
    yield
    jax.config.update("jax_enable_x64", saved)


F64 = jnp.float64
ROOT = pathlib.Path(__file__).resolve().parents[1]

# ------------------------------------------------------------------------------------------------------------
# Bridged ops, once per session

seed = wpj.kernel_op(K.seed, outputs={"y": "x0"})
double_store = wpj.kernel_op(K.double_store, outputs={"y": "xa"})
double_store_accumulate = wpj.kernel_op(K.double_store_accumulate, outputs={"y": "xa"})
two_outputs = wpj.kernel_op(K.two_outputs, outputs={"y": "x", "z": "x"})
square_add = wpj.kernel_op(K.square_add_in_place, in_out=("a",))
scale = wpj.kernel_op(K.scale, outputs={"y": "x"})
cube_plus_3x = wpj.op(outputs={"y": "x"}, tape=lambda: wp.Tape(snapshot=True))(K.cube_plus_3x)
cube_plus_3x_no_snapshot = wpj.op(outputs={"y": "x"}, name="cube_plus_3x_no_snapshot")(K.cube_plus_3x)


def seed_math(x0, x1, x2):
    return (x0 * x1 * x2) ** 2


def _rev(fn, args):
    jax.test_util.check_grads(fn, args, order=1, modes=["rev"], atol=1e-6, rtol=1e-6)


def _data(n=8, seed_=0, dtype=F64):
    return jnp.asarray(np.random.default_rng(seed_).uniform(0.5, 1.5, n), dtype=dtype)


# ------------------------------------------------------------------------------------------------------------
# Gradients against jax.grad of the same jnp math


@given(n=st.integers(1, 40), data=st.randoms(use_true_random=False))
def test_seed_matches_jax_grad(n, data):
    xs = [jnp.asarray([data.uniform(-2.0, 2.0) for _ in range(n)], dtype=F64) for _ in range(3)]
    loss = lambda *a: jnp.sum(jnp.sin(seed(*a)))  # noqa: E731
    reference = lambda *a: jnp.sum(jnp.sin(seed_math(*a)))  # noqa: E731
    np.testing.assert_allclose(seed(*xs), seed_math(*xs), rtol=1e-12)
    for got, want in zip(jax.grad(loss, argnums=(0, 1, 2))(*xs), jax.grad(reference, argnums=(0, 1, 2))(*xs)):
        np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-12)


def test_seed_check_grads_and_float32():
    _rev(seed, [_data(8, s) for s in range(3)])
    xs = [_data(8, s, jnp.float32) for s in range(3)]
    got = jax.grad(lambda a: seed(a, xs[1], xs[2]).sum())(xs[0])
    want = jax.grad(lambda a: seed_math(a, xs[1], xs[2]).sum())(xs[0])
    assert got.dtype == jnp.float32
    np.testing.assert_allclose(got, want, rtol=1e-5)


def test_double_store_zero_store_kernel():
    """y = 2*xa; y = 3*xb in a zero_store=True kernel: dxa = 0, dxb = 3 (jax.grad of y = 3*xb)."""
    xa, xb = _data(6, 1), _data(6, 2)
    ga, gb = jax.grad(lambda a, b: double_store(a, b).sum(), argnums=(0, 1))(xa, xb)
    np.testing.assert_array_equal(ga, np.zeros(6))
    np.testing.assert_array_equal(gb, np.full(6, 3.0))
    _rev(double_store, [xa, xb])


def test_double_store_accumulate_kernel_keeps_its_flag():
    """Negative twin: the bridge keeps the kernel's zero_store=False, so dxa is the accumulated 2."""
    xa, xb = _data(6, 1), _data(6, 2)
    ga, _ = jax.grad(lambda a, b: double_store_accumulate(a, b).sum(), argnums=(0, 1))(xa, xb)
    np.testing.assert_array_equal(ga, np.full(6, 2.0))


def test_stock_jax_kernel_gets_the_double_store_wrong():
    """What the package fixes, shown on Warp's own jax_kernel with a stock kernel (not asserted beyond that)."""
    f = warp.jax_kernel(K.double_store_f32, enable_backward=True)
    xa, xb = _data(6, 1, jnp.float32), _data(6, 2, jnp.float32)
    ga = jax.grad(lambda a: f(a, xb)[0].sum())(xa)
    if np.allclose(ga, 0.0):
        pytest.skip(f"warp-lang {warp.__version__}'s jax_kernel gets the double store right")
    np.testing.assert_array_equal(ga, np.full(6, 2.0))  # exact: 0


@pytest.mark.parametrize("jit", [False, True])
def test_shared_cotangent_for_two_outputs_is_never_written(jit):
    """One cotangent array for both outputs: both get their gradient (2x + 5), and the array is unchanged."""
    x = _data(5, 3)
    ct = jnp.ones(5, dtype=F64)

    def pullback(x, ct):
        _, vjp = jax.vjp(two_outputs, x)
        return vjp((ct, ct))[0]

    pull = jax.jit(pullback) if jit else pullback
    g = pull(x, ct)
    np.testing.assert_allclose(g, 2.0 * np.asarray(x) + 5.0, rtol=1e-12)
    np.testing.assert_array_equal(ct, np.ones(5))
    np.testing.assert_allclose(pull(x, ct), g, rtol=0)  # again: same answer, ct still ones
    _rev(two_outputs, [x])


def test_accumulate_kernel_cotangent_is_read_in_place_and_never_written():
    """A kernel without zero_store=True gets JAX's cotangent itself (no copy): its adjoint only reads it."""
    xa, xb = _data(6, 1), _data(6, 2)
    ct = jnp.full(6, 2.0, dtype=F64)
    _, vjp = jax.vjp(double_store_accumulate, xa, xb)
    ga, gb = vjp(ct)
    np.testing.assert_array_equal(ga, np.full(6, 4.0))
    np.testing.assert_array_equal(gb, np.full(6, 6.0))
    np.testing.assert_array_equal(ct, np.full(6, 2.0))


def test_facade_jax_kernel_never_writes_the_cotangent():
    """wp.jax_kernel with a zero_store=True kernel goes through the bridge (Warp's own `jax_kernel` zeroes the cotangent buffers JAX owns)."""
    f = wp.jax_kernel(K.two_outputs, num_outputs=2, enable_backward=True)
    x = _data(5, 3, jnp.float32)
    ct = jnp.ones(5, dtype=jnp.float32)
    outputs, vjp = jax.vjp(f, x)
    assert isinstance(outputs, list) and len(outputs) == 2  # Warp's convention: a list of outputs
    (g,) = vjp([ct, ct])
    np.testing.assert_allclose(g, 2.0 * np.asarray(x) + 5.0, rtol=1e-6)
    np.testing.assert_array_equal(ct, np.ones(5))
    ga, gb = jax.grad(lambda a, b: wp.jax_kernel(K.double_store, enable_backward=True)(a, b)[0].sum(), (0, 1))(x, x)
    np.testing.assert_array_equal(ga, np.zeros(5))
    np.testing.assert_array_equal(gb, np.full(5, 3.0))


def test_facade_jax_kernel_leaves_other_kernels_to_warp():
    """Negative twin: a kernel without zero_store=True (or without enable_backward) gets Warp's own wrapper."""
    assert not hasattr(wp.jax_kernel(K.double_store_f32, enable_backward=True), "op")
    assert not hasattr(wp.jax_kernel(K.double_store_f32), "op")
    assert hasattr(wp.jax_kernel(K.two_outputs, num_outputs=2, enable_backward=True), "op")


# ------------------------------------------------------------------------------------------------------------
# In-place kernels and multi-launch ops


@pytest.mark.parametrize("jit", [False, True])
def test_in_place_kernel(jit):
    """a <- a^2 + x: the op returns the new a, and differentiates through the old one (2a, 1)."""
    a, x = _data(7, 4), _data(7, 5)
    f = jax.jit(square_add) if jit else square_add
    np.testing.assert_allclose(f(a, x), a * a + x, rtol=1e-12)
    ga, gx = jax.grad(lambda a, x: jnp.sum(jnp.cos(f(a, x))), argnums=(0, 1))(a, x)
    wa, wx = jax.grad(lambda a, x: jnp.sum(jnp.cos(a * a + x)), argnums=(0, 1))(a, x)
    np.testing.assert_allclose(ga, wa, rtol=1e-12)
    np.testing.assert_allclose(gx, wx, rtol=1e-12)
    np.testing.assert_array_equal(a, np.asarray(_data(7, 4)))  # the caller's array is unchanged
    _rev(square_add, [a, x])


def test_in_place_needs_a_zero_store_kernel():
    """Negative twin: an accumulate-mode kernel would keep the new value's cotangent in the old value's gradient."""
    with pytest.raises(wpj.BridgeError, match=r"square_add_in_place_accumulate.*zero_store=True"):
        wpj.kernel_op(K.square_add_in_place_accumulate, in_out=("a",))


def test_multi_launch_op_with_an_overwritten_temporary():
    """t = x^2; y = t*x; t = 3x; y += t: the Tape's snapshot restores t for y's launch: 3x^2 + 3."""
    x = _data(9, 6)
    np.testing.assert_allclose(cube_plus_3x(x), x**3 + 3 * x, rtol=1e-12)
    g = jax.grad(lambda x: jnp.sum(jnp.sin(cube_plus_3x(x))))(x)
    want = jax.grad(lambda x: jnp.sum(jnp.sin(x**3 + 3 * x)))(x)
    np.testing.assert_allclose(g, want, rtol=1e-12)
    _rev(cube_plus_3x, [x])
    np.testing.assert_allclose(jax.jit(jax.grad(lambda x: cube_plus_3x(x).sum()))(x), 3 * x**2 + 3, rtol=1e-12)


def test_multi_launch_op_without_snapshot_reads_the_overwritten_temporary():
    """Negative twin: a plain Tape replays y = t*x against t = 3x, so the gradient is not 3x^2 + 3."""
    x = _data(9, 6)
    g = jax.grad(lambda x: cube_plus_3x_no_snapshot(x).sum())(x)
    assert not np.allclose(g, 3 * x**2 + 3)


@wpj.op(outputs={}, in_out=("y",))
def add_twice(x: warp.array(dtype=warp.float64), y: warp.array(dtype=warp.float64)):
    """y <- y + 2x in two in-place launches."""
    warp.launch(K.add_into, dim=x.shape, inputs=[x, y])
    warp.launch(K.add_into, dim=x.shape, inputs=[x, y])


@pytest.mark.parametrize("jit", [False, True])
def test_multi_launch_op_with_an_in_out_argument(jit):
    x, y = _data(5, 10), _data(5, 11)
    f = jax.jit(add_twice) if jit else add_twice
    np.testing.assert_allclose(f(x, y), y + 2 * x, rtol=1e-12)
    gx, gy = jax.grad(lambda x, y: jnp.sum(f(x, y) ** 2), argnums=(0, 1))(x, y)
    np.testing.assert_allclose(gx, 4 * (y + 2 * x), rtol=1e-12)
    np.testing.assert_allclose(gy, 2 * (y + 2 * x), rtol=1e-12)
    np.testing.assert_array_equal(y, np.asarray(_data(5, 11)))  # the caller's array is unchanged


@wpj.op(outputs={}, in_out=("dest",))
def copy_window(dest: warp.array(dtype=warp.float64), src: warp.array(dtype=warp.float64)):
    """dest[1:4] <- src[0:3]."""
    warp.copy(dest, src, dest_offset=1, src_offset=0, count=3)


@pytest.mark.parametrize("jit", [False, True])
def test_a_copy_in_an_op_passes_the_gradient_to_its_source(jit):
    """The backward re-runs the function with the cotangents already in the arrays' gradients; Warp's forward
    ``wp.copy`` copies the source's gradient over the destination's, so the source got none (found by the
    program fuzzer). Against jax.grad of the same jnp math; the torch bridge is right there too."""
    dest, src = _data(4, 20), _data(4, 21)
    f = jax.jit(copy_window) if jit else copy_window
    np.testing.assert_allclose(f(dest, src), jnp.concatenate([dest[:1], src[:3]]), rtol=1e-12)
    w = jnp.asarray([1.0, 2.0, 3.0, 4.0])
    gd, gs = jax.grad(lambda d, s: jnp.sum(f(d, s) * w), argnums=(0, 1))(dest, src)
    np.testing.assert_allclose(gd, [1.0, 0.0, 0.0, 0.0])
    np.testing.assert_allclose(gs, [2.0, 3.0, 4.0, 0.0])


def test_vmap_of_an_in_place_kernel():
    a, x = (jnp.asarray(np.random.default_rng(s).uniform(0.5, 1.5, (3, 4))) for s in (12, 13))
    np.testing.assert_allclose(jax.vmap(square_add)(a, x), a * a + x, rtol=1e-12)
    g = jax.vmap(jax.grad(lambda a, x: jnp.sum(jnp.sin(square_add(a, x)))))(a, x)
    np.testing.assert_allclose(g, jax.vmap(jax.grad(lambda a, x: jnp.sum(jnp.sin(a * a + x))))(a, x), rtol=1e-12)


# ------------------------------------------------------------------------------------------------------------
# Transformations: vmap, jit, traced scalars; what is refused


def test_vmap_of_grad_and_jacrev():
    xs = jnp.asarray(np.random.default_rng(7).uniform(0.5, 1.5, (4, 6)))
    per_row = jax.vmap(jax.grad(lambda r: seed(r, r, r).sum()))(xs)
    np.testing.assert_allclose(per_row, 6 * xs**5, rtol=1e-12)
    np.testing.assert_allclose(jax.vmap(lambda r: seed(r, r, r))(xs), xs**6, rtol=1e-12)
    jac = jax.jacrev(lambda r: seed(r, r, r))(xs[0])
    np.testing.assert_allclose(jac, np.diag(6 * xs[0] ** 5), rtol=1e-12)


def test_traced_scalar_under_jit():
    """s is a jit argument (traced): accepted; the gradient flows to x, s gets none (zero)."""
    x = _data(5, 8, jnp.float32)
    f = jax.jit(lambda x, s: scale(x, s).sum())
    for s in (2.0, -0.5):
        np.testing.assert_allclose(f(x, s), s * np.asarray(x).sum(), rtol=1e-6)
        gx, gs = jax.grad(f, argnums=(0, 1))(x, s)
        np.testing.assert_allclose(gx, np.full(5, s), rtol=1e-6)
        assert gs == 0.0


def test_scalar_differing_across_vmap_is_refused():
    x = jnp.ones((3, 4), dtype=jnp.float32)
    np.testing.assert_allclose(jax.vmap(lambda r: scale(r, 2.0))(x), 2 * x)  # one value: fine
    with pytest.raises(Exception, match=r"scalar argument 's' differs across a jax.vmap batch"):
        jax.vmap(scale)(x, jnp.arange(3.0, dtype=jnp.float32)).block_until_ready()


def test_forward_mode_and_second_order_are_refused():
    x = _data(4, 9)
    one = lambda x: seed(x, x, x).sum()  # noqa: E731
    with pytest.raises(wpj.DifferentiationError, match=r"JAX op 'seed'.*forward-mode.*jax.grad"):
        jax.jvp(one, (x,), (x,))
    with pytest.raises(wpj.DifferentiationError, match=r"JAX op 'seed'.*second derivatives"):
        jax.hessian(one)(x)
    with pytest.raises(wpj.DifferentiationError, match=r"JAX op 'seed'"):
        jax.grad(lambda x: jax.grad(one)(x).sum())(x)
    np.testing.assert_allclose(jax.grad(one)(x), 6 * x**5, rtol=1e-12)  # reverse mode, once: fine


def test_linearize_is_refused_naming_the_op():
    """jax.linearize traces a custom_vjp op as jax.vjp does; only its linear function used to fail, with JAX's
    bare TypeError. It is refused when traced, naming the op, also through jax.jit."""
    x = _data(4, 9)
    one = lambda x: seed(x, x, x).sum()  # noqa: E731
    for fn in (one, jax.jit(one)):
        with pytest.raises(wpj.DifferentiationError, match=r"JAX op 'seed' \(.*kernels_jax.py:\d+\).*jax.linearize"):
            jax.linearize(fn, x)
    # Negative twins: reverse mode (which traces the op the same way), and the op on a constant under linearize.
    np.testing.assert_allclose(jax.vjp(one, x)[1](1.0)[0], 6 * x**5, rtol=1e-12)
    np.testing.assert_allclose(jax.jit(jax.grad(one))(x), 6 * x**5, rtol=1e-12)
    value, linear = jax.linearize(lambda s: s * one(x), 2.0)
    np.testing.assert_allclose(linear(1.0), one(x), rtol=1e-12)


def test_bad_arguments_name_the_op_and_argument():
    x = _data(4, 1)
    with pytest.raises(wpj.BridgeError, match=r"JAX op 'scale'.*argument 'x' has dtype float64.*float32"):
        scale(x, 2.0)
    with pytest.raises(wpj.BridgeError, match=r"argument 'x' has 2 dimensions"):
        scale(jnp.ones((2, 2), dtype=jnp.float32), 2.0)
    with pytest.raises(wpj.BridgeError, match=r"unexpected argument 'y' \(outputs are allocated"):
        scale(x, 2.0, y=x)
    with pytest.raises(wpj.BridgeError, match=r"outputs names \['w'\]"):
        wpj.kernel_op(K.scale, outputs={"w": "x"})
    with pytest.raises(wpj.BridgeError, match=r"output parameters must come last"):
        wpj.kernel_op(K.two_outputs, outputs={"y": "x"}, in_out=("z",))


def test_example_script_runs():
    runpy.run_path(str(ROOT / "examples" / "jax_double_store.py"), run_name="jax_double_store")


# ------------------------------------------------------------------------------------------------------------
# JAX stays optional


def test_core_never_imports_jax():
    code = "import sys; import warp_zerostore as wp; wp.init(); print('jax' in sys.modules)"
    done = subprocess.run(
        [sys.executable, "-c", code],
        env=dict(os.environ, PYTHONPATH=str(ROOT)),
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip().splitlines()[-1] == "False"


def test_cuda_only_ffi_is_refused_with_a_clear_error(monkeypatch):
    """Where Warp's FFI has no CPU handler (1.9-1.12), a CPU call names the op and the fix, not XLA's NOT_FOUND."""
    monkeypatch.setattr(_compat, "jax_ffi_platforms", lambda: frozenset({"cuda"}))
    with pytest.raises(wpj.BridgeError, match=r"JAX op 'seed'.*runs on \['cuda'\] only.*warp-lang 1.19"):
        seed(_data(3), _data(3), _data(3))


# ------------------------------------------------------------------------------------------------------------
# The output fill: skipped only for outputs a kernel provably stores in full (access.fully_stored)

positive_part = wpj.kernel_op(K.positive_part, outputs={"y": "x"})
accumulate_then_scale = wpj.kernel_op(K.accumulate_then_scale, outputs={"y": "x"})


@pytest.mark.parametrize("jit", [False, True])
def test_partly_stored_output_is_zero_filled(jit):
    """Negative twin of the skipped fill: a conditional store leaves the fill's zeros (XLA's buffer would hold
    garbage), and the gradient is 2x where stored, 0 elsewhere."""
    x = jnp.asarray([-1.0, 2.0, -3.0, 4.0, -5.0, 6.0], dtype=F64)
    f = jax.jit(positive_part) if jit else positive_part
    for _ in range(3):  # reused XLA buffers too
        np.testing.assert_array_equal(np.asarray(f(x)), np.where(x > 0, x * x, 0.0))
    g = jax.grad(lambda x: f(x).sum())(x)
    np.testing.assert_array_equal(np.asarray(g), np.where(x > 0, 2 * x, 0.0))
    rows = jnp.stack([x, -x, x[::-1]])  # under vmap the batch folds into the launch: the fill still applies
    np.testing.assert_array_equal(np.asarray(jax.vmap(f)(rows)), np.where(rows > 0, rows * rows, 0.0))


def test_fully_stored_output_skips_the_fill(monkeypatch):
    """The seed op's y is stored by every thread: the forward launches without filling it, with the same result."""
    x = [_data(6, s) for s in range(3)]
    expected = np.asarray(seed_math(*x))
    fills = []
    monkeypatch.setattr(warp.array, "zero_", lambda self, *a, **k: fills.append(self.shape), raising=True)
    np.testing.assert_allclose(np.asarray(jax.jit(lambda *x: seed(*x))(*x)), expected, rtol=1e-14)
    assert fills == [], f"the forward zero-filled {fills}"


@pytest.mark.parametrize("jit", [False, True])
def test_kernel_reading_its_output_sees_the_fill_in_forward_and_backward(jit):
    """y = 3 * (y + x^2) from y = 0: 3 x^2, gradient 6x, against jnp; the backward's replay of y[i] reads a
    zeroed private buffer, not the final y (which would give 6x + the final value's contribution)."""
    x = _data(7, 4)
    f = jax.jit(accumulate_then_scale) if jit else accumulate_then_scale
    np.testing.assert_allclose(np.asarray(f(x)), 3 * np.asarray(x) ** 2, rtol=1e-14)
    _rev(accumulate_then_scale, (x,))
    np.testing.assert_allclose(np.asarray(jax.grad(lambda x: f(x).sum())(x)), 6 * np.asarray(x), rtol=1e-14)
