"""Kernels in a module built in Warp's deterministic mode (warp-lang 1.19 and later)."""

import warp_zerostore as wp

if hasattr(wp, "DeterministicMode"):
    wp.set_module_options({"deterministic": wp.DeterministicMode.RUN_TO_RUN})


def _det_overwrite(flag):
    @wp.kernel(zero_store=flag)
    def det_overwrite(x: wp.array(dtype=float), y: wp.array(dtype=float), total: wp.array(dtype=float)):
        i = wp.tid()
        wp.atomic_add(total, 0, x[i])  # a deterministic reduction in the same kernel
        y[i] = 2.0 * x[i]
        y[i] = 3.0 * x[i]

    return det_overwrite


KERNELS = {flag: _det_overwrite(flag) for flag in (True, False, None)}
