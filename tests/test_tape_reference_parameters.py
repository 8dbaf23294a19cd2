"""An array element passed to a ``wp.ref[T]`` parameter (warp-lang >= 1.15; a ``@wp.func_native`` here, as in Warp's
own test_ref) is written by the launch itself: check reports no "mutated after record" for it, and the gradient is
Warp's. The negative twin: an element passed by value to a ``@wp.func`` stays a read."""

import warnings

import numpy as np
import pytest

import warp_zerostore as wp
from warp_zerostore import _compat
from warp_zerostore.access import argument_access

pytestmark = pytest.mark.skipif(not hasattr(wp, "ref"), reason="wp.ref parameters arrived in warp-lang 1.15")

if hasattr(wp, "ref"):

    @wp.func_native("x = y * 2.0f;", adj_snippet="adj_y += 2.0f * adj_x;\nadj_x = 0.0f;")
    def store_double(x: wp.ref[wp.float32], y: wp.float32): ...

    @wp.kernel
    def through_reference(x: wp.array(dtype=wp.float32), out: wp.array(dtype=wp.float32)):
        i = wp.tid()
        store_double(out[i], x[i])


@wp.func
def doubled(v: wp.float32):
    return 2.0 * v


@wp.kernel
def by_value(x: wp.array(dtype=wp.float32), out: wp.array(dtype=wp.float32)):
    i = wp.tid()
    out[i] = doubled(x[i])


def test_the_reference_parameter_is_known():
    assert _compat.reference_parameters(store_double) == frozenset({0})
    assert _compat.reference_parameters(doubled) == frozenset()


def test_an_element_passed_by_reference_is_written_by_the_launch():
    assert argument_access(through_reference)["out"].writes
    assert not argument_access(by_value)["x"].writes  # negative twin: by value, a read


def test_check_reports_no_mutation_for_a_write_through_a_reference():
    x = wp.array(np.array([1.0, 2.0, 3.0], dtype=np.float32), requires_grad=True)
    out = wp.zeros(3, dtype=wp.float32, requires_grad=True)
    tape = wp.Tape(check="warn")
    with warnings.catch_warnings(record=True) as said:
        warnings.simplefilter("always")
        with tape:
            wp.launch(through_reference, dim=3, inputs=[x], outputs=[out])
        tape.backward(grads={out: wp.ones(3, dtype=wp.float32)})
    assert [h.kind for h in tape.hazards] == [] and not [w for w in said if issubclass(w.category, wp.OverwriteWarning)]
    assert out.numpy().tolist() == [2.0, 4.0, 6.0] and x.grad.numpy().tolist() == [2.0, 2.0, 2.0]
