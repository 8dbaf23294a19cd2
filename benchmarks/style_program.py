"""A program in another simulator's style for the check-cost benchmark: small 2-D state arrays (one row
per body), kernels that take one array as input and output, stores through row views, a kernel built without
backward, a guarded branch; 7 launches per step, all tiny."""

from __future__ import annotations

import warp_zerostore as wp

BODIES, DOF = 8, 6


@wp.kernel
def apply_forces(
    qd_in: wp.array2d(dtype=float), f: wp.array2d(dtype=float), dt: float, qd_out: wp.array2d(dtype=float)
):
    w, j = wp.tid()
    row = qd_out[w]
    row[j] = qd_in[w, j] + f[w, j] * dt


@wp.kernel
def integrate(q_in: wp.array2d(dtype=float), qd: wp.array2d(dtype=float), dt: float, q_out: wp.array2d(dtype=float)):
    w, j = wp.tid()
    q_out[w, j] = q_in[w, j] + qd[w, j] * dt


@wp.kernel
def gravity(f: wp.array2d(dtype=float), g: float):
    w, j = wp.tid()
    f[w, j] = 0.0
    if j == 2:
        f[w, j] = -g


@wp.kernel
def contact(q: wp.array2d(dtype=float), f: wp.array2d(dtype=float), enabled: int):
    w, j = wp.tid()
    if enabled != 0 and j == 2 and q[w, j] < 0.0:
        wp.atomic_add(f, w, j, -q[w, j] * 100.0)


@wp.kernel(enable_backward=False)
def count_active(q: wp.array2d(dtype=float), active: wp.array(dtype=int)):
    w, j = wp.tid()
    if j == 0 and q[w, 2] > -1.0:
        wp.atomic_add(active, 0, 1)


@wp.kernel
def damp(qd: wp.array2d(dtype=float), c: float):
    w, j = wp.tid()
    row = qd[w]
    row[j] = row[j] * c


@wp.kernel
def energy(q: wp.array2d(dtype=float), qd: wp.array2d(dtype=float), loss: wp.array(dtype=float)):
    w, j = wp.tid()
    wp.atomic_add(loss, 0, q[w, j] * q[w, j] + qd[w, j] * qd[w, j])


def simulate(tape, steps: int, backward: bool = True):
    """``steps`` steps of 7 launches (then one for the loss) recorded on ``tape``; returns the launch count."""
    q = wp.full((BODIES, DOF), 0.5, dtype=float, requires_grad=True)
    qd = wp.zeros((BODIES, DOF), dtype=float, requires_grad=True)
    f = wp.zeros((BODIES, DOF), dtype=float, requires_grad=True)
    active = wp.zeros(1, dtype=int)
    loss = wp.zeros(1, dtype=float, requires_grad=True)
    dim = (BODIES, DOF)
    with tape:
        for _ in range(steps):
            wp.launch(gravity, dim=dim, inputs=[f, 9.81])
            wp.launch(contact, dim=dim, inputs=[q, f, 1])
            wp.launch(count_active, dim=dim, inputs=[q, active])
            qd_next = wp.empty_like(qd)
            wp.launch(apply_forces, dim=dim, inputs=[qd, f, 0.01], outputs=[qd_next])
            wp.launch(damp, dim=dim, inputs=[qd_next, 0.99])
            q_next = wp.empty_like(q)
            wp.launch(integrate, dim=dim, inputs=[q, qd_next, 0.01], outputs=[q_next])
            wp.launch(energy, dim=dim, inputs=[q_next, qd_next, loss])
            q, qd = q_next, qd_next
    if backward:
        tape.backward(loss)
    return len(tape.launches)
