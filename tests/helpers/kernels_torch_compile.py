"""Kernels of the bridge's torch.compile / torch.func / opcheck tests: generic over float32 and float64 (opcheck
runs each op in both). No torch here: plain Warp kernels."""

from typing import Any

import warp_zerostore as wp


@wp.kernel
def square_into(x: wp.array(dtype=Any), t: wp.array(dtype=Any)):
    """t[i] = x[i]^2"""
    i = wp.tid()
    t[i] = x[i] * x[i]


@wp.kernel
def scaled_product(a: wp.array(dtype=Any), b: wp.array(dtype=Any), s: float, y: wp.array(dtype=Any)):
    """y[i] = s * a[i] * b[i]"""
    i = wp.tid()
    y[i] = a.dtype(s) * a[i] * b[i]
