"""Where no gradient flows, nothing is real; where one does, it stays real.

* An overwrite of an array without a gradient (an integer or bool dtype, or ``requires_grad=False``) has nothing to
  leak: never real (its negative twin: the same overwrite of a float array with a gradient stays real).
* A stale read of an integer array used as an index stays real: a gather through ``idx`` after ``idx`` is
  overwritten gives ``[0, 4, 12, 8]`` on a plain Tape where ``[2, 8, 6, 0]`` is right (the snapshot Tape's answer).
"""

import warnings

import numpy as np
import pytest

import warp_zerostore as wp
from warp_zerostore.tape.tape import OVERWRITE, STALE_READ


@wp.kernel
def gather_square(x: wp.array(dtype=float), idx: wp.array(dtype=int), out: wp.array(dtype=float)):
    i = wp.tid()
    out[i] = x[idx[i]] * x[idx[i]]


@wp.kernel
def shift_index(idx: wp.array(dtype=int)):
    i = wp.tid()
    idx[i] = idx[i] + 1


@wp.kernel
def total(y: wp.array(dtype=float), loss: wp.array(dtype=float)):
    wp.atomic_add(loss, 0, y[wp.tid()])


@wp.kernel
def count_into(counter: wp.array(dtype=int), x: wp.array(dtype=float), y: wp.array(dtype=float)):
    i = wp.tid()
    counter[i] = i
    y[i] = x[i]


@wp.kernel
def store_float(x: wp.array(dtype=float), y: wp.array(dtype=float)):
    i = wp.tid()
    y[i] = 2.0 * x[i]


@wp.kernel(module="unique", enable_backward=False)
def reset_counter(counter: wp.array(dtype=int)):
    counter[wp.tid()] = 0


def gather(tape):
    x = wp.array([1.0, 2.0, 3.0, 4.0], dtype=float, requires_grad=True)
    idx = wp.array([0, 1, 1, 2], dtype=int)
    out = wp.zeros(4, dtype=float, requires_grad=True)
    loss = wp.zeros(1, dtype=float, requires_grad=True)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", wp.OverwriteWarning)
        with tape:
            wp.launch(gather_square, dim=4, inputs=[x, idx, out])
            wp.launch(shift_index, dim=4, inputs=[idx])
            wp.launch(total, dim=4, inputs=[out, loss])
        tape.backward(loss)
    return x.grad.numpy().tolist(), list(getattr(tape, "hazards", []))


def test_a_gather_through_an_overwritten_int_index_is_a_real_stale_read():
    assert gather(wp.Tape())[0] == [0.0, 4.0, 12.0, 8.0]  # the plain Tape reads the shifted index
    assert gather(wp.Tape(snapshot=True))[0] == [2.0, 8.0, 6.0, 0.0]
    grad, hazards = gather(wp.Tape(check="warn"))
    stale = [(h.reader.kernel, h.reader.argument, h.real) for h in hazards if h.kind == STALE_READ]
    assert ("gather_square", "idx", True) in stale


def overwrite(array, kernel_first, kernel_then, tape):
    x = wp.array([1.0, 2.0], dtype=float, requires_grad=True)
    y = wp.zeros(2, dtype=float, requires_grad=True)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", wp.OverwriteWarning)
        with tape:
            kernel_first(array, x, y)
            kernel_then(array, x, y)
    return [h for h in tape.hazards if h.kind == OVERWRITE]


def test_an_overwrite_of_an_integer_array_is_never_real():
    counter = wp.zeros(2, dtype=int)
    found = overwrite(
        counter,
        lambda c, x, y: wp.launch(count_into, dim=2, inputs=[c, x, y]),
        lambda c, x, y: wp.launch(reset_counter, dim=2, inputs=[c]),
        wp.Tape(check="warn"),
    )
    assert [(h.writer.argument, h.real, h.cause) for h in found] == [("counter", False, "no gradient")]
    assert "safe: the array has no gradient" in found[0].message()


@pytest.mark.parametrize("requires_grad", [False, True])
def test_an_overwrite_of_a_float_array_is_real_only_where_it_has_a_gradient(requires_grad, process_default):
    process_default(False)  # accumulating store adjoints: an overwrite of a float array with a gradient leaks
    y = wp.zeros(2, dtype=float, requires_grad=requires_grad)
    found = overwrite(
        y,
        lambda a, x, y_: wp.launch(store_float, dim=2, inputs=[x, a]),
        lambda a, x, y_: wp.launch(store_float, dim=2, inputs=[x, a]),
        wp.Tape(check="warn"),
    )
    assert [(h.real, h.cause) for h in found] == [(requires_grad, "" if requires_grad else "no gradient")]
    assert np.array_equal(y.numpy(), [2.0, 4.0])
