"""Warp's own overwrite warnings (``warp.config.verify_autograd_array_access``) pass through this package's Tape
in every mode: where a user turned them on, each Tape warns exactly as Warp's own Tape does, and the snapshot
Tape's restores at ``backward()`` add none; with the flag off, none (the negative twin). docs/semantics.md says so."""

import contextlib
import io
import warnings

import numpy as np
import pytest

import warp_zerostore as wp
from warp_zerostore import _compat

WARP_SAYS = "is being written to but has already been read from"


@wp.kernel
def square_in_place(x: wp.array(dtype=float)):
    i = wp.tid()
    x[i] = x[i] * x[i]


@wp.kernel
def scale_then_square(x: wp.array(dtype=float), y: wp.array(dtype=float)):
    i = wp.tid()
    x[i] = 2.0 * x[i]
    y[i] = x[i] * x[i]  # a read after the launch's own write: the twin reads its marks of x, then writes them


@wp.kernel
def double(x: wp.array(dtype=float), y: wp.array(dtype=float)):
    i = wp.tid()
    y[i] = 2.0 * x[i]


TAPES = {
    "warp": lambda: _compat.WarpTape(),
    "plain": lambda: wp.Tape(),
    "snapshot": lambda: wp.Tape(snapshot=True),
    "check": lambda: wp.Tape(check="warn"),
}


@pytest.fixture
def verify(request):
    saved = wp.config.verify_autograd_array_access
    wp.config.verify_autograd_array_access = request.param
    yield request.param
    wp.config.verify_autograd_array_access = saved


def _warp_warnings(make_tape):
    """Warp's overwrite warnings while recording (x read by `double`, then written in place) and at backward."""
    x = wp.array(np.array([3.0], dtype=np.float32), requires_grad=True)
    y = wp.zeros(1, dtype=float, requires_grad=True)
    printed = io.StringIO()  # Warp up to 1.16 prints its warnings to stdout; from 1.17 they are Python warnings here
    with warnings.catch_warnings(record=True) as said, _compat.warp_warnings_as_warnings():
        warnings.simplefilter("always")
        warnings.simplefilter("ignore", wp.OverwriteWarning)  # the package's own report: not what is counted
        with contextlib.redirect_stdout(printed):
            tape = make_tape()
            with tape:
                wp.launch(double, dim=1, inputs=[x, y])
                wp.launch(square_in_place, dim=1, inputs=[x])
            recording = sum(WARP_SAYS in str(w.message) for w in said) + printed.getvalue().count(WARP_SAYS)
            tape.backward(grads={y: wp.ones(1, dtype=float)})
        total = sum(WARP_SAYS in str(w.message) for w in said) + printed.getvalue().count(WARP_SAYS)
    return recording, total, x.grad.numpy().tolist()


@pytest.mark.parametrize("verify", [True], indirect=True)
@pytest.mark.parametrize("tape", sorted(TAPES))
def test_warps_overwrite_warnings_pass_through_every_tape(verify, tape):
    assert _warp_warnings(TAPES[tape]) == _warp_warnings(TAPES["warp"]) == (1, 1, [2.0])


@pytest.mark.parametrize("verify", [False], indirect=True)
@pytest.mark.parametrize("tape", sorted(TAPES))
def test_no_warning_of_warps_with_the_flag_off(verify, tape):  # negative twin
    assert _warp_warnings(TAPES[tape]) == (0, 0, [2.0])


@pytest.mark.parametrize("verify", [True], indirect=True)
def test_the_read_twin_is_not_what_warps_warnings_name(verify):
    """The check Tape's instrument kernel (the read twin) is built and run with Warp's flags off: no warning of
    Warp's names it, and its copies of the user's arrays mark nothing read."""
    x = wp.array(np.array([3.0, 4.0], dtype=np.float32), requires_grad=True)
    y = wp.zeros(2, dtype=float, requires_grad=True)
    printed = io.StringIO()
    with warnings.catch_warnings(record=True) as said, _compat.warp_warnings_as_warnings():
        warnings.simplefilter("always")
        warnings.simplefilter("ignore", wp.OverwriteWarning)
        with contextlib.redirect_stdout(printed), wp.Tape(check="warn"):
            wp.launch(scale_then_square, dim=2, inputs=[x, y])
    said = [str(w.message) for w in said] + printed.getvalue().splitlines()
    assert not [m for m in said if "read twin" in m or "_wzs_" in m]
