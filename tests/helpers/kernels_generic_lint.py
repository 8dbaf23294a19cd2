"""A generic flagged kernel (Warp builds each overload from the generic kernel's text, with no line of its own) and
a kernel built from source text, for the kernel source lines in tests/test_tape_locations.py."""

from typing import Any

import warp_zerostore as wp


@wp.kernel(zero_store=True)
def generic_square_after(x: wp.array(dtype=Any), n: int, y: wp.array(dtype=Any)):
    s = x.dtype(0.0)
    for k in range(n):
        s += x[k] * x[k]
    y[0] = s * s  # GENERIC_WARNED: the backward reads s from before the loop


def _from_text(x: wp.array(dtype=float), n: int, y: wp.array(dtype=float)):
    pass


TEXT = """def _from_text(x: wp.array(dtype=float), n: int, y: wp.array(dtype=float)):  # a kernel's text, generated
    s = float(0.0)
    for k in range(n):
        s += x[k] * x[k]
    y[0] = s * s
"""
from_text = wp.Kernel(_from_text, key="from_text", source=TEXT, options={"zero_store": True})
