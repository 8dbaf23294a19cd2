"""The first guarantee: where stock Warp's gradient on a plain Tape is right, every path of this package is right.

Each kernel below updates an element and then uses it, the commonest kernel shape of a simulation. Stock Warp
(the same kernel unflagged, on a plain ``wp.Tape()``) is right for all of them. Every path is compared with it
and with central differences of the forward in float64: ``zero_store=True`` on a plain, a snapshot and a check
Tape, and the unflagged kernel on the snapshot and check Tapes. The negative twins are the shapes stock gets
wrong (a load of an element, then a store to it): there the snapshot Tape is right and the plain Tape is what it
is, flagged or not, never a third value.
"""

from __future__ import annotations

import warnings

import numpy as np
import pytest
import warp

import warp_zerostore as wp
from warp_zerostore import _compat

DT = 0.25


def _update_then_use(y: wp.array(dtype=wp.float64), x: wp.array(dtype=wp.float64), out: wp.array(dtype=wp.float64)):
    i = wp.tid()
    y[i] += x[i]
    out[i] = y[i] * y[i]


def _store_sum_then_use(y: wp.array(dtype=wp.float64), x: wp.array(dtype=wp.float64), out: wp.array(dtype=wp.float64)):
    i = wp.tid()
    y[i] = y[i] + x[i]
    out[i] = y[i] * y[i]


def _atomic_then_use(y: wp.array(dtype=wp.float64), x: wp.array(dtype=wp.float64), out: wp.array(dtype=wp.float64)):
    i = wp.tid()
    wp.atomic_add(y, i, x[i])
    out[i] = y[i] * y[i]


def _subtract_then_use(y: wp.array(dtype=wp.float64), x: wp.array(dtype=wp.float64), out: wp.array(dtype=wp.float64)):
    i = wp.tid()
    y[i] -= x[i]
    out[i] = y[i] * y[i]


def _scale_then_use(y: wp.array(dtype=wp.float64), x: wp.array(dtype=wp.float64), out: wp.array(dtype=wp.float64)):
    i = wp.tid()
    y[i] = wp.float64(2.0) * y[i] + x[i]
    out[i] = y[i] * y[i]


def _static_loop_then_use(
    y: wp.array(dtype=wp.float64), x: wp.array(dtype=wp.float64), out: wp.array(dtype=wp.float64)
):
    i = wp.tid()
    for _k in range(3):
        y[i] += x[i]
    out[i] = y[i] * y[i]


def _semi_implicit_euler(y: wp.array(dtype=wp.float64), x: wp.array(dtype=wp.float64), out: wp.array(dtype=wp.float64)):
    # y holds (q, v) per body; x is a force; out is the energy-like loss of the new state
    i = wp.tid()
    y[2 * i + 1] += wp.float64(DT) * (x[i] - y[2 * i])
    y[2 * i] += wp.float64(DT) * y[2 * i + 1]
    out[i] = y[2 * i] * y[2 * i] + y[2 * i + 1] * y[2 * i]


def _update_use_then_store_another(
    y: wp.array(dtype=wp.float64), x: wp.array(dtype=wp.float64), out: wp.array(dtype=wp.float64)
):
    # a later store to another element of y: the load is followed by a store to y, not to its element
    i = wp.tid()
    y[2 * i] += x[i]
    out[i] = y[2 * i] * y[2 * i]
    y[2 * i + 1] = wp.float64(0.0)


SHAPES = {
    "+= then use": _update_then_use,
    "y = y + v then use": _store_sum_then_use,
    "atomic_add then use": _atomic_then_use,
    "-= then use": _subtract_then_use,
    "scale then use": _scale_then_use,
    "+= in a static loop then use": _static_loop_then_use,
    "semi-implicit Euler in one kernel": _semi_implicit_euler,
    "+= then use, then a store to another element": _update_use_then_store_another,
}
# y's length per thread
Y_PER_THREAD = {"semi-implicit Euler in one kernel": 2, "+= then use, then a store to another element": 2}

# Stock and flagged kernels of one function need modules of their own (a module holds one kernel per key).
STOCK_MODULE, FLAGGED_MODULE = warp.get_module("never_worse_stock"), warp.get_module("never_worse_flagged")
STOCK = {name: wp.kernel(f, module=STOCK_MODULE) for name, f in SHAPES.items()}
FLAGGED = {name: wp.kernel(f, zero_store=True, module=FLAGGED_MODULE) for name, f in SHAPES.items()}

N = 3
PATHS = ("flagged plain", "flagged snapshot", "flagged check", "stock snapshot", "stock check")


def _arrays(name: str, y0: np.ndarray, x0: np.ndarray):
    y = wp.array(y0, dtype=wp.float64, requires_grad=True)
    x = wp.array(x0, dtype=wp.float64, requires_grad=True)
    out = wp.zeros(N, dtype=wp.float64, requires_grad=True)
    return y, x, out


def _gradients(kernel, name: str, y0, x0, tape: warp.Tape):
    y, x, out = _arrays(name, y0, x0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", wp.OverwriteWarning)
        with tape:
            wp.launch(kernel, dim=N, inputs=[y, x, out])
        tape.backward(grads={out: wp.ones(N, dtype=wp.float64)})
    return x.grad.numpy().copy(), y.grad.numpy().copy(), out.numpy().copy()


def _loss(kernel, y0, x0) -> float:
    y, x, out = _arrays("", y0, x0)
    wp.launch(kernel, dim=N, inputs=[y, x, out])
    return float(out.numpy().sum())


def _central(kernel, y0, x0, eps=1e-6):
    gx, gy = np.zeros_like(x0), np.zeros_like(y0)
    for g, base, which in ((gx, x0, "x"), (gy, y0, "y")):
        for k in range(base.size):
            plus, minus = base.copy(), base.copy()
            plus[k] += eps
            minus[k] -= eps
            if which == "x":
                g[k] = (_loss(kernel, y0, plus) - _loss(kernel, y0, minus)) / (2 * eps)
            else:
                g[k] = (_loss(kernel, plus, x0) - _loss(kernel, minus, x0)) / (2 * eps)
    return gx, gy


def _tape(path: str):
    if path.endswith("snapshot"):
        return wp.Tape(snapshot=True)
    if path.endswith("check"):
        return wp.Tape(check="warn")
    return warp.Tape()


def _data(name: str):
    rng = np.random.default_rng(7)
    y0 = rng.uniform(0.5, 2.0, N * Y_PER_THREAD.get(name, 1))
    x0 = rng.uniform(0.5, 2.0, N)
    return y0, x0


@pytest.mark.parametrize("name", list(SHAPES))
def test_an_update_then_a_use_is_right_on_every_path_where_stock_is(name):
    y0, x0 = _data(name)
    fd_x, fd_y = _central(STOCK[name], y0, x0)
    stock_x, stock_y, stock_out = _gradients(STOCK[name], name, y0, x0, warp.Tape())
    np.testing.assert_allclose(stock_x, fd_x, rtol=1e-6, atol=1e-8)  # stock is right: the premise
    for path in PATHS:
        kernel = (FLAGGED if path.startswith("flagged") else STOCK)[name]
        gx, gy, out = _gradients(kernel, name, y0, x0, _tape(path))
        np.testing.assert_array_equal(out, stock_out, err_msg=f"{name}: {path} changed the forward")
        np.testing.assert_allclose(gx, fd_x, rtol=1e-6, atol=1e-8, err_msg=f"{name}: x.grad on {path}")
        np.testing.assert_allclose(gx, stock_x, rtol=1e-12, atol=1e-12, err_msg=f"{name}: x.grad on {path}")
        # y's own gradient: where stock gets it right, so must every path; where stock is wrong (Warp <= 1.12
        # accumulates the overwritten y's gradient in `y[i] = y[i] + v`), flagged paths are right and unflagged
        # ones give stock's value, never a third one
        if np.allclose(stock_y, fd_y, rtol=1e-6, atol=1e-8) or path.startswith("flagged"):
            np.testing.assert_allclose(gy, fd_y, rtol=1e-6, atol=1e-8, err_msg=f"{name}: y.grad on {path}")
        else:
            np.testing.assert_allclose(gy, stock_y, rtol=1e-12, atol=1e-12, err_msg=f"{name}: y.grad on {path}")


def test_a_check_tape_gives_a_plain_tapes_gradients_bitwise():
    for name in SHAPES:
        y0, x0 = _data(name)
        for table in (STOCK, FLAGGED):
            plain = _gradients(table[name], name, y0, x0, warp.Tape())
            checked = _gradients(table[name], name, y0, x0, wp.Tape(check="warn"))
            for a, b in zip(plain, checked):
                assert a.tobytes() == b.tobytes(), name


# -- negative twin: a load, then a store of the same element (stock is wrong on a plain Tape)


def _square_in_place(y: wp.array(dtype=wp.float64), out: wp.array(dtype=wp.float64)):
    i = wp.tid()
    y[i] = y[i] * y[i]
    out[i] = y[i] + wp.float64(1.0)


def _both(f):
    """(stock kernel, flagged kernel) of one function, each in its module."""
    return wp.kernel(f, module=STOCK_MODULE), wp.kernel(f, zero_store=True, module=FLAGGED_MODULE)


_square_in_place_stock, _square_in_place_flagged = _both(_square_in_place)


def _square_grad(kernel, tape):
    y = wp.array([3.0, 0.5], dtype=wp.float64, requires_grad=True)
    out = wp.zeros(2, dtype=wp.float64, requires_grad=True)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", wp.OverwriteWarning)
        with tape:
            wp.launch(kernel, dim=2, inputs=[y, out])
        tape.backward(grads={out: wp.ones(2, dtype=wp.float64)})
    return y.grad.numpy()


def test_a_load_then_a_store_is_exact_on_the_snapshot_tape_and_stock_like_on_a_plain_one():
    exact = 2 * np.array([3.0, 0.5])
    np.testing.assert_allclose(_square_grad(_square_in_place_flagged, wp.Tape(snapshot=True)), exact)
    # Unflagged, one replayed read serves both reads: the snapshot cannot make both right, and says so.
    with pytest.warns(
        wp.OverwriteWarning,
        match="_square_in_place.*read before and after|read before and after.*_square_in_place",
    ):
        y = wp.array([3.0, 0.5], dtype=wp.float64, requires_grad=True)
        out = wp.zeros(2, dtype=wp.float64, requires_grad=True)
        with wp.Tape(snapshot=True):
            wp.launch(_square_in_place_stock, dim=2, inputs=[y, out])
    # On a plain Tape the input value is gone: both read the output y² back, so 2y², never a third value (plus, on
    # Warp <= 1.12, stock's accumulated seed of the overwritten y: its documented difference from zeroing).
    plain = 2 * np.array([3.0, 0.5]) ** 2
    np.testing.assert_allclose(_square_grad(_square_in_place_flagged, warp.Tape()), plain)
    leak = 0.0 if _compat.STOCK_STORE_ZEROES else 1.0
    np.testing.assert_allclose(_square_grad(_square_in_place_stock, warp.Tape()), plain + leak)


# -- a value stored, read back, then stored again: only the log can give the middle read


@wp.kernel(zero_store=True)
def _store_read_store(x: wp.array(dtype=wp.float64), y: wp.array(dtype=wp.float64), out: wp.array(dtype=wp.float64)):
    i = wp.tid()
    y[i] = x[i] * x[i]
    out[i] = y[i] * x[i]
    y[i] = wp.float64(0.0)


def test_a_read_between_two_stores_reads_what_the_forward_stored_on_every_tape():
    x0 = np.array([1.5, -0.5])
    exact = 3 * x0**2
    for tape in (warp.Tape(), wp.Tape(snapshot=True), wp.Tape(check="warn")):
        x = wp.array(x0, dtype=wp.float64, requires_grad=True)
        y = wp.zeros(2, dtype=wp.float64, requires_grad=True)
        out = wp.zeros(2, dtype=wp.float64, requires_grad=True)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", wp.OverwriteWarning)
            with tape:
                wp.launch(_store_read_store, dim=2, inputs=[x, y, out])
            tape.backward(grads={out: wp.ones(2, dtype=wp.float64)})
        np.testing.assert_allclose(x.grad.numpy(), exact, err_msg=type(tape).__name__)


# -- across launches: a later launch overwrites what the flagged kernel's stored value was computed from


def _sum_then_square_body(
    z: wp.array(dtype=wp.float64),
    x: wp.array(dtype=wp.float64),
    y: wp.array(dtype=wp.float64),
    out: wp.array(dtype=wp.float64),
):
    i = wp.tid()
    y[i] = z[i] + x[i]
    out[i] = y[i] * y[i]


_sum_then_square_stock, _sum_then_square = _both(_sum_then_square_body)


@wp.kernel
def _clear(z: wp.array(dtype=wp.float64)):
    z[wp.tid()] = wp.float64(0.0)


@pytest.mark.parametrize("kernel", [_sum_then_square, _sum_then_square_stock], ids=["flagged", "stock"])
def test_a_later_launch_overwriting_an_input_does_not_change_a_flagged_kernels_gradient(kernel):
    z = wp.array([1.0, 2.0], dtype=wp.float64, requires_grad=True)
    x = wp.array([3.0, 0.5], dtype=wp.float64, requires_grad=True)
    y = wp.zeros(2, dtype=wp.float64, requires_grad=True)
    out = wp.zeros(2, dtype=wp.float64, requires_grad=True)
    tape = warp.Tape()
    with tape:
        wp.launch(kernel, dim=2, inputs=[z, x, y, out])
        wp.launch(_clear, dim=2, inputs=[z])
    tape.backward(grads={out: wp.ones(2, dtype=wp.float64)})
    np.testing.assert_allclose(x.grad.numpy(), 2 * (np.array([1.0, 2.0]) + np.array([3.0, 0.5])))


# -- one array under two parameters: written through one, read through the other


def _write_a_read_b_body(
    x: wp.array(dtype=wp.float64),
    a: wp.array(dtype=wp.float64),
    b: wp.array(dtype=wp.float64),
    out: wp.array(dtype=wp.float64),
):
    i = wp.tid()
    a[i] = wp.float64(2.0) * x[i]
    out[i] = b[i] * b[i]


_write_a_read_b, _write_a_read_b_flagged = _both(_write_a_read_b_body)


def _aliased_grad(kernel, tape, same: bool):
    x = wp.array([3.0, 0.5], dtype=wp.float64, requires_grad=True)
    a = wp.zeros(2, dtype=wp.float64, requires_grad=True)
    b = a if same else wp.array([1.0, 1.0], dtype=wp.float64, requires_grad=True)
    out = wp.zeros(2, dtype=wp.float64, requires_grad=True)
    with tape:
        wp.launch(kernel, dim=2, inputs=[x, a, b, out])
    tape.backward(grads={out: wp.ones(2, dtype=wp.float64)})
    return x.grad.numpy()


@pytest.mark.parametrize("kernel", [_write_a_read_b, _write_a_read_b_flagged], ids=["stock", "flagged"])
def test_one_array_under_two_parameters_is_exact_on_the_snapshot_tape(kernel):
    # The read twin of such a launch shares its marks between the labels: the read through b comes after the
    # store through a, so the snapshot restores the value written (it restored the input before: 0, silently).
    exact = 8 * np.array([3.0, 0.5])  # out = (2x)^2
    np.testing.assert_allclose(_aliased_grad(kernel, warp.Tape(), same=True), exact)
    with warnings.catch_warnings():
        warnings.simplefilter("error", wp.OverwriteWarning)
        np.testing.assert_allclose(_aliased_grad(kernel, wp.Tape(snapshot=True), same=True), exact)
        # twin: two arrays
        np.testing.assert_allclose(_aliased_grad(kernel, wp.Tape(snapshot=True), same=False), 0.0)


# -- an unflagged helper's store, which Warp's backward re-runs into memory: right or warned on the snapshot Tape


@wp.func
def _put_square(y: wp.array(dtype=wp.float64), i: int, v: wp.float64):
    y[i] = v * v


@wp.func
def _get(y: wp.array(dtype=wp.float64), i: int):
    return y[i]


def _helper_update(y: wp.array(dtype=wp.float64), out: wp.array(dtype=wp.float64)):
    i = wp.tid()
    _put_square(y, i, y[i])
    out[i] = y[i] + wp.float64(1.0)


_helper_update_stock, _helper_update_flagged = _both(_helper_update)


@wp.kernel
def _helper_read_stock(y: wp.array(dtype=wp.float64), out: wp.array(dtype=wp.float64)):
    i = wp.tid()
    out[i] = _get(y, i) * _get(y, i)
    y[i] = wp.float64(1.0)


def test_an_unflagged_helper_store_on_the_snapshot_tape_is_named_and_a_flagged_one_is_exact():
    y = wp.array([3.0, 0.5], dtype=wp.float64, requires_grad=True)
    out = wp.zeros(2, dtype=wp.float64, requires_grad=True)
    with pytest.warns(wp.OverwriteWarning, match="_helper_update.*@wp.func helper stores into the array"):
        with wp.Tape(snapshot=True):
            wp.launch(_helper_update_stock, dim=2, inputs=[y, out])
    with warnings.catch_warnings():
        warnings.simplefilter("error", wp.OverwriteWarning)
        np.testing.assert_allclose(
            _square_grad(_helper_update_flagged, wp.Tape(snapshot=True)), 2 * np.array([3.0, 0.5])
        )
        # negative twin: a helper that only reads is not named
        tape = wp.Tape(snapshot=True)
        y = wp.array([3.0, 0.5], dtype=wp.float64, requires_grad=True)
        out = wp.zeros(2, dtype=wp.float64, requires_grad=True)
        with tape:
            wp.launch(_helper_read_stock, dim=2, inputs=[y, out])
    assert not [h for h in tape.hazards if h.cause == "helper store"]


# -- a load between two helper stores (found by the fuzzer's worse-than-stock verdict)


@wp.func
def _put(y: wp.array(dtype=wp.float64), i: int, v: wp.float64):
    y[i] = v


def _between_helper_stores(
    x: wp.array(dtype=wp.float64), y: wp.array(dtype=wp.float64), out: wp.array(dtype=wp.float64)
):
    i = wp.tid()
    _put(y, i, x[i])
    out[i] = y[i] * y[i]
    _put(y, i, wp.float64(0.0))


_between_stock, _between_flagged = _both(_between_helper_stores)


@pytest.mark.parametrize("tape", ["plain", "snapshot", "check"])
def test_a_load_between_two_helper_stores_reads_what_the_first_stored(tape):
    x0 = np.array([1.5, -0.5])
    got = {}
    for name, kernel in (("stock", _between_stock), ("flagged", _between_flagged)):
        x = wp.array(x0, dtype=wp.float64, requires_grad=True)
        y = wp.zeros(2, dtype=wp.float64, requires_grad=True)
        out = wp.zeros(2, dtype=wp.float64, requires_grad=True)
        t = warp.Tape() if name == "stock" else _tape(f"flagged {tape}")
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", wp.OverwriteWarning)
            with t:
                wp.launch(kernel, dim=2, inputs=[x, y, out])
            t.backward(grads={out: wp.ones(2, dtype=wp.float64)})
        got[name] = x.grad.numpy().copy()
    np.testing.assert_allclose(got["stock"], 2 * x0)  # stock re-runs the helper's store into memory: right
    np.testing.assert_allclose(got["flagged"], 2 * x0)  # was [0, 0]
