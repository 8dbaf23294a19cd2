"""Kernels the PyTorch bridge tests run (module level: Warp reads kernel source from a file; DDP workers import
them too). No torch here: these are plain Warp kernels."""

from typing import Any

import warp_zerostore as wp


@wp.kernel
def seed(x0: wp.array(dtype=Any), x1: wp.array(dtype=Any), x2: wp.array(dtype=Any), y: wp.array(dtype=Any)):
    """The seed report's op, y = x0^2 * x1^2 * x2^2, generic over float32 and float64."""
    i = wp.tid()
    p = x0[i] * x1[i] * x2[i]
    y[i] = p * p


@wp.kernel
def two_outputs(
    x: wp.array(dtype=wp.float64),
    w: wp.array(dtype=wp.float64),
    s: float,
    k: int,
    y: wp.array(dtype=wp.float64),
    z: wp.array(dtype=wp.float64),
    positive: wp.array(dtype=wp.int32),
):
    """y = s*x*w + k, z = sin(x)*w^2, positive = x > 0: two float outputs and an integer one."""
    i = wp.tid()
    y[i] = wp.float64(s) * x[i] * w[i] + wp.float64(k)
    z[i] = wp.sin(x[i]) * w[i] * w[i]
    if x[i] > wp.float64(0.0):
        positive[i] = 1
    else:
        positive[i] = 0


@wp.kernel
def gather_scale(
    x: wp.array(dtype=wp.float64), index: wp.array(dtype=wp.int64), s: float, y: wp.array(dtype=wp.float64)
):
    """y[i] = s * x[index[i]]^2 (indices may repeat: the adjoint scatters with atomics)."""
    i = wp.tid()
    v = x[index[i]]
    y[i] = wp.float64(s) * v * v


@wp.kernel
def mat_vec(
    m: wp.array(dtype=wp.mat33d),
    v: wp.array(dtype=wp.vec3d),
    out: wp.array(dtype=wp.vec3d),
    sq: wp.array(dtype=wp.float64),
):
    """out = m @ v per element, sq = |v|^2: (N, 3, 3) and (N, 3) tensors as mat33d / vec3d arrays."""
    i = wp.tid()
    out[i] = m[i] * v[i]
    sq[i] = wp.dot(v[i], v[i])


@wp.kernel
def square_into(x: wp.array(dtype=wp.float64), t: wp.array(dtype=wp.float64)):
    i = wp.tid()
    t[i] = x[i] * x[i]


@wp.kernel
def times_sum(t: wp.array(dtype=wp.float64), x: wp.array(dtype=wp.float64), y: wp.array(dtype=wp.float64)):
    """y[0] += sum(t * x), by atomics (the output must start at zero)."""
    i = wp.tid()
    wp.atomic_add(y, 0, t[i] * x[i])


def _overwriting(flag):
    @wp.kernel(zero_store=flag)
    def write_2x(x: wp.array(dtype=wp.float64), y: wp.array(dtype=wp.float64)):
        i = wp.tid()
        y[i] = wp.float64(2.0) * x[i]

    @wp.kernel(zero_store=flag)
    def write_3x(x: wp.array(dtype=wp.float64), y: wp.array(dtype=wp.float64)):
        i = wp.tid()
        y[i] = wp.float64(3.0) * x[i]

    @wp.kernel(zero_store=flag)
    def write_twice(a: wp.array(dtype=wp.float64), b: wp.array(dtype=wp.float64), y: wp.array(dtype=wp.float64)):
        i = wp.tid()
        y[i] = wp.float64(2.0) * a[i]
        y[i] = wp.float64(3.0) * b[i]

    return write_2x, write_3x, write_twice


#: per zero_store flag: (write_2x, write_3x, write_twice), the seed program's overwrite in two launches / one kernel
OVERWRITING = {flag: _overwriting(flag) for flag in (True, False, None)}


@wp.kernel
def multiply(a: wp.array(dtype=wp.float64), b: wp.array(dtype=wp.float64), out: wp.array(dtype=wp.float64)):
    i = wp.tid()
    out[i] = a[i] * b[i]


@wp.struct
class Scaled:
    """An array reached through a struct field, with a scale."""

    values: wp.array(dtype=wp.float64)
    scale: wp.float64


@wp.kernel
def scaled_square(s: Scaled, y: wp.array(dtype=wp.float64)):
    i = wp.tid()
    v = s.values[i]
    y[i] = s.scale * v * v
