"""Kernels in the patterns of Warp 1.19's own gradient tests (test_composite_component_adjoint, test_ref) where a
thread reads an element only after its own write, each beside a negative twin that reads the element before the
write. The read twin must order the read after the write in the first, and before it in the second:

* a component store or ``+=`` (``y[0].x += v``), then a read of the component;
* an array a struct holds, bound to a local (``values = holder.values``), written through a component;
* elements reached through slices, inline (``c[start:stop:step][i].x = v``) or through views (``row = dst[i]``,
  ``window = row[0:1]``);
* an element passed to a ``wp.ref[T]`` parameter of a ``@wp.func_native`` that writes it (warp-lang >= 1.15).

Slices of arrays inside kernels are in `kernels_twin_order_slices` (the Warp versions that have them)."""

import warp_zerostore as wp


@wp.kernel
def component_add_then_square(y: wp.array(dtype=wp.vec2), x: wp.array(dtype=float), out: wp.array(dtype=float)):
    y[0].x += x[0]
    out[0] = y[0].x * y[0].x


@wp.kernel
def square_then_component_add(y: wp.array(dtype=wp.vec2), x: wp.array(dtype=float), out: wp.array(dtype=float)):
    out[0] = y[0].x * y[0].x
    y[0].x += x[0]


@wp.struct
class Holder:
    values: wp.array(dtype=wp.vec3)


@wp.kernel
def alias_component_store(holder: Holder, x: wp.array(dtype=float)):
    values = holder.values
    values[0].x = x[0]


@wp.kernel
def alias_component_add_then_square(holder: Holder, x: wp.array(dtype=float), out: wp.array(dtype=float)):
    values = holder.values
    values[0].x += x[0]
    out[0] = values[0].x * values[0].x


@wp.kernel
def alias_square_then_component_store(holder: Holder, x: wp.array(dtype=float), out: wp.array(dtype=float)):
    values = holder.values
    out[0] = values[0].x * values[0].x
    values[0].x = x[0]


@wp.kernel
def row_store_then_square(dst: wp.array2d(dtype=float), x: wp.array(dtype=float), out: wp.array(dtype=float)):
    i = wp.tid()
    row = dst[i]
    row[0] = 2.0 * x[i]
    out[i] = row[0] * row[0]


@wp.kernel
def row_square_then_store(dst: wp.array2d(dtype=float), x: wp.array(dtype=float), out: wp.array(dtype=float)):
    i = wp.tid()
    row = dst[i]
    out[i] = row[0] * row[0]
    row[0] = 2.0 * x[i]


if hasattr(wp, "ref"):

    @wp.func_native("x = y * 2.0f;", adj_snippet="adj_y += 2.0f * adj_x;\nadj_x = 0.0f;")
    def store_double(x: wp.ref[wp.float32], y: wp.float32): ...

    @wp.struct
    class Inner:
        value: wp.float32

    @wp.struct
    class Outer:
        inner: Inner
        q: wp.quatf

    @wp.kernel
    def native_store_then_read_2d(x: wp.array(dtype=float), dst: wp.array2d(dtype=float), out: wp.array(dtype=float)):
        i = wp.tid()
        store_double(dst[i, 0], x[i])
        out[i] = dst[i, 0]

    @wp.kernel
    def native_store_then_read_row(x: wp.array(dtype=float), dst: wp.array2d(dtype=float), out: wp.array(dtype=float)):
        i = wp.tid()
        row = dst[i]
        store_double(row[0], x[i])
        out[i] = row[0]

    @wp.kernel
    def native_store_then_read_fields(
        x: wp.array(dtype=float), outers: wp.array(dtype=Outer), out: wp.array(dtype=float)
    ):
        i = wp.tid()
        store_double(outers[i].inner.value, x[i])
        store_double(outers[i].q.w, x[i])
        out[2 * i] = outers[i].inner.value
        out[2 * i + 1] = outers[i].q.w

    @wp.kernel
    def square_then_native_store_2d(x: wp.array(dtype=float), dst: wp.array2d(dtype=float), out: wp.array(dtype=float)):
        i = wp.tid()
        out[i] = dst[i, 0] * dst[i, 0]
        store_double(dst[i, 0], x[i])


@wp.kernel
def fill_column(dst: wp.array2d(dtype=float), value: float):
    dst[wp.tid(), 0] = value
