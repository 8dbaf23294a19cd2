"""A kernel of tests/test_lints_loop_carried.py in a module built without backward, flagged through the
module's option: never differentiated, so its loop-carried local is no wrong gradient and is not warned."""

import warp_zerostore as wp

wp.set_module_options({"enable_backward": False, "zero_store": True})


@wp.kernel
def square_after_forward_only(x: wp.array(dtype=float), n: int, y: wp.array(dtype=float)):
    s = float(0.0)
    for k in range(n):
        s += x[k] * x[k]
    y[0] = s * s
