"""Kernels for tests/test_replay.py: a thread reading back its own stores, stores in helpers, loops."""

import warp_zerostore as wp


@wp.func
def put(y: wp.array(dtype=wp.float64), i: int, v: wp.float64):
    y[i] = v


@wp.func
def square_of(y: wp.array(dtype=wp.float64), i: int):
    return y[i] * y[i]


@wp.func
def put_twice(y: wp.array(dtype=wp.float64), i: int, v: wp.float64):
    # a helper that reads back its own store, through a nested helper
    put(y, i, v)
    y[i] = y[i] * v


@wp.kernel(zero_store=True)
def read_back(x: wp.array(dtype=wp.float64), y: wp.array(dtype=wp.float64)):
    i = wp.tid()
    y[i] = x[i] * x[i]
    y[i] = y[i] * x[i]


@wp.kernel
def read_back_stock(x: wp.array(dtype=wp.float64), y: wp.array(dtype=wp.float64)):
    i = wp.tid()
    y[i] = x[i] * x[i]
    y[i] = y[i] * x[i]


@wp.kernel(zero_store=False)
def read_back_accumulate(x: wp.array(dtype=wp.float64), y: wp.array(dtype=wp.float64)):
    i = wp.tid()
    y[i] = x[i] * x[i]
    y[i] = y[i] * x[i]


@wp.kernel(zero_store=True)
def read_back_in_place(x: wp.array(dtype=wp.float64)):
    # reads x[i] before and after writing it: exact on a snapshotting Tape
    i = wp.tid()
    t = x[i]
    x[i] = t * t
    x[i] = x[i] * t


@wp.kernel(zero_store=True)
def read_back_helpers(x: wp.array(dtype=wp.float64), y: wp.array(dtype=wp.float64)):
    # y = (x^2)^2 * x = x^5, written by a helper and read back by another
    i = wp.tid()
    put(y, i, x[i] * x[i])
    y[i] = square_of(y, i) * x[i]


@wp.kernel(zero_store=True)
def read_back_nested(x: wp.array(dtype=wp.float64), y: wp.array(dtype=wp.float64)):
    # y = x^2 * x^2 + x = x^4 + x
    i = wp.tid()
    put_twice(y, i, x[i] * x[i])
    y[i] = y[i] + x[i]


@wp.kernel(zero_store=True)
def read_back_components(x: wp.array(dtype=wp.float64), v: wp.array(dtype=wp.vec3d), out: wp.array(dtype=wp.float64)):
    # a component store read back whole: v = (x^2, x, x), out = v . v = x^4 + 2x^2; v is cleared after
    i = wp.tid()
    v[i] = wp.vec3d(x[i], x[i], x[i])
    v[i][0] = v[i][1] * x[i]
    out[i] = wp.dot(v[i], v[i])
    v[i] = wp.vec3d()


@wp.kernel(zero_store=True)
def read_back_2d(x: wp.array2d(dtype=wp.float64), y: wp.array2d(dtype=wp.float64)):
    # y[i, 1] reads y[i, 0], stored earlier by the same thread and overwritten after: y[i, 1] = x^3, y[i, 0] = x
    i = wp.tid()
    y[i, 0] = x[i, 0] * x[i, 0]
    y[i, 1] = y[i, 0] * x[i, 0]
    y[i, 0] = x[i, 0]


@wp.kernel(zero_store=True)
def read_back_branch(x: wp.array(dtype=wp.float64), y: wp.array(dtype=wp.float64)):
    # the store and the read-back under a branch: x > 1: y = x^3, else y = 2x
    i = wp.tid()
    y[i] = x[i] + x[i]
    if x[i] > wp.float64(1.0):
        y[i] = x[i] * x[i]
        y[i] = y[i] * x[i]


@wp.kernel(zero_store=True)
def read_back_static_loop(x: wp.array(dtype=wp.float64), y: wp.array(dtype=wp.float64)):
    # a constant-bound loop is unrolled: y = x^4, carried through memory, exact
    i = wp.tid()
    y[i] = x[i]
    for _k in range(3):
        y[i] = y[i] * x[i]


@wp.kernel(zero_store=True)
def carried_in_runtime_loop(x: wp.array(dtype=wp.float64), y: wp.array(dtype=wp.float64), n: int):
    # a value carried through y across iterations of a runtime-bound loop: not replayable, warned
    i = wp.tid()
    y[i] = x[i]
    for _k in range(n):
        y[i] = y[i] * x[i]


@wp.kernel(zero_store=True)
def carried_through_another_index(x: wp.array(dtype=wp.float64), y: wp.array(dtype=wp.float64), n: int):
    # the same, read through an index variable set before the loop: the same element in every iteration
    i = wp.tid()
    y[i] = x[i]
    j = i + 0
    for _k in range(n):
        y[i] = y[j] * x[i]


@wp.kernel(zero_store=True)
def runtime_loop_no_carry(x: wp.array(dtype=wp.float64), y: wp.array(dtype=wp.float64), n: int):
    # a runtime-bound loop that reads back nothing it stored in an earlier iteration: no warning
    i = wp.tid()
    for k in range(n):
        y[i * n + k] = x[i] * wp.float64(k)


@wp.kernel(zero_store=True)
def no_read_back(x: wp.array(dtype=wp.float64), y: wp.array(dtype=wp.float64)):
    # reads before writing only (in place and out of place): Warp's code, byte for byte
    i = wp.tid()
    y[i] = y[i] * x[i] + x[i] * x[i]


@wp.kernel
def square_reader(y: wp.array(dtype=wp.float64), out: wp.array(dtype=wp.float64)):
    i = wp.tid()
    out[i] = y[i] * y[i]


@wp.kernel(zero_store=True)
def overwrite_direct(y: wp.array(dtype=wp.float64)):
    i = wp.tid()
    y[i] = wp.float64(5.0)


@wp.kernel(zero_store=True)
def overwrite_through_helper(y: wp.array(dtype=wp.float64)):
    i = wp.tid()
    put(y, i, wp.float64(5.0))


@wp.kernel(zero_store=True)
def read_back_indirect(x: wp.array(dtype=wp.float64), index: wp.array(dtype=int), y: wp.array(dtype=wp.float64)):
    # y[j] with j = index[i] = i at run time: the same element, which only the log can tell
    i = wp.tid()
    y[i] = x[i] * x[i]
    j = index[i]
    y[i] = y[j] * x[i]


@wp.func
def scaled_into(
    x: wp.array(dtype=wp.float64), i: int, out: wp.array(dtype=wp.float64), scratch: wp.array(dtype=wp.float64)
):
    out[i] = x[i] * x[i]


@wp.func_grad(scaled_into)
def adj_scaled_into(
    x: wp.array(dtype=wp.float64), i: int, out: wp.array(dtype=wp.float64), scratch: wp.array(dtype=wp.float64)
):
    # a user's adjoint that writes a scratch array for real, then reads it back (as Newton's dense_solve does)
    scratch[i] = wp.float64(2.0) * x[i]
    wp.adjoint[x][i] += scratch[i] * wp.adjoint[out][i]


@wp.kernel(zero_store=True)
def custom_adjoint_with_scratch(
    x: wp.array(dtype=wp.float64), out: wp.array(dtype=wp.float64), scratch: wp.array(dtype=wp.float64)
):
    i = wp.tid()
    scaled_into(x, i, out, scratch)


@wp.kernel(zero_store=True)
def read_back_after_add(x: wp.array(dtype=wp.float64), y: wp.array(dtype=wp.float64)):
    # += on an array element is an atomic add; the replay follows it for the thread's own element:
    # y = (x + x^2) * x
    i = wp.tid()
    y[i] = x[i]
    y[i] += x[i] * x[i]
    y[i] = y[i] * x[i]


@wp.kernel(zero_store=True)
def read_after_runtime_loop(
    x: wp.array(dtype=wp.float64), y: wp.array(dtype=wp.float64), out: wp.array(dtype=wp.float64), n: int
):
    # y is stored in a runtime-bound loop and read after it: memory holds what the loop left (a plain Tape's
    # backward reads it, exact); a backward against the launch's input would need the loop's stores (reported)
    i = wp.tid()
    for k in range(n):
        y[i] = x[i] * wp.float64(k + 1)
    out[i] = y[i] * y[i]


@wp.kernel(zero_store=True)
def read_after_runtime_loop_then_store(
    x: wp.array(dtype=wp.float64), y: wp.array(dtype=wp.float64), out: wp.array(dtype=wp.float64), n: int
):
    # the same read, then y stored again: no memory holds what the read read, whatever the Tape (reported for both)
    i = wp.tid()
    for k in range(n):
        y[i] = x[i] * wp.float64(k + 1)
    out[i] = y[i] * y[i]
    y[i] = wp.float64(1.0)


@wp.func
def forward_kinematics(x: wp.array(dtype=wp.float64), y: wp.array(dtype=wp.float64), n: int):
    # Newton's FK shape: each iteration reads what an earlier one stored (its parent), in a branch
    for k in range(n):
        parent = k - 1
        v = x[k]
        if parent >= 0:
            v = v * y[parent]
        y[k] = v


@wp.func
def scale_in_place_from_a_seed(x: wp.array(dtype=wp.float64), y: wp.array(dtype=wp.float64), n: int):
    # y[0] stored before the loop, then updated in it: the helper's log holds the seed, older than the loop's stores
    y[0] = x[0]
    for k in range(1, n):
        v = y[0] * x[k]
        if v > wp.float64(-100.0):
            y[0] = v


@wp.kernel(zero_store=True)
def helper_forward_kinematics(x: wp.array(dtype=wp.float64), y: wp.array(dtype=wp.float64), n: int):
    forward_kinematics(x, y, n)


@wp.kernel(zero_store=True)
def helper_scale_from_a_seed(x: wp.array(dtype=wp.float64), y: wp.array(dtype=wp.float64), n: int):
    scale_in_place_from_a_seed(x, y, n)
