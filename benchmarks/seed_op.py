"""The seed report's op, ``y = x0^2 * x1^2 * x2^2`` (float32): the kernel both bridge benchmarks time."""

import warp_zerostore as wp


@wp.kernel
def op_kernel(
    x0: wp.array(dtype=wp.float32),
    x1: wp.array(dtype=wp.float32),
    x2: wp.array(dtype=wp.float32),
    y: wp.array(dtype=wp.float32),
):
    i = wp.tid()
    y[i] = x0[i] ** 2.0 * x1[i] ** 2.0 * x2[i] ** 2.0
