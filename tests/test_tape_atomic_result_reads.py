"""``wp.atomic_min`` / ``wp.atomic_max``: their adjoint reads the element as the launch left it (which value won),
so the launch's own atomics writing it are what the backward must read: no stale read, and the gradient reaches
the winner (Warp's own test_atomic does this). A later launch over the result is a real stale read (the negative
twin: the backward would compare with the new value, and no winner gets the gradient); an argument also used any
other way is not such a result."""

import warnings

import numpy as np
import pytest

import warp_zerostore as wp
from warp_zerostore.access import argument_access


@wp.kernel
def running_min(values: wp.array(dtype=float), low: wp.array(dtype=float)):
    wp.atomic_min(low, wp.uint32(0), values[wp.tid()])  # an index the read twin does not follow, as in Warp's test


@wp.kernel
def running_max(values: wp.array(dtype=float), high: wp.array(dtype=float)):
    wp.atomic_max(high, 0, values[wp.tid()])


@wp.kernel
def min_then_clamp(values: wp.array(dtype=float), low: wp.array(dtype=float)):
    wp.atomic_min(low, 0, values[wp.tid()])
    low[0] = wp.max(low[0], 0.25)  # a store of its own over the result


@wp.kernel
def reset(low: wp.array(dtype=float)):
    low[0] = 0.5


def _run(kernel, later=None, seed=0):
    rng = np.random.default_rng(seed)
    values = wp.array(rng.random(8).astype(np.float32), requires_grad=True)
    result = wp.array(np.array([10.0 if kernel is not running_max else -10.0], dtype=np.float32), requires_grad=True)
    tape = wp.Tape(check="warn")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", wp.OverwriteWarning)
        with tape:
            wp.launch(kernel, dim=8, inputs=[values, result])
            if later is not None:
                wp.launch(later, dim=1, inputs=[result])
    stale = [h for h in tape.hazards if h.kind == "stale read"]
    return tape, values, result, stale


def test_the_access_says_the_adjoint_reads_the_result():
    assert argument_access(running_min)["low"].adjoint_reads_result
    assert argument_access(running_max)["high"].adjoint_reads_result
    assert not argument_access(min_then_clamp)["low"].adjoint_reads_result  # mixed with a store


@pytest.mark.parametrize("kernel, pick", [(running_min, np.argmin), (running_max, np.argmax)])
@pytest.mark.parametrize("seed", range(3))
def test_a_launch_reading_its_own_atomic_result_is_no_stale_read(kernel, pick, seed):
    tape, values, result, stale = _run(kernel, seed=seed)
    assert stale == [], [h.message() for h in stale]
    tape.backward(grads={result: wp.ones(1, dtype=float)})
    expected = np.zeros(8, dtype=np.float32)
    expected[pick(values.numpy())] = 1.0
    assert values.grad.numpy().tolist() == expected.tolist()


def test_a_later_launch_over_the_result_is_a_real_stale_read():  # negative twin
    _, _, _, stale = _run(running_min, later=reset)
    assert [(h.reader.kernel, h.writer.kernel, h.real) for h in stale] == [("running_min", "reset", True)]
