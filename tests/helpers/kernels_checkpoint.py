"""An explicit Euler particle system with a nonlinear force, in place and double-buffered (float64).

force(x, v) = -k |x|^2 x - c v + g[n] (a per-step input); kick: v += dt force; drift: x += dt v.
"""

import warp_zerostore as wp

DT = 0.01


@wp.func
def force(x: wp.vec3d, v: wp.vec3d, k: wp.float64, c: wp.float64, g: wp.float64):
    return -k * wp.dot(x, x) * x - c * v + wp.vec3d(wp.float64(0.0), g, wp.float64(0.0))


@wp.kernel(zero_store=True)
def kick_in_place(
    x: wp.array(dtype=wp.vec3d),
    v: wp.array(dtype=wp.vec3d),
    params: wp.array(dtype=wp.float64),
    gravity: wp.array(dtype=wp.float64),
    n: int,
):
    i = wp.tid()
    v[i] = v[i] + wp.float64(DT) * force(x[i], v[i], params[0], params[1], gravity[n])


@wp.kernel(zero_store=True)
def drift_in_place(x: wp.array(dtype=wp.vec3d), v: wp.array(dtype=wp.vec3d)):
    i = wp.tid()
    x[i] = x[i] + wp.float64(DT) * v[i]


@wp.kernel
def euler_step(
    x_in: wp.array(dtype=wp.vec3d),
    v_in: wp.array(dtype=wp.vec3d),
    params: wp.array(dtype=wp.float64),
    gravity: wp.array(dtype=wp.float64),
    n: int,
    x_out: wp.array(dtype=wp.vec3d),
    v_out: wp.array(dtype=wp.vec3d),
):
    i = wp.tid()
    v = v_in[i] + wp.float64(DT) * force(x_in[i], v_in[i], params[0], params[1], gravity[n])
    v_out[i] = v
    x_out[i] = x_in[i] + wp.float64(DT) * v


@wp.kernel
def loss_kernel(
    x: wp.array(dtype=wp.vec3d),
    v: wp.array(dtype=wp.vec3d),
    w: wp.array(dtype=wp.vec3d),
    loss: wp.array(dtype=wp.float64),
):
    i = wp.tid()
    wp.atomic_add(
        loss, 0, wp.dot(w[i], x[i]) + wp.float64(0.5) * wp.dot(v[i], v[i]) + wp.dot(x[i], x[i]) * wp.dot(x[i], x[i])
    )


@wp.kernel(zero_store=False)
def square_keep(x: wp.array(dtype=wp.float64)):
    """In place, with store adjoints that keep the overwritten gradient: an overwrite hazard when launched twice."""
    i = wp.tid()
    x[i] = x[i] * x[i]
