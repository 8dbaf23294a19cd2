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


def define_updating():
    """A new flagged ``wp.Kernel`` named ``update_then_read`` (same source each time) that updates an element and
    then reads it back: its backward over the memory the launch read (the snapshot Tape's) is a twin of its own."""

    @wp.kernel(zero_store=True)
    def update_then_read(x: wp.array(dtype=float), y: wp.array(dtype=float), z: wp.array(dtype=float)):
        i = wp.tid()
        y[i] = y[i] + x[i]
        z[i] = y[i] * y[i]

    return update_then_read
