"""Kernels for tests/test_replay.py that Warp builds from 1.19 on (component += on array elements)."""

import warp_zerostore as wp


@wp.kernel(zero_store=True)
def component_add_read_back(
    x: wp.array(dtype=wp.float64), v: wp.array(dtype=wp.vec2d), out: wp.array(dtype=wp.float64)
):
    # a component += (wp.array_atomic_add_slot on Warp 1.19) read again: not followed by the replay, warned
    i = wp.tid()
    v[i] = wp.vec2d(x[i], x[i] * x[i])
    v[i][0] += v[i][1]
    out[i] = v[i][0] * x[i]


@wp.kernel(zero_store=True)
def component_add_only(x: wp.array(dtype=wp.float64), v: wp.array(dtype=wp.vec2d)):
    # the same component += never read again: nothing to warn about
    i = wp.tid()
    v[i][0] += x[i] * x[i]
