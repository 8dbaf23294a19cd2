"""Warp's composite-slot replay test, ported (its kernels, not its file) so that it runs on every matrix version.

Warp 1.19's ``test_array_composite_slot_augassign_backward`` updates ``y[0]`` in place (``+=``, ``-=``) through a
vector component and through a scalar element, then squares it. Stock Warp is right; with ``zero_store`` forced
on, the scalar twin gave 16 instead of 10 before the replay's POST backward (the flagged kernel read the update
twice). Every mode must give the exact gradient on a plain Tape: d(out)/dx = 2 (y0 + x) for +=, -2 (y0 - x) for -=.
"""

import warnings

import numpy as np
import pytest
from helpers import kernels_composite_slots as K

import warp_zerostore as wp
from warp_zerostore import _compat

CASES = {"+=": (K.iadd_replay, 2.0, 2 * (2.0 + 3.0)), "-=": (K.isub_replay, 8.0, -2 * (8.0 - 3.0))}


@pytest.mark.parametrize("flag", [None, True], ids=["stock", "zero_store forced on"])
@pytest.mark.parametrize("op", list(CASES))
def test_a_component_and_a_scalar_updated_in_place_then_read_give_the_same_exact_gradient(op, flag, process_default):
    process_default(flag)
    kernel, y0, exact = CASES[op]
    vec_y = wp.array(np.array([[y0, 0.0]], dtype=np.float32), dtype=wp.vec2, requires_grad=True)
    scalar_y = wp.array(np.array([y0], dtype=np.float32), dtype=wp.float32, requires_grad=True)
    vec_x = wp.array([3.0], dtype=wp.float32, requires_grad=True)
    scalar_x = wp.array([3.0], dtype=wp.float32, requires_grad=True)
    vec_out = wp.zeros(1, dtype=wp.float32, requires_grad=True)
    scalar_out = wp.zeros(1, dtype=wp.float32, requires_grad=True)
    tape = wp.Tape()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", wp.ReplayWarning)
        with tape:
            wp.launch(kernel, 1, inputs=[vec_y, scalar_y, vec_x, scalar_x, vec_out, scalar_out])
    np.testing.assert_array_equal(vec_y.numpy()[:, 0], scalar_y.numpy())
    tape.backward(grads={vec_out: wp.ones(1, dtype=wp.float32), scalar_out: wp.ones(1, dtype=wp.float32)})
    np.testing.assert_allclose(scalar_x.grad.numpy(), [exact])
    if flag is True or _compat.HAS_SLOT_STORES:  # stock <= 1.17 drops a component +='s gradient (measured)
        np.testing.assert_allclose(vec_x.grad.numpy(), [exact])
        np.testing.assert_allclose(vec_y.grad.numpy()[:, 0], scalar_y.grad.numpy())


@pytest.mark.parametrize("flag", [None, True], ids=["stock", "zero_store forced on"])
def test_a_struct_held_arrays_component_updated_in_place_then_read(flag, process_default):
    process_default(flag)
    x = wp.array([3.0], dtype=wp.float32, requires_grad=True)
    holder = K.Holder()
    holder.values = wp.array(np.array([[2.0, 0.0, 0.0]], dtype=np.float32), dtype=wp.vec3, requires_grad=True)
    out = wp.zeros(1, dtype=wp.float32, requires_grad=True)
    tape = wp.Tape()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", wp.ReplayWarning)
        with tape:
            wp.launch(K.struct_field_component_iadd, 1, inputs=[holder, x], outputs=[out])
    np.testing.assert_allclose(out.numpy(), [25.0])
    tape.backward(grads={out: wp.ones(1, dtype=wp.float32)})
    if flag is True or _compat.HAS_SLOT_STORES:
        np.testing.assert_allclose(x.grad.numpy(), [10.0])
