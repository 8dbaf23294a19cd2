"""Arrays inside a ``@wp.struct`` argument are not followed by the Tape's checks and snapshots: the Tape says so for
each launch site (kind "not checked (arrays in a struct)"), and ``python -m warp_zerostore check`` never reports 0
hazards about what it did not look at: it exits with the "unchecked" status. A struct of scalars is not reported.
"""

import warnings

import pytest

import warp_zerostore as wp
from warp_zerostore.cli import check as check_command
from warp_zerostore.tape import tape as tape_module


@wp.struct
class State:
    q: wp.array(dtype=float)


@wp.struct
class Params:
    k: float


@wp.kernel
def step_in_struct(s: State, out: wp.array(dtype=float)):
    i = wp.tid()
    out[i] = s.q[i] * s.q[i]
    s.q[i] = 0.0


@wp.kernel
def scale_by(p: Params, x: wp.array(dtype=float), out: wp.array(dtype=float)):
    i = wp.tid()
    out[i] = p.k * x[i]


@pytest.mark.parametrize("options", [{"check": "warn"}, {"snapshot": True}])
def test_a_struct_holding_arrays_is_reported_as_not_checked(options):
    s = State()
    s.q = wp.array([3.0], dtype=float, requires_grad=True)
    out = wp.zeros(1, dtype=float, requires_grad=True)
    tape = wp.Tape(**options)
    with pytest.warns(wp.OverwriteWarning, match=r"not checked \(arrays in a struct\).*step_in_struct.*argument 's'"):
        with tape:
            wp.launch(step_in_struct, dim=1, inputs=[s, out])
    kinds = [h.kind for h in tape.hazards]
    assert tape_module.IN_STRUCT in kinds
    summary = check_command._summary(tape.hazards)
    assert "0 hazard(s)" in summary and "NOT CHECKED" in summary


def test_a_struct_of_scalars_is_not_reported():
    p = Params()
    p.k = 2.0
    x = wp.array([1.0], dtype=float, requires_grad=True)
    out = wp.zeros(1, dtype=float, requires_grad=True)
    tape = wp.Tape(check="warn")
    with warnings.catch_warnings():
        warnings.simplefilter("error", wp.OverwriteWarning)
        with tape:
            wp.launch(scale_by, dim=1, inputs=[p, x, out])
    assert not tape.hazards
