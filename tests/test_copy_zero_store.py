"""``wp.copy`` and ``array.assign`` recorded on a Tape follow the process default or a scoped override."""

import numpy as np
import pytest

import warp_zerostore as wp
from warp_zerostore import _compat


@wp.kernel(zero_store=True)
def double_into(x: wp.array(dtype=float), y: wp.array(dtype=float)):
    i = wp.tid()
    y[i] = 2.0 * x[i]


def run(overwrite, device, n=4):
    """y = 2x by a kernel, then y is overwritten by z: only z should get y's gradient."""
    x = wp.ones(n, dtype=float, requires_grad=True, device=device)
    y = wp.zeros(n, dtype=float, requires_grad=True, device=device)
    z = wp.full(n, 5.0, dtype=float, requires_grad=True, device=device)
    with wp.Tape() as tape:
        wp.launch(double_into, dim=n, inputs=[x, y], device=device)
        overwrite(y, z)
    tape.backward(grads={y: wp.ones(n, dtype=float, device=device)})
    np.testing.assert_array_equal(y.numpy(), 5.0)
    return x.grad.numpy(), z.grad.numpy(), y.grad.numpy()


OVERWRITES = {"copy": lambda y, z: wp.copy(y, z), "assign": lambda y, z: y.assign(z)}


@pytest.mark.parametrize("how", list(OVERWRITES))
def test_scoped_zero(how, device):
    with wp.copy_zero_store(True):
        xg, zg, yg = run(OVERWRITES[how], device)
    np.testing.assert_array_equal(zg, 1.0)
    np.testing.assert_array_equal(xg, 0.0)  # the overwritten value's producer gets nothing
    np.testing.assert_array_equal(yg, 0.0)


@pytest.mark.parametrize("how", list(OVERWRITES))
def test_process_default_zero(how, device, process_default):
    process_default(True)
    xg, zg, yg = run(OVERWRITES[how], device)
    np.testing.assert_array_equal(zg, 1.0)
    np.testing.assert_array_equal(xg, 0.0)


@pytest.mark.parametrize("how", list(OVERWRITES))
def test_scoped_accumulate(how, device):
    """Negative twin: accumulate keeps dest's gradient, so it leaks into x through the kernel."""
    with wp.copy_zero_store(False):
        xg, zg, yg = run(OVERWRITES[how], device)
    np.testing.assert_array_equal(zg, 1.0)
    np.testing.assert_array_equal(xg, 2.0)
    np.testing.assert_array_equal(yg, 0.0)  # zeroed by the zero_store=True kernel, not by the copy


def test_scope_is_taken_at_record_time(device):
    """The mode in force when the copy was recorded applies, whatever is in force at backward()."""
    n = 3
    y = wp.zeros(n, dtype=float, requires_grad=True, device=device)
    z = wp.ones(n, dtype=float, requires_grad=True, device=device)
    with wp.Tape() as tape:
        with wp.copy_zero_store(True):
            wp.copy(y, z)
    with wp.copy_zero_store(False):
        tape.backward(grads={y: wp.ones(n, dtype=float, device=device)})
    np.testing.assert_array_equal(y.grad.numpy(), 0.0)
    np.testing.assert_array_equal(z.grad.numpy(), 1.0)


def test_accumulates_into_source_gradient(device):
    """The adjoint adds into src.grad (Warp <= 1.12's own adj_copy overwrites it)."""
    n = 3
    y = wp.zeros(n, dtype=float, requires_grad=True, device=device)
    z = wp.ones(n, dtype=float, requires_grad=True, device=device)
    with wp.Tape() as tape, wp.copy_zero_store(True):
        wp.copy(y, z)
    z.grad.fill_(4.0)
    tape.backward(grads={y: wp.ones(n, dtype=float, device=device)})
    np.testing.assert_array_equal(z.grad.numpy(), 5.0)


def test_partial_copy_region(device):
    y = wp.zeros(6, dtype=float, requires_grad=True, device=device)
    z = wp.ones(6, dtype=float, requires_grad=True, device=device)
    with wp.Tape() as tape, wp.copy_zero_store(True):
        wp.copy(y, z, dest_offset=1, src_offset=3, count=2)
    tape.backward(grads={y: wp.full(6, 2.0, dtype=float, device=device)})
    np.testing.assert_array_equal(y.grad.numpy(), [2.0, 0.0, 0.0, 2.0, 2.0, 2.0])
    np.testing.assert_array_equal(z.grad.numpy(), [0.0, 0.0, 0.0, 2.0, 2.0, 0.0])


@pytest.mark.skipif(not _compat.HAS_RETAIN_GRAD, reason="this warp-lang has no retain_grad (added in 1.13)")
def test_retain_grad_destination_is_not_zeroed(device):
    y = wp.zeros(3, dtype=float, requires_grad=True, retain_grad=True, device=device)
    z = wp.ones(3, dtype=float, requires_grad=True, device=device)
    with wp.Tape() as tape, wp.copy_zero_store(True):
        wp.copy(y, z)
    tape.backward(grads={y: wp.ones(3, dtype=float, device=device)})
    np.testing.assert_array_equal(y.grad.numpy(), 1.0)
    np.testing.assert_array_equal(z.grad.numpy(), 1.0)


def test_bad_scope_value_is_refused():
    with pytest.raises(TypeError, match=r"copy_zero_store\(\): zero_store must be"):
        with wp.copy_zero_store("yes"):
            pass


@pytest.mark.parametrize("flag", [True, False])
def test_strided_source_view(flag, device):
    """A copy from a strided view (a column of a 2-D array) addresses its window in logical order."""
    base = wp.array(np.ones((3, 4), dtype=np.float32), dtype=float, requires_grad=True, device=device)
    col = base[:, 2]
    dest = wp.zeros(4, dtype=float, requires_grad=True, device=device)
    with wp.Tape() as tape, wp.copy_zero_store(flag):
        try:
            wp.copy(dest, col, dest_offset=2, src_offset=1, count=2)  # dest[2:4] <- col[1:3]
        except RuntimeError as error:  # Warp <= 1.12 copies windows of contiguous arrays only
            pytest.skip(f"this warp-lang cannot copy a window of a strided view: {error}")
    seed = np.array([1.0, 2.0, 3.0, 4.0], dtype=np.float32)
    tape.backward(grads={dest: wp.array(seed, dtype=float, device=device)})
    expected_base = np.zeros((3, 4), dtype=np.float32)
    expected_base[1:, 2] = [3.0, 4.0]
    np.testing.assert_array_equal(base.grad.numpy(), expected_base)
    np.testing.assert_array_equal(dest.grad.numpy(), [1.0, 2.0, 0.0, 0.0] if flag else seed)


@pytest.mark.parametrize("flag", [True, False])
def test_2d_window(flag, device):
    """A window of a 2-D destination, in row-major order, from a 1-D source."""
    src = wp.ones(6, dtype=float, requires_grad=True, device=device)
    dest = wp.zeros((2, 3), dtype=float, requires_grad=True, device=device)
    with wp.Tape() as tape, wp.copy_zero_store(flag):
        wp.copy(dest, src, dest_offset=2, src_offset=1, count=3)  # dest flat [2, 5) <- src[1:4]
    seed = np.arange(1.0, 7.0, dtype=np.float32).reshape(2, 3)
    tape.backward(grads={dest: wp.array(seed, dtype=float, device=device)})
    np.testing.assert_array_equal(src.grad.numpy(), [0.0, 3.0, 4.0, 5.0, 0.0, 0.0])
    expected = seed.copy()
    if flag:
        expected.flat[2:5] = 0.0
    np.testing.assert_array_equal(dest.grad.numpy(), expected)


@wp.kernel
def total(a: wp.array(dtype=float), out: wp.array(dtype=float)):
    wp.atomic_add(out, 0, a[wp.tid()])


@pytest.mark.parametrize("flag", [True, False])
def test_overlapping_self_copy(flag, device):
    """y[1:4] = y[0:3] in place: zero mode gives the analytic gradient [2, 1, 1, 0] of sum(y)."""
    y = wp.array([1.0, 2.0, 3.0, 4.0], dtype=float, requires_grad=True, device=device)
    loss = wp.zeros(1, dtype=float, requires_grad=True, device=device)
    with wp.Tape() as tape, wp.copy_zero_store(flag):
        wp.copy(y, y, dest_offset=1, src_offset=0, count=3)
        wp.launch(total, dim=4, inputs=[y, loss], device=device)
    tape.backward(loss)
    np.testing.assert_array_equal(y.numpy(), [1.0, 1.0, 2.0, 3.0])
    np.testing.assert_array_equal(y.grad.numpy(), [2.0, 1.0, 1.0, 0.0] if flag else [2.0, 2.0, 2.0, 1.0])
