"""The measuring Tape (``Tape(measure=True)``, ``check --measure``): each value hazard (stale read, mutation after
record) with its effect on this run's gradients, measured by extra backward passes with the values its reader read
put back; a hazard with no effect on this run is a note, not real. The user's gradients and arrays stay the plain
Tape's, bitwise. Negative twins throughout: a hazard with an effect beside one without, an effect the references
(NumPy, the snapshot Tape) confirm, kinds that putting values back cannot measure said so by name."""

import os
import pathlib
import subprocess
import sys
import textwrap
import warnings

import numpy as np
import pytest
from helpers import kernels_measure as k

import warp_zerostore as wp
from warp_zerostore.tape import measure

X = np.array([1.0, 2.0, 3.0])


def _stale(reader, tape, bumped: bool = True):
    """``reader`` records on ``x``, then ``bump`` changes ``x`` in place (a stale read); backward with ones."""
    x = wp.array(X, dtype=float, requires_grad=True)
    y = wp.zeros(len(X), dtype=float, requires_grad=True)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        with tape:
            wp.launch(reader, dim=len(X), inputs=[x, y])
            if bumped:
                wp.launch(k.bump, dim=len(X), inputs=[x])
        tape.backward(grads={y: wp.ones(len(X), dtype=float)})
    warned = [str(w.message) for w in caught if issubclass(w.category, wp.OverwriteWarning)]
    return x.grad.numpy(), x.numpy(), tape, warned


def _reading(tape, kernel):
    return [h for h in tape.hazards if h.kind == "stale read" and h.reader.kernel == kernel.key]


def test_a_stale_read_with_an_effect_is_real_with_its_figures():
    grad, _, tape, warned = _stale(k.square, wp.Tape(measure=True))
    np.testing.assert_array_equal(grad, 2.0 * (X + 1.0))  # the plain Tape's: the bumped values read
    (hazard,) = _reading(tape, k.square)
    assert hazard.real and hazard.measured.status == measure.EFFECT
    ((name, absolute, relative),) = hazard.measured.changes
    right = 2.0 * X  # d(x**2)/dx at the values read, in NumPy
    assert name == "x.grad"
    assert absolute == pytest.approx(np.max(np.abs(grad - right)))
    assert relative == pytest.approx(np.max(np.abs(grad - right)) / np.max(np.abs(right)))
    np.testing.assert_allclose(tape.measured_gradients[("read", k.square.key, hazard.reader.location)]["x.grad"], right)
    assert len(warned) == 1 and "Measured: putting back the values it read changes the gradients x.grad" in warned[0]


def test_negative_twin_a_stale_read_with_no_effect_on_this_run_is_a_note():
    grad, _, tape, warned = _stale(k.capped_double, wp.Tape(measure=True))
    np.testing.assert_array_equal(grad, 2.0)  # right: the branch of wp.min does not flip
    (hazard,) = _reading(tape, k.capped_double)
    assert not hazard.real and hazard.measured.status == measure.NO_EFFECT
    assert "no effect on this run's gradients" in hazard.message() and "other data may not" in hazard.message()
    assert warned == []  # a note: listed, not warned
    # the checking Tape alone calls it real (it cannot know the data): the measurement is what changes the label
    _, _, checking, _ = _stale(k.capped_double, wp.Tape(check="warn"))
    assert _reading(checking, k.capped_double)[0].real


def test_each_reader_is_measured_alone_within_the_budget():
    x = wp.array(X, dtype=float, requires_grad=True)
    y, z = (wp.zeros(len(X), dtype=float, requires_grad=True) for _ in range(2))
    tape = wp.Tape(measure=True)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", wp.OverwriteWarning)
        with tape:
            wp.launch(k.square, dim=len(X), inputs=[x, y])
            wp.launch(k.capped_double, dim=len(X), inputs=[x, z])
            wp.launch(k.bump, dim=len(X), inputs=[x])  # one writer, two readers: each its own effect
        tape.backward(grads={y: wp.ones(len(X), dtype=float), z: wp.ones(len(X), dtype=float)})
    (squared,), (capped,) = _reading(tape, k.square), _reading(tape, k.capped_double)
    assert squared.measured.status == measure.EFFECT and capped.measured.status == measure.NO_EFFECT
    groups = {("read", h.reader.kernel, h.reader.location) for h in (squared, capped)}
    assert set(tape.measured_gradients) == {"plain", "joint"} | groups  # one pass each, and one together


def test_above_the_budget_the_effect_is_joint():
    readers = measure.PASSES  # one reader site more than the passes attribute one by one
    x = wp.array(X, dtype=float, requires_grad=True)
    outputs = [wp.zeros(len(X), dtype=float, requires_grad=True) for _ in range(readers)]
    tape = wp.Tape(measure=True)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", wp.OverwriteWarning)
        with tape:
            for y in outputs:  # one launch site per reader: a line each
                wp.launch(k.square, dim=len(X), inputs=[x, y])
            wp.launch(k.bump, dim=len(X), inputs=[x])
        tape.backward(grads={y: wp.ones(len(X), dtype=float) for y in outputs})
    measured = [h for h in tape.hazards if h.measured is not None and h.kind == "stale read" and h.reader]
    assert len({h.reader.location for h in measured}) == 1  # a loop: one reader site, measured alone
    assert measured[0].measured.status == measure.EFFECT
    many = wp.Tape(measure=True)
    x = wp.array(X, dtype=float, requires_grad=True)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", wp.OverwriteWarning)
        with many:
            wp.launch(k.square, dim=len(X), inputs=[x, outputs[0]])
            wp.launch(k.square, dim=len(X), inputs=[x, outputs[1]])
            wp.launch(k.square, dim=len(X), inputs=[x, outputs[2]])
            wp.launch(k.square, dim=len(X), inputs=[x, outputs[3]])
            wp.launch(k.square, dim=len(X), inputs=[x, outputs[4]])
            wp.launch(k.square, dim=len(X), inputs=[x, outputs[5]])
            wp.launch(k.square, dim=len(X), inputs=[x, outputs[6]])
            wp.launch(k.square, dim=len(X), inputs=[x, outputs[7]])
            wp.launch(k.bump, dim=len(X), inputs=[x])
        many.backward(grads={y: wp.ones(len(X), dtype=float) for y in outputs})
    joint = [h for h in many.hazards if h.measured is not None and h.kind == "stale read"]
    assert len(joint) == 8 and all(h.measured.status == measure.JOINT and h.real for h in joint)
    assert set(many.measured_gradients) == {"plain", "joint"}  # one extra pass, not nine
    assert "more than the 7 a measuring Tape attributes one by one" in joint[0].message()


def test_the_users_gradients_and_arrays_are_the_plain_tapes_bitwise():
    def euler(tape, steps=4):
        x = wp.array(np.linspace(-1.0, 1.0, 6), dtype=float, requires_grad=True)
        v = wp.zeros(6, dtype=float, requires_grad=True)
        loss = wp.zeros(1, dtype=float, requires_grad=True)
        x.grad.fill_(0.25)  # a gradient from before: backward accumulates into it
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", wp.OverwriteWarning)
            with tape:
                for _ in range(steps):
                    wp.launch(k.velocity, dim=6, inputs=[x, v])
                    wp.launch(k.position, dim=6, inputs=[x, v])
                wp.launch(k.energy, dim=6, inputs=[x, loss])
            tape.backward(loss)
        return {"x.grad": x.grad.numpy(), "v.grad": v.grad.numpy(), "x": x.numpy(), "v": v.numpy()}

    plain, checked, snapshot = euler(wp.Tape()), euler(wp.Tape(check="warn")), euler(wp.Tape(snapshot=True))
    measuring = wp.Tape(measure=True)
    measured = euler(measuring)
    for name in plain:
        np.testing.assert_array_equal(measured[name], plain[name])
        np.testing.assert_array_equal(checked[name], plain[name])
    # the pass with every reader's values put back is the snapshot Tape's backward
    (extra,) = [v for name, v in measuring.measured_gradients.items() if name != "plain"]
    np.testing.assert_allclose(extra["x.grad"], snapshot["x.grad"], rtol=1e-6)  # the 0.25 before, both
    stale = [h for h in measuring.hazards if h.measured is not None and h.kind == "stale read"]
    assert stale and all(h.measured.status == measure.EFFECT for h in stale)
    ((_, absolute, _), *_) = stale[0].measured.changes
    assert absolute == pytest.approx(np.max(np.abs(plain["x.grad"] - snapshot["x.grad"])), rel=1e-5)


def test_a_mutation_after_record_is_measured_and_one_through_numpy_without_effect_is_a_note():
    for reader, change, status in (
        (
            k.square,
            lambda x: wp.launch(k.bump, dim=len(X), inputs=[wp.array(ptr=x.ptr, shape=x.shape, dtype=float)]),
            measure.EFFECT,
        ),
        (k.capped_double, lambda x: x.numpy().__setitem__(0, 5.0), measure.NO_EFFECT),
    ):
        x = wp.array(X, dtype=float, requires_grad=True)
        y = wp.zeros(len(X), dtype=float, requires_grad=True)
        tape = wp.Tape(measure=True)
        with tape:
            wp.launch(reader, dim=len(X), inputs=[x, y])
        change(x)
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            tape.backward(grads={y: wp.ones(len(X), dtype=float)})
        (hazard,) = [h for h in tape.hazards if h.kind == "mutated after record"]
        assert hazard.measured.status == status and hazard.real is (status == measure.EFFECT)
        assert len(caught) == int(hazard.real)


def test_a_declared_change_is_no_hazard_and_not_measured():
    x = wp.array(X, dtype=float, requires_grad=True)
    y = wp.zeros(len(X), dtype=float, requires_grad=True)
    tape = wp.Tape(measure=True)
    with tape:
        wp.launch(k.square, dim=len(X), inputs=[x, y])
    x.assign(X + 1.0)
    with wp.read_at_backward(x), warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        tape.backward(grads={y: wp.ones(len(X), dtype=float)})
    assert tape.hazards == [] and caught == [] and set(tape.measured_gradients) == set()
    np.testing.assert_array_equal(x.grad.numpy(), 2.0 * (X + 1.0))


def test_kinds_putting_values_back_cannot_measure_are_said_so():
    x_a, x_b = (wp.array(X, dtype=float, requires_grad=True) for _ in range(2))
    y = wp.zeros(len(X), dtype=float, requires_grad=True)
    tape = wp.Tape(measure=True)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        with tape:
            wp.launch(k.square, dim=len(X), inputs=[x_a, y])
            wp.launch(k.overwrite_accumulating, dim=len(X), inputs=[x_b, y])  # its store adjoint does not zero
        tape.backward(grads={y: wp.ones(len(X), dtype=float)})
    (overwrite,) = [h for h in tape.hazards if h.kind == "overwrite"]
    assert overwrite.real and overwrite.measured.status == measure.NOT_MEASURED
    assert "Not measured: an overwrite's gradient leak" in overwrite.message()
    assert [str(w.message) for w in caught] == [overwrite.message()]  # warned once, at backward()


def test_a_recorded_callback_is_never_run_twice_and_says_why_nothing_is_measured():
    calls = []
    x = wp.array(X, dtype=float, requires_grad=True)
    y = wp.zeros(len(X), dtype=float, requires_grad=True)
    tape = wp.Tape(measure=True)
    with warnings.catch_warnings(record=True):
        warnings.simplefilter("always")
        with tape:
            wp.launch(k.square, dim=len(X), inputs=[x, y])
            tape.record_func(lambda: calls.append(1), arrays=[x])
            wp.launch(k.bump, dim=len(X), inputs=[x])
        tape.backward(grads={y: wp.ones(len(X), dtype=float)})
    assert calls == [1]
    (hazard,) = _reading(tape, k.square)
    assert hazard.real and hazard.measured.status == measure.NOT_MEASURED
    assert "callback recorded with record_func" in hazard.message() and "run again" in hazard.message()


def test_above_the_memory_cap_nothing_more_is_kept_and_that_is_said(monkeypatch):
    monkeypatch.setattr(measure, "MEMORY_CAP", 4)  # bytes: not one array's copy
    grad, _, tape, _ = _stale(k.square, wp.Tape(measure=True))
    np.testing.assert_array_equal(grad, 2.0 * (X + 1.0))
    (hazard,) = _reading(tape, k.square)
    assert hazard.real and hazard.measured.status == measure.NOT_MEASURED
    assert "memory cap" in hazard.message()


def test_the_seeds_and_earlier_gradients_are_the_plain_tapes_after_the_extra_passes():
    def run(tape):
        x = wp.array(X, dtype=float, requires_grad=True)
        s = wp.array([3.0], dtype=float, requires_grad=True)
        y = wp.zeros(len(X), dtype=float, requires_grad=True)
        s.grad.fill_(1.0)
        seed = wp.array([1.0, 2.0, 3.0], dtype=float)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", wp.OverwriteWarning)
            with tape:
                wp.launch(k.scale_by, dim=len(X), inputs=[x, s, y])
                wp.launch(k.bump, dim=len(X), inputs=[x])
            tape.backward(grads={y: seed})
        return x.grad.numpy(), s.grad.numpy(), seed.numpy(), y.grad.numpy()

    for got, want in zip(run(wp.Tape(measure=True)), run(wp.Tape())):
        np.testing.assert_array_equal(got, want)


def test_options_are_validated_by_name():
    with pytest.raises(ValueError, match="snapshot=True"):
        wp.Tape(measure=True, snapshot=True)
    with pytest.raises(ValueError, match="check='warn' or 'error'"):
        wp.Tape(measure=True, check="off")
    with pytest.raises(TypeError, match=r"Tape\(measure=...\) must be True or False"):
        wp.Tape(measure=1)
    with pytest.raises(TypeError, match=r"config.measure must be True or False"):
        wp.config.measure = "yes"
    assert wp.Tape(measure=True).check == "warn"
    saved = wp.config.measure
    try:
        wp.config.measure = True  # the process default, where it applies
        assert wp.Tape(check="warn").measure and not wp.Tape(snapshot=True).measure and not wp.Tape().measure
    finally:
        wp.config.measure = saved


SCRIPT = textwrap.dedent(
    """
    import numpy as np
    import warp_zerostore as wp
    from helpers import kernels_measure as k

    x = wp.array(np.array([1.0, 2.0, 3.0]), dtype=float, requires_grad=True)
    y = wp.zeros(3, dtype=float, requires_grad=True)
    tape = wp.Tape()
    with tape:
        wp.launch(k.capped_double, dim=3, inputs=[x, y])
        wp.launch(k.bump, dim=3, inputs=[x])
    tape.backward(grads={y: wp.ones(3, dtype=float)})
    """
)


def test_the_check_command_measures_with_an_option(tmp_path):
    script = tmp_path / "program.py"
    script.write_text(SCRIPT)
    env = {**os.environ, "PYTHONPATH": str(pathlib.Path(__file__).parent)}

    def check(*options):
        return subprocess.run(
            [sys.executable, "-m", "warp_zerostore", "check", *options, str(script)],
            capture_output=True,
            text=True,
            env=env,
        )

    plain, measured = check(), check("--measure")
    assert plain.returncode == 1 and "warp_zerostore check: 1 hazard(s)" in plain.stdout
    assert measured.returncode == 0, measured.stdout + measured.stderr
    assert "warp_zerostore check: 0 hazard(s)" in measured.stdout
    assert "Measured: no effect on this run's gradients" in measured.stdout


def test_a_change_whose_gradient_leaks_is_not_labelled_without_effect():
    # x read linearly, filled inside the Tape, read again: putting back what the first launch read changes nothing,
    # but the second launch's gradient of the filled values reaches x.grad (no adjoint zeroes it at the fill)
    def run(read_again: bool):
        x = wp.array(X, dtype=float, requires_grad=True)
        y1, y2 = (wp.zeros(len(X), dtype=float, requires_grad=True) for _ in range(2))
        tape = wp.Tape(measure=True)
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            with tape:
                wp.launch(k.double, dim=len(X), inputs=[x, y1])
                x.fill_(2.0)
                if read_again:
                    wp.launch(k.double, dim=len(X), inputs=[x, y2])
            tape.backward(grads={y1: wp.ones(len(X), dtype=float), y2: wp.ones(len(X), dtype=float)})
        (hazard,) = [h for h in tape.hazards if h.kind == "mutated after record"]
        return x.grad.numpy(), hazard, caught

    grad, hazard, caught = run(read_again=True)
    np.testing.assert_array_equal(grad, 4.0)  # the plain Tape's; 2 is the gradient of x's values before the fill
    assert hazard.real and hazard.measured.status == measure.NOT_MEASURED
    assert "a write no adjoint sees" in hazard.message() and len(caught) == 1
    grad, hazard, caught = run(read_again=False)  # the twin: nothing reads or seeds x after the fill
    np.testing.assert_array_equal(grad, 2.0)
    assert not hazard.real and hazard.measured.status == measure.NO_EFFECT and caught == []
