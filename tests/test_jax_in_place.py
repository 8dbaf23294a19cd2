"""The JAX bridge with kernels that write their inputs: refused by name unless declared ``in_out``; an in-out
update's gradient is exact for a ``zero_store=True`` kernel (its PRE backward sees the values from before the op).

Reference: jax.grad of the same jnp math, in float64. Skipped where JAX or Warp's JAX FFI on CPU is missing.
"""

import warnings

import pytest

pytest.importorskip("jax", reason="warp_zerostore.jax needs JAX: pip install 'warp_zerostore[jax]'")

import warp  # noqa: E402

from warp_zerostore import _compat  # noqa: E402

if _compat.jax_ffi_module() is None or "cpu" not in _compat.jax_ffi_platforms():
    pytest.skip(f"warp-lang {warp.__version__} has no JAX FFI on CPU (from 1.19)", allow_module_level=True)

import jax  # noqa: E402
import jax.numpy as jnp  # noqa: E402
from helpers import kernels_torch_inplace as K  # noqa: E402

from warp_zerostore import jax as wpj  # noqa: E402
from warp_zerostore.jax import BridgeError  # noqa: E402

jax.config.update("jax_enable_x64", True)
Y0, X0 = [2.0, 0.5], [3.0, 0.25]


def test_a_kernel_writing_an_input_is_refused_by_name_unless_it_is_declared_in_out():
    with pytest.raises(BridgeError, match="writes its input 'y'.*in_out"):
        wpj.kernel_op(K.step_flagged, outputs={"out": "x"})


def test_an_in_out_update_then_use_is_exact_for_a_flagged_kernel():
    op = wpj.kernel_op(K.step_flagged, outputs={"out": "x"}, in_out=("y",))

    def loss(y, x):
        y_new, out = op(y, x)
        return out.sum() + 3 * y_new.sum()

    def reference(y, x):
        return ((y + x) ** 2).sum() + 3 * (y + x).sum()

    y, x = jnp.array(Y0), jnp.array(X0)
    got = jax.grad(loss, argnums=(0, 1))(y, x)
    want = jax.grad(reference, argnums=(0, 1))(y, x)
    for g, w in zip(got, want):  # was 16 for d/dx[0] (the update replayed twice)
        assert jnp.allclose(g, w, rtol=1e-12), (got, want)


def test_a_read_before_the_update_is_exact_too():
    op = wpj.kernel_op(K.square_in_place_flagged, outputs={"out": "y"}, in_out=("y",))
    y = jnp.array(Y0)
    got = jax.grad(lambda v: op(v)[1].sum())(y)
    assert jnp.allclose(got, 2 * y, rtol=1e-12)


def test_a_kernel_writing_only_its_outputs_is_made_without_a_word():
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        op = wpj.kernel_op(K.writes_outputs_only, outputs={"out": "x"})
    assert jnp.allclose(jax.grad(lambda v: op(v).sum())(jnp.array(X0)), 2 * jnp.array(X0))
