"""``arrays.wrap``, the bridge's cheaper ``wp.from_torch``: the same array, built directly.

Compared field by field with ``wp.from_torch(tensor, dtype, requires_grad=False)`` for scalar, vector and
matrix dtypes, views with offsets and strides, and the fallback cases (an empty tensor); and the array keeps
the tensor's memory alive as from_torch's does.
"""

import gc

import numpy as np
import pytest

torch = pytest.importorskip(
    "torch", reason="warp_zerostore.torch needs PyTorch: pip install 'warp_zerostore[torch]' (torch==2.13.0)"
)

import warp  # noqa: E402

from warp_zerostore.torch import arrays  # noqa: E402

FIELDS = ("ptr", "shape", "strides", "capacity", "dtype", "device", "_storage_base_ptr", "_storage_nbytes")

CASES = {
    "float32": (lambda: torch.rand(10), warp.float32),
    "offset view": (lambda: torch.rand(10)[3:], warp.float32),
    "strided 2d view": (lambda: torch.rand(6, 4)[:, 1:3], warp.float32),
    "vec3": (lambda: torch.rand(4, 3), warp.vec3),
    "one vec3": (lambda: torch.rand(3), warp.vec3),
    "mat22d": (lambda: torch.rand(5, 2, 2, dtype=torch.float64), warp.mat22d),
    "int32": (lambda: torch.arange(7, dtype=torch.int32), warp.int32),
    "empty (falls back)": (lambda: torch.rand(0), warp.float32),
}


@pytest.mark.parametrize("case", list(CASES))
def test_wrap_is_from_torch(case):
    make, dtype = CASES[case]
    tensor = make()
    ours, theirs = arrays.wrap(tensor, dtype), warp.from_torch(tensor, dtype=dtype, requires_grad=False)
    assert {f: getattr(ours, f) for f in FIELDS} == {f: getattr(theirs, f) for f in FIELDS}
    assert ours.grad is None and not ours.requires_grad
    np.testing.assert_array_equal(ours.numpy(), theirs.numpy())


def test_wrap_keeps_the_tensor_alive():
    array = arrays.wrap(torch.arange(1000, dtype=torch.float32) * 2.0, warp.float32)
    gc.collect()
    torch.rand(1000)  # a fresh allocation would reuse freed memory
    np.testing.assert_array_equal(array.numpy(), np.arange(1000, dtype=np.float32) * 2.0)
