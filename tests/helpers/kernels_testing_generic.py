"""A generic kernel with no overloads declared, alone in its module: check_gradients' float64 re-run
instantiates the float64 overload itself, which rebuilds only this small module."""

from typing import Any

import warp_zerostore as wp


@wp.kernel(zero_store=True)
def sin_times(x: wp.array(dtype=Any), y: wp.array(dtype=Any)):
    i = wp.tid()
    y[i] = wp.sin(x[i]) * x[i]
