"""One Warp module whose ``zero_store`` option the precedence tests set and clear."""

import warp_zerostore as wp


@wp.kernel
def unflagged_2x(x: wp.array(dtype=float), y: wp.array(dtype=float)):
    i = wp.tid()
    y[i] = 2.0 * x[i]


@wp.kernel
def unflagged_3x(x: wp.array(dtype=float), y: wp.array(dtype=float)):
    i = wp.tid()
    y[i] = 3.0 * x[i]


@wp.kernel(zero_store=False)
def accumulate_3x(x: wp.array(dtype=float), y: wp.array(dtype=float)):
    i = wp.tid()
    y[i] = 3.0 * x[i]


def set_zero_store(value):
    """Module-level default, set from inside this module (how a user writes it)."""
    wp.set_module_options({"zero_store": value})
