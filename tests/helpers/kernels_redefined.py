"""A kernel a test defines anew again and again under one name (as a notebook cell run twice, or a script that
builds its kernels in a function): Warp's module keeps the newest definition only."""

import warp_zerostore as wp


def define():
    """A new ``wp.Kernel`` object named ``scale``, of the same source each time."""

    @wp.kernel
    def scale(x: wp.array(dtype=float), y: wp.array(dtype=float)):
        i = wp.tid()
        y[i] = 2.0 * x[i] * x[i]

    return scale


@wp.kernel
def double(x: wp.array(dtype=float), y: wp.array(dtype=float)):
    i = wp.tid()
    y[i] = 2.0 * x[i]
