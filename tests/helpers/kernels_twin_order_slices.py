"""Kernels that slice arrays inside the kernel (``c[start:stop:step][i]``, ``window = row[0:1]``), as Warp 1.19's
test_composite_component_adjoint and test_ref do: imported only on a Warp that builds such kernels
(`tests/test_tape_twin_order.py` says which)."""

import warp_zerostore as wp


@wp.kernel
def sliced_store_add_then_square(
    c: wp.array(dtype=wp.vec3),
    source: wp.array(dtype=float),
    start: int,
    stop: int,
    step: int,
    out: wp.array(dtype=float),
):
    i = wp.tid()
    c[start:stop:step][i].x = source[i]
    c[start:stop:step][i][1] += source[i]
    out[i] = c[start:stop:step][i].x * c[start:stop:step][i].y


@wp.kernel
def sliced_square_then_store(
    c: wp.array(dtype=wp.vec3),
    source: wp.array(dtype=float),
    start: int,
    stop: int,
    step: int,
    out: wp.array(dtype=float),
):
    i = wp.tid()
    out[i] = c[start:stop:step][i].x * c[start:stop:step][i].x
    c[start:stop:step][i].x = source[i]


if hasattr(wp, "ref"):
    from helpers.kernels_twin_order import store_double

    @wp.kernel
    def native_store_then_read_window(
        x: wp.array(dtype=float), dst: wp.array2d(dtype=float), out: wp.array(dtype=float)
    ):
        i = wp.tid()
        row = dst[i]
        window = row[0:1]
        store_double(window[0], x[i])
        out[i] = window[0]

    @wp.kernel
    def window_square_then_native_store(
        x: wp.array(dtype=float), dst: wp.array2d(dtype=float), out: wp.array(dtype=float)
    ):
        i = wp.tid()
        row = dst[i]
        window = row[0:1]
        out[i] = window[0] * window[0]
        store_double(window[0], x[i])
