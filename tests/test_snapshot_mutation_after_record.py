"""``Tape(snapshot=True)`` never hands back a gradient of inputs that changed after it recorded them: it raises,
naming the kernel that read them and the argument.

The program records ``y = x * x`` at x = 3, then changes ``x`` before ``backward()``: an unrecorded launch,
``fill_``, ``zero_``, ``assign``, an untaped ``wp.copy``, a write through ``x.numpy()`` (CPU). Each gave 14 instead of
6 with no word. The twins: the same program without the change is exact and silent, and a change a recorded
launch makes (a later launch on the Tape) is not a mutation.
"""

import numpy as np
import pytest

import warp_zerostore as wp


@wp.kernel
def square(x: wp.array(dtype=float), y: wp.array(dtype=float)):
    i = wp.tid()
    y[i] = x[i] * x[i]


@wp.kernel
def set_to(x: wp.array(dtype=float), v: float):
    x[wp.tid()] = v


def _copy(x):
    src = wp.array([7.0], dtype=float)
    wp.copy(x, src)


def _numpy_write(x):
    x.numpy()[0] = 7.0


CHANGES = {
    "unrecorded launch": lambda x: wp.launch(set_to, dim=1, inputs=[x, 7.0], record_tape=False),
    "fill_": lambda x: x.fill_(7.0),
    "zero_": lambda x: x.zero_(),
    "assign": lambda x: x.assign(np.array([7.0], dtype=np.float32)),
    "untaped wp.copy": _copy,
    "write through numpy()": _numpy_write,
}


def _program(change=None, inside=False):
    x = wp.array([3.0], dtype=float, requires_grad=True)
    y = wp.zeros(1, dtype=float, requires_grad=True)
    tape = wp.Tape(snapshot=True)
    with tape:
        wp.launch(square, dim=1, inputs=[x, y])
    if change is not None:
        if inside:
            with tape:
                wp.launch(set_to, dim=1, inputs=[x, 7.0])  # recorded: not a mutation
        else:
            change(x)
    tape.backward(grads={y: wp.ones(1, dtype=float)})
    return x.grad.numpy()[0]


@pytest.mark.parametrize("name", list(CHANGES))
def test_a_change_after_record_is_refused_by_name_at_backward(name):
    with pytest.raises(wp.OverwriteError, match="mutated after record.*square.*argument 'x'"):
        _program(CHANGES[name])


def test_without_a_change_the_snapshot_tape_is_exact_and_silent():
    assert _program() == 6.0


def test_a_change_by_a_recorded_launch_is_not_a_mutation():
    _program(CHANGES["fill_"], inside=True)  # no error; the recorded overwrite's own hazard is the check Tape's
