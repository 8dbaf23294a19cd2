"""The replay log through the PyTorch and JAX bridges: they run the same backward kernel, so a thread that reads
back its own store (before the replay log: gradcheck failed, JAX gave 2x²) and a store in a helper are exact there too."""

import numpy as np
import pytest
from helpers import kernels_replay as k

import warp_zerostore as wp  # noqa: F401 - installs the hooks before the bridges build kernels


def test_torch_gradcheck_of_a_read_back_kernel():
    torch = pytest.importorskip("torch", reason="the PyTorch bridge needs torch (pip install 'warp_zerostore[torch]')")
    import warp_zerostore.torch as wpt  # noqa: PLC0415

    for kernel, derivative in ((k.read_back, lambda x: 3 * x**2), (k.read_back_helpers, lambda x: 5 * x**4)):
        op = wpt.kernel_op(kernel, outputs={"y": "x"})
        x = torch.tensor([0.5, 1.0, 2.0, -1.5], dtype=torch.float64, requires_grad=True)
        assert torch.autograd.gradcheck(op, (x,))
        (grad,) = torch.autograd.grad(op(x).sum(), x)
        np.testing.assert_allclose(grad.numpy(), derivative(x.detach().numpy()), rtol=1e-12)


def test_torch_stock_kernel_is_still_warps():
    torch = pytest.importorskip("torch", reason="the PyTorch bridge needs torch (pip install 'warp_zerostore[torch]')")
    import warp_zerostore.torch as wpt  # noqa: PLC0415

    # negative twin: the unflagged kernel keeps Warp's replay, and gradcheck says so
    op = wpt.kernel_op(k.read_back_stock, outputs={"y": "x"})
    x = torch.tensor([0.5, 1.0, 2.0], dtype=torch.float64, requires_grad=True)
    assert not torch.autograd.gradcheck(op, (x,), raise_exception=False)


def test_jax_grad_of_a_read_back_kernel():
    pytest.importorskip("jax", reason="the JAX bridge needs jax (pip install 'warp_zerostore[jax]')")
    from warp_zerostore import _compat  # noqa: PLC0415

    if _compat.jax_ffi_module() is None or "cpu" not in _compat.jax_ffi_platforms():
        pytest.skip("this warp-lang has no JAX FFI on the CPU (from 1.19)")
    import jax  # noqa: PLC0415
    import jax.numpy as jnp  # noqa: PLC0415

    import warp_zerostore.jax as wpj  # noqa: PLC0415

    saved = jax.config.jax_enable_x64
    jax.config.update("jax_enable_x64", True)
    try:
        op = wpj.kernel_op(k.read_back, outputs={"y": "x"})
        x = jnp.array([0.5, 1.0, 2.0], dtype=jnp.float64)
        grad = jax.grad(lambda v: op(v).sum())(x)
        np.testing.assert_allclose(np.asarray(grad), 3 * np.asarray(x) ** 2, rtol=1e-12)
    finally:
        jax.config.update("jax_enable_x64", saved)
