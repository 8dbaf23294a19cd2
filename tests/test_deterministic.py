"""Warp's deterministic mode (1.19+) follows the flag too."""

import numpy as np
import pytest

import warp_zerostore as wp
from warp_zerostore import _compat

pytestmark = pytest.mark.skipif(
    not hasattr(wp, "DeterministicMode"), reason="this warp-lang has no deterministic mode (added in 1.19)"
)


@pytest.mark.parametrize("flag", [True, False, None])
def test_deterministic_module_follows_flag(flag, device):
    from helpers import kernels_deterministic as kd  # noqa: PLC0415

    n = 4
    x = wp.ones(n, dtype=float, requires_grad=True, device=device)
    y = wp.zeros(n, dtype=float, requires_grad=True, device=device)
    total = wp.zeros(1, dtype=float, requires_grad=True, device=device)
    with wp.Tape() as tape:
        wp.launch(kd.KERNELS[flag], dim=n, inputs=[x, y, total], device=device)
    tape.backward(grads={y: wp.ones(n, dtype=float, device=device), total: wp.ones(1, dtype=float, device=device)})
    zeroes = _compat.STOCK_STORE_ZEROES if flag is None else flag
    np.testing.assert_array_equal(total.numpy(), float(n))
    np.testing.assert_array_equal(x.grad.numpy(), 1.0 + (3.0 if zeroes else 5.0))
    np.testing.assert_array_equal(y.grad.numpy(), 0.0 if zeroes else 1.0)
