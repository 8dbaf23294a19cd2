"""Kernels for tests/test_tape_reads.py: reads of one's own writes, reads through helpers, annotation spellings."""

import warp_zerostore as wp


@wp.kernel
def read_back_own_write(x: wp.array(dtype=float), y: wp.array(dtype=float)):
    # one thread: y[0] is read back after this launch wrote it (replay must see the written value)
    y[0] = x[0] * x[0]
    y[1] = y[0] * x[1]


@wp.kernel
def read_before_and_after_write(x: wp.array(dtype=float), y: wp.array(dtype=float)):
    # one thread reads y[0] before writing it and again after: no single restored value serves both reads
    y[1] = y[0] * x[1]
    y[0] = x[0] * x[0]
    y[1] = y[1] + y[0] * x[1]


@wp.kernel
def chain_forward(parent: wp.array(dtype=int), local: wp.array(dtype=float), pose: wp.array(dtype=float)):
    # forward kinematics down a chain: one thread writes a parent's pose and reads it for the child
    for i in range(local.shape[0]):
        p = parent[i]
        base = float(0.0)
        if p >= 0:
            base = pose[p]
        pose[i] = base + local[i]


@wp.func
def first(a: wp.array(dtype=float)):
    return a[0]


@wp.func
def first_of_first(a: wp.array(dtype=float)):
    return first(a) * 2.0


@wp.func
def store_at(a: wp.array(dtype=float), i: int, value: float):
    a[i] = value


@wp.kernel
def read_first_through_helpers(a: wp.array(dtype=float), b: wp.array(dtype=float)):
    i = wp.tid()
    store_at(b, i, first_of_first(a))


@wp.kernel
def read_a_row(a: wp.array2d(dtype=float), b: wp.array(dtype=float)):
    # a row of a 2-D array bound twice (`row = a[0]`, then again): which row a read through it reads is not
    # followed, so the whole of `a` counts as read
    row = a[0]
    row = a[0]
    b[wp.tid()] = row[0] * row[0]


@wp.kernel
def read_through_a_row(a: wp.array2d(dtype=float), b: wp.array(dtype=float)):
    # a row bound once: `row[0]` is the element a[0, 0]
    row = a[0]
    b[wp.tid()] = row[0] * row[0]


@wp.kernel
def fill(a: wp.array(dtype=float), offset: int, value: float):
    a[wp.tid() + offset] = value


@wp.kernel
def fill_2d(a: wp.array2d(dtype=float), row: int, value: float):
    a[row, wp.tid()] = value


@wp.kernel
def loss_of(y: wp.array(dtype=float), index: int, loss: wp.array(dtype=float)):
    loss[0] = y[index]


@wp.kernel
def square_in_place(x: wp.array(dtype=float)):
    i = wp.tid()
    x[i] = x[i] * x[i]


@wp.kernel
def first_call(x: wp.array(dtype=float), out: wp.array(dtype=float)):
    out[0] = x[0] * x[0]  # nonlinear: a stale x[0] changes the gradient


@wp.kernel
def first_1d(x: wp.array1d(dtype=float), out: wp.array(dtype=float)):
    out[0] = x[0] * x[0]


@wp.kernel
def first_2d(x: wp.array2d(dtype=float), out: wp.array(dtype=float)):
    out[0] = x[0, 0]


@wp.kernel
def store_in_a_loop_then_read(y: wp.array(dtype=float), n: int):
    for j in range(n):
        t = y[j]  # on the next iteration, reads what the previous one stored
        y[j + 1] = t * 2.0


@wp.kernel
def store_then_read_through_a_helper(y: wp.array(dtype=float)):
    y[0] = 1.0
    y[1] = first(y)


@wp.kernel(zero_store=True)
def square_in_place_zeroing(x: wp.array(dtype=float)):
    i = wp.tid()
    x[i] = x[i] * x[i]


# Inverse kinematics through @wp.func helpers: one thread walks a chain, each link's pose from its parent's, stored
# by a helper (stock Warp's backward re-runs the store into memory); `chain_through_helpers` reads a link only after
# computing it, `chain_rereading_through_helpers` reads each link's old pose before storing the new one.


@wp.func
def link_pose(pose: wp.array(dtype=wp.float64), parent: int, angle: wp.float64):
    base = wp.float64(0.0)
    if parent >= 0:
        base = pose[parent]
    return base + wp.sin(angle)


@wp.func
def store_link(pose: wp.array(dtype=wp.float64), i: int, value: wp.float64):
    pose[i] = value


@wp.kernel
def chain_through_helpers(angles: wp.array(dtype=wp.float64), pose: wp.array(dtype=wp.float64)):
    for i in range(pose.shape[0]):
        store_link(pose, i, link_pose(pose, i - 1, angles[i]))


@wp.kernel
def chain_rereading_through_helpers(angles: wp.array(dtype=wp.float64), pose: wp.array(dtype=wp.float64)):
    for i in range(pose.shape[0]):
        store_link(pose, i, link_pose(pose, i - 1, angles[i]) + wp.float64(0.5) * pose[i])


@wp.kernel
def ik_step(
    angles: wp.array(dtype=wp.float64),
    pose: wp.array(dtype=wp.float64),
    loss: wp.array(dtype=wp.float64),
    angles_out: wp.array(dtype=wp.float64),
):
    i = wp.tid()
    wp.atomic_add(loss, 0, pose[i] * pose[i])
    angles_out[i] = angles[i] - wp.float64(0.1) * pose[i] * pose[i]
