"""Whether a kernel's backward reads the values it loads (`warp_zerostore.value_use`), and the check Tape's stale
read labelled ``real`` only where it does: a linear or dead read of an array changed before ``backward()`` gives
the same gradient (kept, ``real=False``, not warned); a nonlinear one, or a linear one whose stored value a
flagged kernel loads back, is real (warned, and the plain Tape's gradient is off)."""

import ast
import contextlib
import warnings

import numpy as np
import pytest
from helpers import kernels_value_use as k

import warp_zerostore as wp
from warp_zerostore.access import argument_access
from warp_zerostore.value_use import ValueUses

# (source of a function whose only load of x is marked by `x[i]`, the backward reads that value)
CASES = [
    ("y[i] = x[i] + v[i]", False),
    ("y[i] = -x[i] - 2.0", False),
    ("y[i] = 2.0 * x[i] / 4.0", False),
    ("y[i] = wp.float64(0.5) * x[i]", False),
    ("y[i] = wp.vec3(x[i], 0.0, 1.0)[0]", False),
    ("y[i] = wp.select(c, x[i], 0.0)", False),
    ("wp.atomic_add(y, 0, x[i] * 3.0)", False),
    ("a = x[i]\n    b = a + 1.0\n    y[i] = b", False),
    ("dead = wp.sin(x[i])", False),
    ("y[i] += x[i]", False),
    # an in-place linear update reads no value of the array it updates, however it is spelled
    ("x[i] = x[i] - 10.0 * v[i] * v[i]", False),
    ("x[i] = x[i] + v[i]", False),
    ("x[i] = x[i] - v[i]", False),
    ("x[i] = 0.5 * x[i] - v[i]", False),
    ("x[i] = -x[i] / 2.0 + v[i]", False),
    ("a = x[i] + v[i]\n    x[i] = a", False),
    ("wp.atomic_add(x, i, v[i])\n    y[i] = 2.0 * x[i]", False),
    ("y[i] = x[i] * x[i]", True),
    ("y[i] = x[i] * v[i]", True),
    ("y[i] = 2.0 / x[i]", True),
    ("y[i] = wp.sin(x[i])", True),
    ("a = x[i]\n    y[i] = a * a", True),
    ("a = x[i] + 1.0\n    b = a\n    y[i] = wp.exp(b)", True),
    ("if x[i] > 0.0:\n        y[i] = 1.0", True),
    ("y[wp.int32(x[i])] = 1.0", True),
    ("y[i] = wp.select(x[i] > 0.0, 1.0, 0.0)", True),
    ("y[i] *= x[i]", True),
    ("x[i] = x[i] * v[i]", True),  # the product's adjoint reads x
    ("x[i] = x[i] + v[i]\n    y[i] = x[i] * x[i]", True),  # updated, then loaded back and squared
    ("x[i] = x[i] + v[i]\n    y[i] = wp.sin(x[0])", True),
    ("wp.atomic_add(x, i, v[i])\n    y[i] = x[i] * x[i]", True),
    ("y[i] = x[i]\n    v[i] = y[i] * y[i]", True),  # stored, loaded back: a replay forwards it
    ("wp.atomic_add(y, 0, x[i])\n    v[i] = y[0] * y[0]", True),
    ("y[i] = helper(x[i])", True),  # anything not a Warp builtin may use it any way
    ("for j in range(wp.int32(x[i])):\n        y[j] = 1.0", True),
    # an in-place update: loaded before its store, so no load reads the stored value back (linear: not needed)
    ("x[i] = x[i] + 1.0", False),
    ("a = x[i]\n    x[i] = a - v[i]", False),
    # negative twins: a load after the store, or in a loop around it, may read the stored value back
    ("x[i] = x[i] + 1.0\n    y[i] = x[i] * x[i]", True),
    # in a loop, the stored value comes back through the load, whose use is linear too: not needed
    ("for j in range(3):\n        x[i] = x[i] + 1.0\n    y[i] = 0.0", False),
    ("for j in range(3):\n        x[i] = x[i] + 1.0\n        y[i] = x[i] * x[i]", True),
]


def _is_builtin(call):
    func = call.func
    return isinstance(func, ast.Attribute) and func.attr != "helper"


@pytest.mark.parametrize("body, needed", CASES, ids=[c[0].split("\n")[0] for c in CASES])
def test_whether_the_backward_reads_a_loaded_value(body, needed):
    source = "def f(x, v, y, c):\n    i = wp.tid()\n    " + body + "\n"
    tree = ast.parse(source)
    uses = ValueUses(tree, _is_builtin)
    loads = [
        n
        for n in ast.walk(tree)
        if isinstance(n, ast.Subscript)
        and isinstance(n.value, ast.Name)
        and n.value.id == "x"
        and isinstance(n.ctx, ast.Load)
    ]
    assert loads and any(uses.is_needed(n) for n in loads) is needed


def test_a_source_without_a_function_needs_every_value():  # nothing to read its parameters from
    tree = ast.parse("y[i] = x[i]")
    load = next(n for n in ast.walk(tree) if isinstance(n, ast.Subscript) and n.value.id == "x")
    assert ValueUses(tree).is_needed(load)


def test_argument_access_says_which_values_are_read():
    assert not argument_access(k.linear_reader)["x"].value_read
    assert not argument_access(k.linear_reader)["v"].value_read
    assert argument_access(k.nonlinear_reader)["x"].value_read
    assert argument_access(k.forwarded_reader)["x"].value_read


def _run(kernel, check, change=True):
    """x.grad (cotangent 1 on every y) with x overwritten after the reader, and the hazards, warnings."""
    x = wp.array(np.array([1.0, 2.0, 3.0]), dtype=wp.float64, requires_grad=True)
    v = wp.array(np.array([0.5, -1.0, 2.0]), dtype=wp.float64, requires_grad=True)
    y = wp.zeros(3, dtype=wp.float64, requires_grad=True)
    tape = wp.Tape(check=check)
    with warnings.catch_warnings(record=True) as said:
        warnings.simplefilter("always")
        with tape:
            wp.launch(kernel, dim=3, inputs=[x, v, y])
            if change:
                wp.launch(k.overwrite, dim=3, inputs=[x])
        tape.backward(grads={y: wp.ones(3, dtype=wp.float64)})
    stale = [h for h in tape.hazards if h.kind == "stale read"]
    warned = [w for w in said if issubclass(w.category, wp.OverwriteWarning)]
    return x.grad.numpy(), stale, warned


def test_a_linear_stale_read_is_kept_not_real_and_the_gradient_is_right():
    grad, stale, warned = _run(k.linear_reader, "warn")
    assert grad.tolist() == [2.0, 2.0, 2.0]  # d(2x - v + 1)/dx, whatever x holds at backward
    assert len(stale) == 1 and not stale[0].real and warned == []


def test_a_nonlinear_stale_read_is_real_and_the_gradient_off():  # negative twin
    grad, stale, warned = _run(k.nonlinear_reader, "warn")
    right = 2 * (np.array([1.0, 2.0, 3.0]) + np.array([0.5, -1.0, 2.0]))
    assert not np.allclose(grad, right)  # the backward read x = 5: stock behaviour, reported
    assert len(stale) == 1 and stale[0].real and len(warned) == 1
    assert np.allclose(_run(k.nonlinear_reader, "warn", change=False)[0], right)


def test_a_linear_read_a_flagged_replay_forwards_is_real():
    grad, stale, warned = _run(k.forwarded_reader, "warn")
    right = 2 * (np.array([1.0, 2.0, 3.0]) + np.array([0.5, -1.0, 2.0]))
    assert not np.allclose(grad, right)
    assert stale and all(h.real for h in stale) and warned


def test_check_error_does_not_raise_for_a_linear_stale_read():
    grad, stale, _ = _run(k.linear_reader, "error")
    assert grad.tolist() == [2.0, 2.0, 2.0] and [h.real for h in stale] == [False]
    with pytest.raises(wp.OverwriteError, match="stale read: kernel 'overwrite'.*nonlinear_reader"):
        _run(k.nonlinear_reader, "error")


@pytest.mark.parametrize("kernel", [k.linear_reader, k.nonlinear_reader])
def test_a_mutation_after_record_is_real_whatever_the_reader_does_with_the_values(kernel):
    """Unlike a stale read: a change outside recorded launches may also be a write over what a recorded launch
    wrote, whose gradient then leaks, and the Tape does not follow that on its own (labelling linear readers'
    mutations safe made the program fuzzer find check misses)."""
    x = wp.array(np.array([1.0, 2.0, 3.0]), dtype=wp.float64, requires_grad=True)
    v = wp.array(np.array([0.5, -1.0, 2.0]), dtype=wp.float64, requires_grad=True)
    y = wp.zeros(3, dtype=wp.float64, requires_grad=True)
    tape = wp.Tape(check="warn")
    with warnings.catch_warnings(record=True) as said:
        warnings.simplefilter("always")
        with tape:
            wp.launch(kernel, dim=3, inputs=[x, v, y])
        x.fill_(5.0)  # after record, before backward()
        tape.backward(grads={y: wp.ones(3, dtype=wp.float64)})
    assert [h.real for h in tape.hazards if h.kind == "mutated after record"] == [True]
    assert [w for w in said if issubclass(w.category, wp.OverwriteWarning)]
    tape = wp.Tape(snapshot=True)  # a snapshot Tape without checks refuses it by name
    with tape:
        wp.launch(kernel, dim=3, inputs=[x, v, y])
    x.fill_(6.0)
    with pytest.raises(wp.OverwriteError, match="mutated after record"):
        tape.backward(grads={y: wp.ones(3, dtype=wp.float64)})


def _force_rollout(force, x0: np.ndarray, tape=None, steps: int = 3):
    """``steps`` steps of a simulator that resets a force buffer, adds ``force`` to it in place and integrates;
    returns the loss, the final state and the states (one per step), all float64."""
    x = wp.array(x0, dtype=wp.float64, requires_grad=True)
    v = wp.zeros(len(x0), dtype=wp.float64, requires_grad=True)
    f = wp.zeros(len(x0), dtype=wp.float64, requires_grad=True)
    loss = wp.zeros(1, dtype=wp.float64, requires_grad=True)
    first = x
    with tape if tape is not None else contextlib.nullcontext():
        for step in range(steps):
            wp.launch(k.gravity, dim=len(x0), inputs=[f, float(step + 1)])
            wp.launch(force, dim=len(x0), inputs=[x, f])
            x_next, v_next = wp.empty_like(x), wp.empty_like(v)
            wp.launch(k.integrate, dim=len(x0), inputs=[x, v, f], outputs=[x_next, v_next])
            x, v = x_next, v_next
        wp.launch(k.square_sum, dim=len(x0), inputs=[x, loss])
    return loss, first


def _force_gradient(force, x0: np.ndarray, tape):
    with warnings.catch_warnings(record=True) as said:
        warnings.simplefilter("always")
        loss, first = _force_rollout(force, x0, tape)
        tape.backward(loss)
    warned = [w for w in said if issubclass(w.category, wp.OverwriteWarning)]
    return first.grad.numpy(), warned


def _central_differences(force, x0: np.ndarray, eps: float = 1e-6) -> np.ndarray:
    out = np.zeros_like(x0)
    for j in range(len(x0)):
        up, down = x0.copy(), x0.copy()
        up[j] += eps
        down[j] -= eps
        out[j] = (_force_rollout(force, up)[0].numpy()[0] - _force_rollout(force, down)[0].numpy()[0]) / (2 * eps)
    return out


X0 = np.array([0.2, 0.55, 0.9])


def test_an_in_place_force_sum_is_no_real_stale_read_and_every_tape_agrees():
    # f[i] = f[i] - 10.0 * c * c: the backward never reads f's value, so the stale reads the reset makes are kept
    # with real=False, and the plain Tape, the snapshot Tape and central differences agree
    tape = wp.Tape(check="error")
    checked, warned = _force_gradient(k.contact_force, X0, tape)
    stale = [h for h in tape.hazards if h.kind == "stale read" and h.reader.kernel == "contact_force"]
    assert stale and not any(h.real for h in stale) and warned == []
    plain, _ = _force_gradient(k.contact_force, X0, wp.Tape())
    snapshot, _ = _force_gradient(k.contact_force, X0, wp.Tape(snapshot=True))
    assert plain.tolist() == snapshot.tolist() == checked.tolist()
    np.testing.assert_allclose(plain, _central_differences(k.contact_force, X0), rtol=1e-6)


def test_an_in_place_product_is_a_real_stale_read_and_the_plain_tape_is_off():  # negative twin
    tape = wp.Tape(check="warn")
    _, warned = _force_gradient(k.contact_scale, X0, tape)
    stale = [h for h in tape.hazards if h.kind == "stale read" and h.reader.kernel == "contact_scale"]
    assert stale and all(h.real for h in stale) and warned
    reference = _central_differences(k.contact_scale, X0)
    plain, _ = _force_gradient(k.contact_scale, X0, wp.Tape())
    snapshot, _ = _force_gradient(k.contact_scale, X0, wp.Tape(snapshot=True))
    assert not np.allclose(plain, reference, rtol=1e-6)
    np.testing.assert_allclose(snapshot, reference, rtol=1e-6)
