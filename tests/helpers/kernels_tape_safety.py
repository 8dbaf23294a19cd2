"""Kernels for the Tape safety tests, built once per session (float64: gradients compared to 1e-10)."""

import warp_zerostore as wp

f64 = wp.float64


@wp.kernel(zero_store=False)
def fill_keep(a: wp.array(dtype=f64), offset: int, value: f64):
    a[wp.tid() + offset] = value


@wp.kernel(zero_store=True)
def fill_zero(a: wp.array(dtype=f64), offset: int, value: f64):
    a[wp.tid() + offset] = value


@wp.kernel
def double_into(x: wp.array(dtype=f64), y: wp.array(dtype=f64)):
    i = wp.tid()
    y[i] = f64(2.0) * x[i]


@wp.kernel
def square_into(x: wp.array(dtype=f64), y: wp.array(dtype=f64)):
    # its backward reads the x it loaded (double_into's, linear, does not: a stale read of it is not real)
    i = wp.tid()
    y[i] = x[i] * x[i]


@wp.kernel
def accumulate(x: wp.array(dtype=f64), loss: wp.array(dtype=f64)):
    wp.atomic_add(loss, 0, x[wp.tid()] * x[wp.tid()])


# In-place programs (zero_store=True: a store over a value the kernel read hands its gradient on exactly once)


@wp.kernel(zero_store=True)
def square_in_place(a: wp.array(dtype=f64)):
    i = wp.tid()
    a[i] = a[i] * a[i]


@wp.kernel(zero_store=True)
def add_sin_in_place(a: wp.array(dtype=f64), b: wp.array(dtype=f64)):
    i = wp.tid()
    a[i] = a[i] + wp.sin(b[i])


@wp.kernel(zero_store=True)
def mul_into(a: wp.array(dtype=f64), b: wp.array(dtype=f64), c: wp.array(dtype=f64)):
    i = wp.tid()
    c[i] = a[i] * b[i]


@wp.kernel(zero_store=True)
def twist_in_place(a: wp.array(dtype=wp.vec3d)):
    i = wp.tid()
    p = a[i]
    a[i] = wp.vec3d(p[1] * p[2], p[0] + p[2] * p[2], wp.sin(p[0]))


@wp.kernel
def twist_out(a: wp.array(dtype=wp.vec3d), out: wp.array(dtype=wp.vec3d)):
    i = wp.tid()
    p = a[i]
    out[i] = wp.vec3d(p[1] * p[2], p[0] + p[2] * p[2], wp.sin(p[0]))


@wp.kernel
def vec_loss(a: wp.array(dtype=wp.vec3d), loss: wp.array(dtype=f64)):
    p = a[wp.tid()]
    wp.atomic_add(loss, 0, p[0] * p[0] + f64(2.0) * p[1] + f64(3.0) * p[2] * p[1])


# Their one-array-per-write twins


@wp.kernel
def square_out(a: wp.array(dtype=f64), out: wp.array(dtype=f64)):
    i = wp.tid()
    out[i] = a[i] * a[i]


@wp.kernel
def add_sin_out(a: wp.array(dtype=f64), b: wp.array(dtype=f64), out: wp.array(dtype=f64)):
    i = wp.tid()
    out[i] = a[i] + wp.sin(b[i])


@wp.kernel
def weighted_sum(a: wp.array(dtype=f64), w: f64, loss: wp.array(dtype=f64)):
    wp.atomic_add(loss, 0, w * a[wp.tid()])


# Explicit Euler with a nonlinear force


@wp.func
def force(x: f64, v: f64):
    return -x * x * x - f64(0.1) * v + wp.sin(x)


@wp.kernel(zero_store=True)
def velocity_in_place(x: wp.array(dtype=f64), v: wp.array(dtype=f64), dt: f64):
    i = wp.tid()
    v[i] = v[i] + force(x[i], v[i]) * dt


@wp.kernel(zero_store=True)
def position_in_place(x: wp.array(dtype=f64), v: wp.array(dtype=f64), dt: f64):
    i = wp.tid()
    x[i] = x[i] + v[i] * dt


@wp.kernel
def velocity_out(x: wp.array(dtype=f64), v: wp.array(dtype=f64), dt: f64, v_out: wp.array(dtype=f64)):
    i = wp.tid()
    v_out[i] = v[i] + force(x[i], v[i]) * dt


@wp.kernel
def position_out(x: wp.array(dtype=f64), v: wp.array(dtype=f64), dt: f64, x_out: wp.array(dtype=f64)):
    i = wp.tid()
    x_out[i] = x[i] + v[i] * dt


@wp.kernel
def euler_loss(x: wp.array(dtype=f64), v: wp.array(dtype=f64), loss: wp.array(dtype=f64)):
    i = wp.tid()
    wp.atomic_add(loss, 0, x[i] * x[i] + f64(0.5) * v[i] * v[i])


def euler_in_place(x0, v0, steps, dt, tape):
    """The simulation updating ``x`` and ``v`` in place; returns (x, v, loss) after recording on ``tape``."""
    x = wp.clone(x0, requires_grad=True)
    v = wp.clone(v0, requires_grad=True)
    loss = wp.zeros(1, dtype=f64, device=x0.device, requires_grad=True)
    with tape:
        for _ in range(steps):
            wp.launch(velocity_in_place, dim=x.shape[0], inputs=[x, v, f64(dt)], device=x.device)
            wp.launch(position_in_place, dim=x.shape[0], inputs=[x, v, f64(dt)], device=x.device)
        wp.launch(euler_loss, dim=x.shape[0], inputs=[x, v, loss], device=x.device)
    return x, v, loss


def euler_per_step(x0, v0, steps, dt, tape):
    """The same simulation with one array per step; returns (initial x, initial v, final x, final v, loss)."""
    xs = [wp.clone(x0, requires_grad=True)]
    vs = [wp.clone(v0, requires_grad=True)]
    loss = wp.zeros(1, dtype=f64, device=x0.device, requires_grad=True)
    with tape:
        for _ in range(steps):
            v_next = wp.empty_like(vs[-1], requires_grad=True)
            x_next = wp.empty_like(xs[-1], requires_grad=True)
            wp.launch(
                velocity_out, dim=x0.shape[0], inputs=[xs[-1], vs[-1], f64(dt)], outputs=[v_next], device=x0.device
            )
            wp.launch(
                position_out, dim=x0.shape[0], inputs=[xs[-1], v_next, f64(dt)], outputs=[x_next], device=x0.device
            )
            xs.append(x_next)
            vs.append(v_next)
        wp.launch(euler_loss, dim=x0.shape[0], inputs=[xs[-1], vs[-1], loss], device=x0.device)
    return xs[0], vs[0], xs[-1], vs[-1], loss


@wp.kernel
def copy_first_half_to_second(a: wp.array(dtype=f64)):
    i = wp.tid()
    a[i + a.shape[0] // 2] = a[i] * a[i]


@wp.kernel
def sum_first_half(a: wp.array(dtype=f64), loss: wp.array(dtype=f64)):
    i = wp.tid()
    if i < a.shape[0] // 2:
        wp.atomic_add(loss, 0, a[i] * a[i])  # nonlinear: the backward reads a[i]


@wp.func
def first(a: wp.array(dtype=f64)):
    return a[0]


@wp.kernel
def read_through_a_function(a: wp.array(dtype=f64), b: wp.array(dtype=f64)):
    b[wp.tid()] = first(a)
