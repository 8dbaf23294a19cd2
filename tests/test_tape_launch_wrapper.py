"""A program's (or a library's) own ``warp.launch`` wrapper is called inside every Tape and still installed after.

Profilers and simulators wrap ``warp.launch`` after import. A checking or snapshotting Tape hooks launches too: it
must wrap whatever is current, call it, and on exit put back only what is still its own hook.
"""

import warnings

import numpy as np
import pytest
import warp

import warp_zerostore as wp


@wp.kernel
def double(x: wp.array(dtype=float), y: wp.array(dtype=float)):
    i = wp.tid()
    y[i] = 2.0 * x[i]


@pytest.fixture
def user_wrapper():
    calls = []
    previous = warp.launch

    def my_launch(*args, **kwargs):
        calls.append(kwargs.get("kernel", args[0] if args else None))
        return previous(*args, **kwargs)

    warp.launch = my_launch
    try:
        yield my_launch, calls
    finally:
        warp.launch = previous


@pytest.mark.parametrize("options", [{}, {"check": "warn"}, {"snapshot": True}, {"check": "warn", "snapshot": True}])
def test_a_users_launch_wrapper_is_called_inside_the_tape_and_kept_after_it(user_wrapper, options):
    my_launch, calls = user_wrapper
    x = wp.array([1.0, 2.0], dtype=float, requires_grad=True)
    y = wp.zeros(2, dtype=float, requires_grad=True)
    tape = wp.Tape(**options)
    with warnings.catch_warnings():
        warnings.simplefilter("error", wp.OverwriteWarning)
        with tape:
            wp.launch(double, dim=2, inputs=[x, y])
    assert calls == [double]  # once: the Tape's hook and the wrapper record one launch, not two
    # a checking or snapshot Tape keeps its hook over the wrapper until backward() (its journal of changes)
    assert (warp.launch if not options else warp.launch.__wrapped__) is my_launch
    assert len(tape.launches) == 1
    tape.backward(grads={y: wp.ones(2, dtype=float)})
    np.testing.assert_array_equal(x.grad.numpy(), [2.0, 2.0])
    assert warp.launch is my_launch


def test_a_wrapper_installed_inside_the_tape_stays_after_it():
    previous = warp.launch
    calls = []

    def late(*args, **kwargs):
        calls.append(1)
        return previous_inside(*args, **kwargs)

    x = wp.array([1.0], dtype=float, requires_grad=True)
    y = wp.zeros(1, dtype=float, requires_grad=True)
    try:
        with wp.Tape(check="warn") as tape:
            previous_inside = warp.launch
            warp.launch = late
            wp.launch(double, dim=1, inputs=[x, y])
        assert warp.launch is late and calls == [1] and len(tape.launches) == 1
    finally:
        warp.launch = previous
