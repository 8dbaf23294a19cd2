"""Whether a kernel's backward reads the values it loads (`warp_zerostore.value_use`), and the check Tape's stale
read labelled ``real`` only where it does: a linear or dead read of an array changed before ``backward()`` gives
the same gradient (kept, ``real=False``, not warned); a nonlinear one, or a linear one whose stored value a
flagged kernel loads back, is real (warned, and the plain Tape's gradient is off)."""

import ast
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
    ("y[i] = x[i]\n    v[i] = y[i] * y[i]", True),  # stored, loaded back: a replay forwards it
    ("wp.atomic_add(y, 0, x[i])\n    v[i] = y[0] * y[0]", True),
    ("y[i] = helper(x[i])", True),  # anything not a Warp builtin may use it any way
    ("for j in range(wp.int32(x[i])):\n        y[j] = 1.0", True),
    # an in-place update: loaded before its store, so no load reads the stored value back (linear: not needed)
    ("x[i] = x[i] + 1.0", False),
    ("a = x[i]\n    x[i] = a - v[i]", False),
    # negative twins: a load after the store, or in a loop around it, may read the stored value back
    ("x[i] = x[i] + 1.0\n    y[i] = x[i] * x[i]", True),
    ("for j in range(3):\n        x[i] = x[i] + 1.0\n    y[i] = 0.0", True),
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
