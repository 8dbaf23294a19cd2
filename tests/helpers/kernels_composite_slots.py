"""Warp 1.19's composite-slot replay kernels (warp.tests.test_composite_component_adjoint), ported: a component of
a vector array element and a scalar array element updated in place with += / -=, then read back and squared."""

import warp_zerostore as wp


@wp.kernel
def iadd_replay(
    vec_y: wp.array(dtype=wp.vec2),
    scalar_y: wp.array(dtype=wp.float32),
    vec_x: wp.array(dtype=wp.float32),
    scalar_x: wp.array(dtype=wp.float32),
    vec_out: wp.array(dtype=wp.float32),
    scalar_out: wp.array(dtype=wp.float32),
):
    vec_y[0].x += vec_x[0]
    scalar_y[0] += scalar_x[0]
    vec_out[0] = vec_y[0].x * vec_y[0].x
    scalar_out[0] = scalar_y[0] * scalar_y[0]


@wp.kernel
def isub_replay(
    vec_y: wp.array(dtype=wp.vec2),
    scalar_y: wp.array(dtype=wp.float32),
    vec_x: wp.array(dtype=wp.float32),
    scalar_x: wp.array(dtype=wp.float32),
    vec_out: wp.array(dtype=wp.float32),
    scalar_out: wp.array(dtype=wp.float32),
):
    vec_y[0].x -= vec_x[0]
    scalar_y[0] -= scalar_x[0]
    vec_out[0] = vec_y[0].x * vec_y[0].x
    scalar_out[0] = scalar_y[0] * scalar_y[0]


@wp.struct
class Holder:
    values: wp.array(dtype=wp.vec3)


@wp.kernel
def struct_field_component_iadd(holder: Holder, x: wp.array(dtype=wp.float32), out: wp.array(dtype=wp.float32)):
    holder.values[0].x += x[0]
    out[0] = holder.values[0].x * holder.values[0].x
