"""A program shaped like a rigid-body simulator built for the forward pass, for the check-cost benchmark: one step is
84 tiny launches of 12 kernels, 10 of them built with ``enable_backward=False`` (broad phase, contact generation,
bookkeeping), 2 differentiable in-place updates; state arrays of 16 bodies, reused every step."""

from __future__ import annotations

import warp_zerostore as wp

BODIES = 16
LAUNCHES_PER_STEP = 84


def _forward_only(body):
    return wp.kernel(body, enable_backward=False)


def _clear_counts(counts: wp.array(dtype=int)):
    counts[wp.tid()] = 0


def _bounds(q: wp.array(dtype=wp.vec3), lo: wp.array(dtype=wp.vec3), hi: wp.array(dtype=wp.vec3)):
    i = wp.tid()
    lo[i] = q[i] - wp.vec3(0.5)
    hi[i] = q[i] + wp.vec3(0.5)


def _count_pairs(lo: wp.array(dtype=wp.vec3), hi: wp.array(dtype=wp.vec3), counts: wp.array(dtype=int)):
    i = wp.tid()
    for j in range(BODIES):
        if j != i and lo[i][0] < hi[j][0] and lo[j][0] < hi[i][0]:
            counts[i] += 1


def _contact_normal(q: wp.array(dtype=wp.vec3), normal: wp.array(dtype=wp.vec3)):
    i = wp.tid()
    normal[i] = wp.normalize(q[i] + wp.vec3(0.0, 1.0, 0.0))


def _contact_depth(q: wp.array(dtype=wp.vec3), depth: wp.array(dtype=float)):
    i = wp.tid()
    depth[i] = wp.max(0.0, -q[i][1])


def _contact_force(depth: wp.array(dtype=float), normal: wp.array(dtype=wp.vec3), f: wp.array(dtype=wp.vec3)):
    i = wp.tid()
    f[i] = f[i] + normal[i] * depth[i] * 100.0


def _gravity(f: wp.array(dtype=wp.vec3)):
    f[wp.tid()] = wp.vec3(0.0, -9.8, 0.0)


def _damping(qd: wp.array(dtype=wp.vec3), f: wp.array(dtype=wp.vec3)):
    i = wp.tid()
    f[i] = f[i] - qd[i] * 0.1


def _energy(qd: wp.array(dtype=wp.vec3), e: wp.array(dtype=float)):
    i = wp.tid()
    e[i] = wp.dot(qd[i], qd[i]) * 0.5


def _sleep(e: wp.array(dtype=float), asleep: wp.array(dtype=int)):
    i = wp.tid()
    asleep[i] = wp.where(e[i] < 1.0e-6, 1, 0)


clear_counts = _forward_only(_clear_counts)
bounds = _forward_only(_bounds)
count_pairs = _forward_only(_count_pairs)
contact_normal = _forward_only(_contact_normal)
contact_depth = _forward_only(_contact_depth)
contact_force = _forward_only(_contact_force)
gravity = _forward_only(_gravity)
damping = _forward_only(_damping)
energy = _forward_only(_energy)
sleep = _forward_only(_sleep)


@wp.kernel
def integrate_velocity(qd: wp.array(dtype=wp.vec3), f: wp.array(dtype=wp.vec3), dt: float):
    i = wp.tid()
    qd[i] = qd[i] + f[i] * dt


@wp.kernel
def integrate_position(q: wp.array(dtype=wp.vec3), qd: wp.array(dtype=wp.vec3), dt: float):
    i = wp.tid()
    q[i] = q[i] + qd[i] * dt


def simulate(tape, steps: int) -> int:
    """Record ``steps`` steps on ``tape``; returns the number of launches recorded."""
    q = wp.array([[float(i), 1.0, 0.0] for i in range(BODIES)], dtype=wp.vec3, requires_grad=True)
    qd = wp.zeros(BODIES, dtype=wp.vec3, requires_grad=True)
    f = wp.zeros(BODIES, dtype=wp.vec3, requires_grad=True)
    lo, hi, normal = (wp.zeros(BODIES, dtype=wp.vec3) for _ in range(3))
    depth, e = wp.zeros(BODIES, dtype=float), wp.zeros(BODIES, dtype=float)
    counts, asleep = wp.zeros(BODIES, dtype=int), wp.zeros(BODIES, dtype=int)
    launches = 0
    with tape:
        for _ in range(steps):
            for _ in range(7):  # 7 substeps x 12 launches = 84 per step
                wp.launch(clear_counts, dim=BODIES, inputs=[counts])
                wp.launch(bounds, dim=BODIES, inputs=[q, lo, hi])
                wp.launch(count_pairs, dim=BODIES, inputs=[lo, hi, counts])
                wp.launch(contact_normal, dim=BODIES, inputs=[q, normal])
                wp.launch(contact_depth, dim=BODIES, inputs=[q, depth])
                wp.launch(gravity, dim=BODIES, inputs=[f])
                wp.launch(contact_force, dim=BODIES, inputs=[depth, normal, f])
                wp.launch(damping, dim=BODIES, inputs=[qd, f])
                wp.launch(integrate_velocity, dim=BODIES, inputs=[qd, f, 1.0e-3])
                wp.launch(integrate_position, dim=BODIES, inputs=[q, qd, 1.0e-3])
                wp.launch(energy, dim=BODIES, inputs=[qd, e])
                wp.launch(sleep, dim=BODIES, inputs=[e, asleep])
                launches += 12
    return launches
