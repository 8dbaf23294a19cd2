"""An explicit atomic is a write of its element, not a read of its array, in the Tape's checks.

* ``wp.atomic_add(y, i, v)`` then a read of ``y[i]`` is right on a plain Tape (the read sees the launch's output,
  which the replay reads too): ``check`` reports nothing (it reported a real stale read).
* ``wp.atomic_add(a[w], j, v)`` through a row view writes ``a[w, j]``: the launch is not a reader of ``a`` (it was
  counted as reading ``a`` whole, which made a later writer's stale read of it false).
Twins: a kernel that reads ``a`` before a later launch accumulates into it is still a stale read.
"""

import warnings

import numpy as np

import warp_zerostore as wp


@wp.kernel
def atomic_then_read(y: wp.array(dtype=float), x: wp.array(dtype=float), out: wp.array(dtype=float)):
    i = wp.tid()
    wp.atomic_add(y, i, x[i])
    out[i] = y[i] * y[i]


@wp.kernel
def accumulate_row(a: wp.array2d(dtype=float), v: wp.array2d(dtype=float)):
    w, j = wp.tid()
    wp.atomic_add(a[w], j, v[w, j])


@wp.kernel
def square_into(a: wp.array2d(dtype=float), out: wp.array2d(dtype=float)):
    w, j = wp.tid()
    out[w, j] = a[w, j] * a[w, j]


def _hazards(launches):
    tape = wp.Tape(check="warn")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", wp.OverwriteWarning)
        with tape:
            launches()
    return tape, [(h.kind, h.reader.kernel if h.reader else None) for h in tape.hazards if h.real]


def test_an_atomic_then_a_read_of_its_element_is_not_reported_and_is_right():
    y = wp.array([2.0], dtype=float, requires_grad=True)
    x = wp.array([3.0], dtype=float, requires_grad=True)
    out = wp.zeros(1, dtype=float, requires_grad=True)
    tape, found = _hazards(lambda: wp.launch(atomic_then_read, dim=1, inputs=[y, x, out]))
    assert found == []
    tape.backward(grads={out: wp.ones(1, dtype=float)})
    np.testing.assert_allclose(x.grad.numpy(), [10.0])  # 2 (y + x), as on a plain Tape


def test_an_atomic_through_a_row_view_is_not_a_read():
    a = wp.ones((2, 2), dtype=float, requires_grad=True)
    v = wp.ones((2, 2), dtype=float, requires_grad=True)

    def program():
        wp.launch(accumulate_row, dim=(2, 2), inputs=[a, v])
        wp.launch(accumulate_row, dim=(2, 2), inputs=[a, v])

    _, found = _hazards(program)
    assert found == []  # two accumulations, no reader


def test_a_read_before_a_later_accumulation_is_still_a_stale_read():
    a = wp.ones((2, 2), dtype=float, requires_grad=True)
    v = wp.ones((2, 2), dtype=float, requires_grad=True)
    out = wp.zeros((2, 2), dtype=float, requires_grad=True)

    def program():
        wp.launch(square_into, dim=(2, 2), inputs=[a, out])
        wp.launch(accumulate_row, dim=(2, 2), inputs=[a, v])

    _, found = _hazards(program)
    assert found == [("stale read", "square_into")]


# -- which elements a launch writes does not depend on the data: a store through a row view of the value already there


@wp.kernel
def reset_row_view(a: wp.array2d(dtype=float)):
    w, j = wp.tid()
    row = a[w]
    row[j] = 1.0


@wp.kernel
def reset_direct(a: wp.array2d(dtype=float)):
    w, j = wp.tid()
    a[w, j] = 1.0


def test_a_store_through_a_row_view_of_the_value_already_there_is_a_write_as_a_direct_one_is():
    for writer in (reset_row_view, reset_direct):
        a = wp.ones((2, 2), dtype=float, requires_grad=True)  # already 1: the bytes do not change
        out = wp.zeros((2, 2), dtype=float, requires_grad=True)

        def program(writer=writer, a=a, out=out):
            wp.launch(square_into, dim=(2, 2), inputs=[a, out])
            wp.launch(writer, dim=(2, 2), inputs=[a])

        _, found = _hazards(program)
        assert found == [("stale read", "square_into")], writer.key


# -- an overwrite is about stores: a launch on which only the accumulating branch ran overwrites nothing


@wp.kernel
def write_y(x: wp.array(dtype=float), y: wp.array(dtype=float)):
    i = wp.tid()
    y[i] = 2.0 * x[i]


@wp.kernel
def add_or_set(flag: int, x: wp.array(dtype=float), y: wp.array(dtype=float)):
    i = wp.tid()
    if flag == 0:
        y[i] += x[i]
    else:
        y[i] = x[i]


def _overwrites(flag: int) -> list:
    x = wp.ones(2, dtype=float, requires_grad=True)
    y = wp.zeros(2, dtype=float, requires_grad=True)

    def program():
        wp.launch(write_y, dim=2, inputs=[x, y])
        wp.launch(add_or_set, dim=2, inputs=[flag, x, y])

    tape, _ = _hazards(program)
    return [h for h in tape.hazards if h.kind == "overwrite"]


def test_a_launch_that_only_accumulated_is_no_overwrite_and_one_that_stored_is():
    assert _overwrites(0) == []
    assert len(_overwrites(1)) == 1
