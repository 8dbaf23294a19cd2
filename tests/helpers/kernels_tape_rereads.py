"""Kernels for tests/test_tape_rereads.py: a thread that reads an element between two of its own writes."""

import warp_zerostore as wp


@wp.kernel
def reread_in_a_loop(x: wp.array(dtype=wp.float64), y: wp.array(dtype=wp.float64), n: int):
    # y[i] = x^(n+1): each iteration reads what the last one wrote (through another index variable), then writes
    i = wp.tid()
    y[i] = x[i]
    j = i + 0
    for _k in range(n):
        y[i] = y[j] * x[i]


@wp.kernel
def read_after_the_last_write(
    x: wp.array(dtype=wp.float64), y: wp.array(dtype=wp.float64), out: wp.array(dtype=wp.float64)
):
    # the read comes after the thread's last write: memory holds what it read
    i = wp.tid()
    y[i] = x[i] * x[i]
    out[i] = y[i] * y[i]


@wp.kernel
def children_accumulate_into_a_parent(
    parent: wp.array(dtype=int), x: wp.array(dtype=wp.float64), force: wp.array(dtype=wp.float64), n: int
):
    # Newton's eval_rigid_tau shape: leaves first, each body reads what its children accumulated into it, then adds
    # its own into its parent (force[p] = force[p] + f: a read between writes, whose value enters linearly)
    for k in range(n):
        b = n - 1 - k
        f = x[b] * x[b] + force[b]
        p = parent[b]
        if p >= 0:
            force[p] = force[p] + f


@wp.kernel(zero_store=True)
def reread_in_one_block(x: wp.array(dtype=wp.float64), y: wp.array(dtype=wp.float64)):
    # a flagged kernel: the read between the two stores is served from its replay log (the later store follows it)
    i = wp.tid()
    y[i] = x[i] * x[i]
    t = y[i] * x[i]
    y[i] = t * wp.float64(2.0)


@wp.func
def cube_in_two_passes(x: wp.array(dtype=wp.float64), y: wp.array(dtype=wp.float64), i: int):
    y[i] = x[i] * x[i]
    y[i] = y[i] * x[i]  # a read between two writes, in a helper whose @wp.func_grad Warp runs instead


@wp.func_grad(cube_in_two_passes)
def adj_cube_in_two_passes(x: wp.array(dtype=wp.float64), y: wp.array(dtype=wp.float64), i: int):
    # Newton's dense_solve style: the adjoint reads the result from memory, y = x^3, so d y / d x = 3 y / x
    wp.adjoint[x][i] += wp.adjoint[y][i] * wp.float64(3.0) * y[i] / x[i]


@wp.kernel
def calls_a_helper_with_its_own_adjoint(x: wp.array(dtype=wp.float64), y: wp.array(dtype=wp.float64)):
    i = wp.tid()
    cube_in_two_passes(x, y, i)
