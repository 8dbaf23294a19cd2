"""Where no gradient flows, nothing is real; where one does, it stays real.

* An overwrite of an array without a gradient (an integer or bool dtype, or ``requires_grad=False``) has nothing to
  leak: never real (its negative twin: the same overwrite of a float array with a gradient stays real).
* A stale read of an integer array used as an index stays real: a gather through ``idx`` after ``idx`` is
  overwritten gives ``[0, 4, 12, 8]`` on a plain Tape where ``[2, 8, 6, 0]`` is right (the snapshot Tape's answer).
* A stale read whose value only the adjoints of arrays without a gradient read is harmless, a launch-time fact
  (``omega_hat * inv_k_sq`` with ``inv_k_sq`` without ``.grad``: ``value_use.ValueUses.readers`` says which
  roots' adjoints read a value, the Tape asks the launch's arrays); its negative twin, the same product with an
  array that has a gradient, stays real.
"""

import ast
import warnings

import numpy as np
import pytest

import warp_zerostore as wp
from warp_zerostore.tape.tape import OVERWRITE, STALE_READ
from warp_zerostore.value_use import ValueUses


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


# -- a read whose adjoint can only reach arrays without a gradient is harmless (a launch-time fact)

READERS = [
    ("y[i] = x[i] * v[i]", {"v"}),
    ("y[i] = x[i] * x[i]", {"x"}),
    ("y[i] = wp.sin(x[i])", {"x"}),
    ("y[i] = x[i] * k", {"k"}),  # a scalar parameter: no gradient at any launch
    ("t = x[i]\n    y[i] = t * v[i] + 1.0", {"v"}),
    ("t = 2.0 * v[i]\n    y[i] = x[i] * t", {"v"}),
    ("y[i] = x[i] / v[i]", {"v"}),
    ("y[i] = v[i] / x[i]", {"v", "x"}),
    ("y[i] = x[i] * s.q[i]", {"s.q"}),
    ("y[v[i]] = x[i] * 2.0\n    y[i] = v[i] * w[i]", None),  # v read as an index too: any gradient
    ("if x[i] > 0.0:\n        y[i] = 1.0", None),
    ("y[i] = helper(x[i])", None),
]


def _builtin(call):
    func = call.func
    return isinstance(func, ast.Attribute) and func.attr != "helper"


@pytest.mark.parametrize("body, readers", READERS, ids=[c[0].split("\n")[0] for c in READERS])
def test_whose_adjoints_read_a_loaded_value(body, readers):
    tree = ast.parse("def f(x, v, w, y, k, s):\n    i = wp.tid()\n    " + body + "\n")
    uses = ValueUses(tree, _builtin)
    loaded = "v" if body.startswith("y[v[i]]") else "x"
    loads = [n for n in ast.walk(tree) if isinstance(n, ast.Subscript) and getattr(n.value, "id", "") == loaded]
    found = [uses.readers(n) for n in loads if uses.is_needed(n)]
    merged = None if None in found else set().union(*found)
    assert merged == readers


@wp.kernel
def product_with(omega: wp.array(dtype=float), inv_k: wp.array(dtype=float), out: wp.array(dtype=float)):
    i = wp.tid()
    out[i] = omega[i] * inv_k[i]


@wp.kernel
def scratch_reuse(omega: wp.array(dtype=float)):
    i = wp.tid()
    omega[i] = 3.0 * omega[i] + 1.0


def reuse(tape, inv_k_grad: bool):
    """out = omega * inv_k, then ``omega`` reused as scratch (changed in place), loss = sum out: the stale read of
    ``omega`` reaches only ``inv_k``'s gradient."""
    omega = wp.array([1.0, 2.0, 3.0], dtype=float, requires_grad=True)
    inv_k = wp.array([0.5, 0.25, 0.125], dtype=float, requires_grad=inv_k_grad)
    out = wp.zeros(3, dtype=float, requires_grad=True)
    loss = wp.zeros(1, dtype=float, requires_grad=True)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", wp.OverwriteWarning)
        with tape:
            wp.launch(product_with, dim=3, inputs=[omega, inv_k, out])
            wp.launch(scratch_reuse, dim=3, inputs=[omega])
            wp.launch(total, dim=3, inputs=[out, loss])
        tape.backward(loss)
    stale = [(h.reader.argument, h.real) for h in getattr(tape, "hazards", []) if h.kind == STALE_READ]
    return omega.grad.numpy().tolist(), (inv_k.grad.numpy().tolist() if inv_k_grad else None), stale


def test_a_product_with_an_array_without_gradient_is_a_harmless_stale_read():
    grads = reuse(wp.Tape(), False)[:2]
    assert reuse(wp.Tape(snapshot=True), False)[:2] == grads  # every Tape gives the same gradient
    assert ("omega", False) in reuse(wp.Tape(check="warn"), False)[2]


def test_a_product_with_an_array_with_gradient_stays_real():  # the negative twin
    plain, snapshot = reuse(wp.Tape(), True), reuse(wp.Tape(snapshot=True), True)
    assert plain[1] != snapshot[1] and snapshot[1] == [1.0, 2.0, 3.0]  # d loss / d inv_k = omega as read
    assert ("omega", True) in reuse(wp.Tape(check="warn"), True)[2]
