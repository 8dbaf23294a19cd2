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


def _euler_step(zero_store):
    """The double-buffered Euler step; ``zero_store`` picks its store adjoints (None: the installed Warp's)."""

    @wp.kernel(zero_store=zero_store)
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

    return euler_step


euler_step = _euler_step(None)
# with store adjoints that keep the consumed gradient: its output buffer's .grad is not left zero
euler_step_accumulate = _euler_step(False)


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


@wp.kernel
def compute_force(
    x: wp.array(dtype=wp.vec3d),
    v: wp.array(dtype=wp.vec3d),
    params: wp.array(dtype=wp.float64),
    gravity: wp.array(dtype=wp.float64),
    n: int,
    f: wp.array(dtype=wp.vec3d),
):
    """Writes a force field of the step's *input* state (as simulators write forces into state_in)."""
    i = wp.tid()
    f[i] = force(x[i], v[i], params[0], params[1], gravity[n])


@wp.kernel
def integrate_force(
    x_in: wp.array(dtype=wp.vec3d),
    v_in: wp.array(dtype=wp.vec3d),
    f: wp.array(dtype=wp.vec3d),
    x_out: wp.array(dtype=wp.vec3d),
    v_out: wp.array(dtype=wp.vec3d),
):
    i = wp.tid()
    v = v_in[i] + wp.float64(DT) * f[i]
    v_out[i] = v
    x_out[i] = x_in[i] + wp.float64(DT) * v


@wp.kernel
def scale_some(x: wp.array(dtype=wp.vec3d), y: wp.array(dtype=wp.vec3d)):
    """Stores only even elements: not every element of y is written."""
    i = wp.tid()
    if i % 2 == 0:
        y[i] = wp.float64(2.0) * x[i]


@wp.kernel(zero_store=True)
def scale_all(x: wp.array(dtype=wp.vec3d), y: wp.array(dtype=wp.vec3d)):
    i = wp.tid()
    y[i] = wp.float64(2.0) * x[i]


@wp.kernel(zero_store=False)
def scale_all_accumulate(x: wp.array(dtype=wp.vec3d), y: wp.array(dtype=wp.vec3d)):
    i = wp.tid()
    y[i] = wp.float64(2.0) * x[i]


@wp.kernel(zero_store=True)
def shift_force_in_place(x: wp.array(dtype=wp.vec3d), f: wp.array(dtype=wp.vec3d)):
    """Reads the force, then overwrites it (as Newton's eval_rigid_tau does body_f_ext): a hazard inside a step."""
    i = wp.tid()
    f[i] = f[i] + wp.float64(0.5) * wp.dot(f[i], f[i]) * x[i]


@wp.kernel(zero_store=True)
def shift_force(x: wp.array(dtype=wp.vec3d), f: wp.array(dtype=wp.vec3d), f_out: wp.array(dtype=wp.vec3d)):
    """``shift_force_in_place`` into another array: no hazard."""
    i = wp.tid()
    f_out[i] = f[i] + wp.float64(0.5) * wp.dot(f[i], f[i]) * x[i]


@wp.kernel(zero_store=True)
def square_velocity_in_place(v: wp.array(dtype=wp.vec3d)):
    i = wp.tid()
    v[i] = wp.cw_mul(v[i], v[i])


@wp.kernel(zero_store=True)
def square_velocity(v: wp.array(dtype=wp.vec3d), v_out: wp.array(dtype=wp.vec3d)):
    i = wp.tid()
    v_out[i] = wp.cw_mul(v[i], v[i])


@wp.struct
class Scratch:
    """A solver's scratch held in a struct, as Newton's models hold theirs."""

    f: wp.array(dtype=wp.vec3d)


@wp.kernel(zero_store=True)
def shift_force_in_struct(x: wp.array(dtype=wp.vec3d), s: Scratch):
    """``shift_force_in_place`` on the struct's array: reads ``s.f``, then overwrites it."""
    i = wp.tid()
    s.f[i] = s.f[i] + wp.float64(0.5) * wp.dot(s.f[i], s.f[i]) * x[i]
