"""Kernels written against plain ``import warp``: the process and module defaults must reach them too."""

import warp


@warp.kernel
def plain_write_2x(x: warp.array(dtype=float), y: warp.array(dtype=float)):
    i = warp.tid()
    y[i] = 2.0 * x[i]


@warp.kernel
def plain_write_3x(x: warp.array(dtype=float), y: warp.array(dtype=float)):
    i = warp.tid()
    y[i] = 3.0 * x[i]
