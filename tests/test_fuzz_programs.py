"""The program fuzzer: launch sequences over shared arrays, their reference, printer and shrinker without
Warp builds; then the verdicts, check mode's verdicts, and a fixed-seed campaign on every path.

References by hand, one per construct, each with its negative twin: in-place updates across launches, one array
under two parameters, wp.copy windows, constant writes (fill_, zero_, assign) inside the Tape, mutation after
record, enable_backward=False (a kernel's, a module's with a kernel opting in), retain_grad, arrays in a struct,
the new store forms (-=, *=, /=, a component's =, +=, -=) and the vector builtins.
"""

import ast
import dataclasses
import re

import numpy as np
import pytest

import warp_zerostore as wp
from warp_zerostore.differential import campaign, paths, repro, verdicts
from warp_zerostore.testing.fuzz import oracle as kernel_oracle
from warp_zerostore.testing.fuzz import printer as kernel_printer
from warp_zerostore.testing.fuzz.nodes import Binary, Component, Const, Kink, Load, MakeVec, Store, Unary
from warp_zerostore.testing.fuzz.nodes import Program as KernelProgram
from warp_zerostore.testing.fuzz.programs import grammar, known, oracle, printer, shrink
from warp_zerostore.testing.fuzz.programs.nodes import Array, Copy, Fill, Kernel, Launch, Program, SetData

X = np.array([0.5, -0.25, 0.75, 1.0])
Y = np.array([0.1, 0.2, 0.3, 0.4])
V = np.arange(12.0).reshape(4, 3) / 8 - 0.5
W = np.arange(12.0)[::-1].reshape(4, 3) / 16 - 0.25
ACC0 = np.array([0.25, -0.5])
ARRAYS = (Array("s0", "f"), Array("s1", "f"), Array("v0", "v"), Array("v1", "v"), Array("c0", "acc"))
DATA = {"s0": X, "s1": Y, "v0": V, "v1": W, "c0": ACC0}
COT = {
    "s0": np.array([1.0, 2.0, 3.0, 4.0]),
    "s1": np.array([-1.0, 0.5, 2.0, 1.5]),
    "v0": np.ones((4, 3)),
    "v1": np.full((4, 3), 0.5),
    "c0": np.array([1.0, -2.0]),
}


def _kernel(*body, vec_out=True, **options) -> Kernel:
    return Kernel(KernelProgram("float64", (), (), (), tuple(body), vec_out=vec_out), **options)


def _launch(k=0, x="s0", y="s1", xv="v0", yv="v1") -> Launch:
    return Launch(k, (("x", x), ("xv", xv), ("y", y), ("acc", "c0"), ("yv", yv)))


def _program(kernels, body, **fields) -> Program:
    return Program("float64", (4,), ARRAYS, tuple(kernels), body=tuple(body), **fields)


def _reference(program, data=DATA):
    return oracle.reference(program, {}, data, COT)


def _close(got, want):
    np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-8)


# -- the reference, by hand


SQUARE = _kernel(Store("y", "=", Binary("mul", Load("x"), Load("x"))))  # y[i] = x[i] * x[i]


def test_reference_of_two_launches_sharing_an_array_by_hand():
    # s1 = s0 * s0, then s0 = s1 * s1 (the second launch overwrites what the first read): s0 = x^4, s1 = x^2
    program = _program([SQUARE], [_launch(0, "s0", "s1"), _launch(0, "s1", "s0")])
    ref = _reference(program)
    _close(ref.outputs["s1"], X**2)
    _close(ref.outputs["s0"], X**4)
    _close(ref.grads["s0"], COT["s0"] * 4 * X**3 + COT["s1"] * 2 * X)  # through both launches
    _close(ref.grads["s1"], np.zeros(4))  # s1's entry value is overwritten unread
    assert not ref.mutated and all(m.all() for m in ref.compared.values())
    assert "overwrite after read (launches)" in shrink.constructs(program)
    # the negative twin: the second launch writes a third array, nothing is overwritten after a read
    twin = _program([SQUARE], [_launch(0, "s0", "s1")])
    assert "overwrite after read (launches)" not in shrink.constructs(twin)


def test_reference_of_one_array_under_two_parameters_by_hand():
    program = _program([dataclasses.replace(SQUARE, own=True)], [_launch(0, "s0", "s0")])
    ref = _reference(program)
    _close(ref.outputs["s0"], X**2)
    _close(ref.grads["s0"], COT["s0"] * 2 * X)
    assert "x = y (one array)" in shrink.constructs(program)
    assert "x = y (one array)" not in shrink.constructs(_program([SQUARE], [_launch(0, "s0", "s1")]))


def test_reference_of_a_copy_window_by_hand():
    # s1[1:3] = s0[2:4], recorded: d/ds0[2:4] = c1[1:3]; s1[1:3]'s entry values are overwritten
    program = _program([], [Copy("s1", "s0", 1, 2, 2)])
    ref = _reference(program)
    _close(ref.outputs["s1"], [Y[0], X[2], X[3], Y[3]])
    _close(ref.grads["s0"], COT["s0"] + np.array([0.0, 0.0, COT["s1"][1], COT["s1"][2]]))
    _close(ref.grads["s1"], [COT["s1"][0], 0.0, 0.0, COT["s1"][3]])
    assert {"copy", "copy window"} <= set(shrink.constructs(program))
    whole = _program([], [Copy("s1", "s0", 0, 0, 4)])
    assert "copy window" not in shrink.constructs(whole)


def test_constant_writes_in_the_tape_are_constants_and_their_dead_inputs_are_not_compared():
    # s1.fill_(2) then s0 = s1 * s1: nothing flows into s1's entry values, which are not compared (rule 4)
    program = _program([SQUARE], [Fill("s1", "fill_", 2.0), _launch(0, "s1", "s0")])
    ref = _reference(program)
    _close(ref.outputs["s0"], np.full(4, 4.0))
    _close(ref.grads["s0"], np.zeros(4))
    assert not ref.compared["s1"].any() and ref.compared["s0"].all()
    # the twin: the fill after the launch read s1 (a mutation of what it read), s1 is compared, the gradient is
    # at the values the launch read (rule 5)
    after = _program([SQUARE], [_launch(0, "s1", "s0"), Fill("s1", "zero_", 0.0)])
    ref = _reference(after)
    assert ref.mutated and ref.compared["s1"].all()
    _close(ref.grads["s1"], 2 * Y * COT["s0"])
    # assign: a constant of the array's shape
    assign = _program([], [SetData("s1", (1.0, 2.0, 3.0, 4.0))])
    _close(_reference(assign).outputs["s1"], [1.0, 2.0, 3.0, 4.0])


def test_a_constant_write_over_a_recorded_write_has_no_gradient_through_it():
    # s1 = s0 * s0 (recorded), then s1.zero_(): s0's gradient through s1 is 0 (Warp's Tape does not see the zero_)
    program = _program([SQUARE], [_launch(0, "s0", "s1"), Fill("s1", "zero_", 0.0)])
    ref = _reference(program)
    _close(ref.grads["s0"], COT["s0"])
    assert ref.compared["s1"].all()  # used by a recorded launch first: compared (and 0)
    _close(ref.grads["s1"], np.zeros(4))
    labels = set(shrink.constructs(program))
    assert {"zero_", "constant write over a recorded write"} <= labels
    assert "write after write (launches)" not in labels  # between launches only
    assert known.match(verdicts.Failure(None, ("zero_store", "snapshot"), "gradient"), tuple(labels), "1.19.0") == (
        "untaped-write-over-a-recorded-write-zero"
    )
    # the negative twin: a zero_ of an array no recorded step wrote is no such write
    fresh = _program([SQUARE], [Fill("s1", "zero_", 0.0), _launch(0, "s0", "s1")])
    assert "constant write over a recorded write" not in shrink.constructs(fresh)


def test_mutation_after_record_keeps_the_recorded_reference_and_allows_a_refusal():
    program = _program([SQUARE], [_launch(0, "s0", "s1")], after=(SetData("s0", (0.0, 0.0, 0.0, 0.0)),))
    ref = _reference(program)
    _close(ref.grads["s0"], COT["s0"] + 2 * X * COT["s1"])  # the gradient at the recorded values
    assert ref.mutated
    refusal = paths.Result(error="OverwriteError: mutated after record: ...", error_type="OverwriteError")
    assert verdicts.refused(refusal, ref)
    # the twin: the step after the Tape writes an array no launch read: nothing to refuse
    twin = _program([SQUARE], [_launch(0, "s0", "s1")], after=(Fill("c0", "zero_"),))
    assert not _reference(twin).mutated and not verdicts.refused(refusal, _reference(twin))
    assert "zero_ after the Tape" in shrink.constructs(twin)


def test_a_forward_only_kernel_stops_the_gradient_through_what_it_computes():
    forward_only = dataclasses.replace(SQUARE, backward=False)
    program = _program([forward_only, SQUARE], [_launch(0, "s0", "s1"), _launch(1, "s1", "s0")])
    ref = _reference(program)
    _close(ref.outputs["s0"], X**4)
    _close(ref.grads["s0"], np.zeros(4))  # through s1 = x^2 (constant) only: s0 is overwritten
    assert not ref.compared["s1"].any()  # its entry values overwritten by a constant write first
    assert "enable_backward=False" in shrink.constructs(program)
    # the module's enable_backward=False with one kernel opting back in: the opted-in kernel is differentiated
    module = _program(
        [dataclasses.replace(SQUARE, backward=True), SQUARE], [_launch(0, "s0", "s1"), _launch(1, "s1", "s0")],
        module_backward=False,
    )  # fmt: skip
    assert module.differentiated(0) and not module.differentiated(1)
    ref = _reference(module)
    _close(ref.grads["s0"], COT["s1"] * 2 * X)  # s1 = x^2 differentiated; s0 = s1^2 a constant
    labels = set(shrink.constructs(module))
    assert {"module enable_backward=False", "enable_backward=True in a forward-only module"} <= labels


def test_retain_grad_arrays_are_not_compared_and_an_overwrite_of_a_used_element_is_refused():
    arrays = (Array("s0", "f"), Array("s1", "f", retain_grad=True)) + ARRAYS[2:]
    program = dataclasses.replace(_program([SQUARE], [_launch(0, "s0", "s1")]), arrays=arrays)
    ref = _reference(program)
    assert not ref.compared["s1"].any() and ref.compared["s0"].all()
    assert not oracle.run(program, {}, DATA).trace.retain_conflict  # written once, never read before
    twice = dataclasses.replace(program, body=program.body * 2)  # stored again over a used element
    assert oracle.run(twice, {}, DATA).trace.retain_conflict
    accumulate = _kernel(Store("y", "+=", Load("x")))
    added = dataclasses.replace(program, kernels=(accumulate,), body=program.body * 2)
    assert not oracle.run(added, {}, DATA).trace.retain_conflict  # += never zeroes: nothing is retained wrongly
    # the rollout path repeats the body: the reference says so, and the path is skipped (it was a false finding)
    assert not _reference(program).retain_conflict
    assert oracle.reference(paths.repeated(program, paths.ROLLOUT_STEPS), {}, DATA, COT).retain_conflict


def test_the_new_store_forms_by_hand():
    body = (
        Store("y", "-=", Load("x")),  # y - x
        Store("y", "*=", Load("x")),  # (y - x) * x
        Store("y", "/=", Load("x")),  # ... / cosh(x)
        Store("yv", "=", Load("x"), (0,)),  # yv.x = x
        Store("yv", "+=", Load("x"), (1,)),  # yv.y += x
        Store("yv", "-=", Binary("mul", Load("x"), Load("x")), (2,)),  # yv.z -= x^2
    )
    program = _program([_kernel(*body)], [_launch()])
    ref = _reference(program)
    _close(ref.outputs["s1"], (Y - X) * X / np.cosh(X))
    _close(ref.outputs["v1"], np.stack([X, W[:, 1] + X, W[:, 2] - X**2], axis=1))
    d = (Y - 2 * X) / np.cosh(X) - (Y - X) * X * np.tanh(X) / np.cosh(X)
    cv = COT["v1"]
    _close(ref.grads["s0"], COT["s0"] + COT["s1"] * d + cv[:, 0] + cv[:, 1] - 2 * X * cv[:, 2])
    _close(ref.grads["v1"], np.stack([np.zeros(4), cv[:, 1], cv[:, 2]], axis=1))
    text = kernel_printer.source(program.kernels[0].program, {})
    assert "y[i] -= x[i]" in text and "y[i] *= x[i]" in text and "y[i] /= wp.cosh(x[i])" in text
    assert "yv[i].x = x[i]" in text and "yv[i].y += x[i]" in text and "yv[i].z -= (x[i] * x[i])" in text
    labels = set(kernel_shrink_constructs(program.kernels[0].program))
    assert {"augstore", "mulstore", "divstore", "store yv.c", "augstore yv.c"} <= labels


def kernel_shrink_constructs(program):
    from warp_zerostore.testing.fuzz.shrink import constructs

    return constructs(program)


def test_vector_builtins_by_hand():
    a, b = Load("xv"), Load("yv")
    cases = {
        "vmin": lambda t: np.minimum(V, W + t),
        "vmax": lambda t: np.maximum(V, W + t),
        "vabs": lambda t: np.abs(V - t),
        "vsign": lambda t: W * np.sign(V - t),
    }
    for op, want in cases.items():
        program = KernelProgram("float64", (), (), (), (Store("yv", "=", Kink(op, a, b, 0)),), vec_out=True)
        inputs = {"x": X, "xv": V, "y": Y, "acc": ACC0, "yv": W}
        t = 0.03  # away from every component of V - W and of V
        run = kernel_oracle.run(program, {0: t}, inputs)
        _close(run.outputs["yv"], want(t))
        values = np.array(run.sites[0])
        assert values.size == 12 and np.min(np.abs(values - t)) > 0.01  # each component met its site
    product = KernelProgram("float64", (), (), (), (Store("yv", "=", Binary("cw_mul", a, b)),), vec_out=True)
    _close(kernel_oracle.run(product, {}, {"x": X, "xv": V, "y": Y, "acc": ACC0, "yv": W}).outputs["yv"], V * W)
    text = kernel_printer.source(
        KernelProgram("float32", (), (), (), (Store("yv", "=", Kink("vmin", a, b, 0)),), vec_out=True), {0: 0.5}
    )
    assert "wp.min(xv[i], yv[i] + wp.vec3(wp.float32(0.5)))" in text


def test_arrays_in_a_struct_print_as_fields_and_compute_the_same():
    held = dataclasses.replace(SQUARE, held=("x", "y"))
    program = _program([held], [_launch(0, "s0", "s1")])
    _close(_reference(program).grads["s0"], _reference(_program([SQUARE], [_launch(0, "s0", "s1")])).grads["s0"])
    text = printer.source(program, {}, "p0")
    assert "class p0_k0_S:\n    x: wp.array(dtype=wp.float64)\n    y: wp.array(dtype=wp.float64)" in text
    assert "def p0_k0_stock(s: p0_k0_S, xv: wp.array(dtype=wp.vec3d), acc:" in text
    assert "s.y[i] = (s.x[i] * s.x[i])" in text
    assert (
        "s0 = p0_k0_S()\n    s0.x = a['s0']\n    s0.y = a['s1']\n    wp.launch(p0_k0_stock, dim=4, inputs=[s0, a['v0'], a['c0'], a['v1'], 2])"
        in text
    )
    assert "array in a struct" in shrink.constructs(program)


def test_the_host_steps_print_as_python():
    program = _program(
        [SQUARE, dataclasses.replace(SQUARE, backward=False)],
        [_launch(0), Copy("s0", "s1", 1, 0, 2), Fill("v0", "fill_", 0.5), SetData("c0", (1.0, 2.0)), _launch(1)],
        setup=(Fill("s0", "zero_"),),
        after=(Copy("s1", "s0", 0, 0, 4),),
    )
    text = printer.source(program, {}, "p3")
    ast.parse(text)
    assert (
        "with wpz.copy_zero_store(True):\n        wp.copy(a['s0'], a['s1'], dest_offset=1, src_offset=0, count=2)"
        in text
    )
    assert "a['v0'].fill_(wp.vec3d(wp.float64(0.5), wp.float64(0.5), wp.float64(0.5)))" in text
    assert "a['c0'].assign(np.array([1.0, 2.0], dtype=np.float64))" in text
    assert "def p3_setup(a):\n    a['s0'].zero_()" in text
    assert "@wp.kernel(enable_backward=False)\ndef p3_k1_stock" in text
    assert "@wpz.kernel(enable_backward=False)\ndef p3_k1_zero_store" in text  # never flagged without a backward
    assert "@wpz.kernel(zero_store=True)\ndef p3_k0_zero_store(x: wpz.array(dtype=wpz.float64)" in text
    assert "def p3_op_zero_store(s0: wp.array(dtype=wp.float64), s1:" in text


# -- the grammar


def test_drawn_programs_are_defined_by_construction():
    for case in campaign.draw(40, 5):
        program = case.program
        for step in program.body:
            if isinstance(step, Launch):  # one array under two parameters only for a kernel reading its own elements
                args, kernel = step.binding(), program.kernels[step.kernel]
                aliased = args["x"] == args["y"] or ("yv" in args and args["xv"] == args["yv"])
                assert kernel.own or not aliased
        run = oracle.run(program, case.thresholds, case.data)
        assert not run.trace.retain_conflict
        assert all(np.all(np.abs(v) < grammar.OUTPUT_BOUND) for v in run.outputs.values())
        for key, values in run.sites.items():
            t = case.thresholds[key]
            assert min(abs(q - t) for q in values) >= kernel_oracle.MARGIN * max(1.0, abs(t))
        ast.parse(printer.source(program, case.thresholds, "p0"))
    launches = [sum(isinstance(s, Launch) for s in c.program.body) for c in campaign.draw(60, 6)]
    assert min(launches) >= 1 and max(launches) <= 6 and 2.5 <= np.mean(launches) <= 4.5


@pytest.mark.parametrize(
    "feature, label",
    [
        ("copies", "copy"),
        ("constant_writes", "(fill_|zero_|assign)"),
        ("mutations", ".* after the Tape"),
        ("setup", ".* before the Tape"),
        ("struct_arrays", "array in a struct"),
        ("forward_only", "enable_backward=False"),
        ("aliasing", ".* \\(one array\\)"),
    ],
)
def test_each_sequence_feature_is_drawn_and_only_when_named(feature, label):
    base = {"float32", "stores", "augstores", "readback", "atomics", "smooth", "helpers"}
    on = [shrink.constructs(c.program) for c in campaign.draw(40, 3, base | {feature})]
    assert any(any(re.fullmatch(label, x) for x in labels) for labels in on)
    off = [shrink.constructs(c.program) for c in campaign.draw(30, 3, set(grammar.PROGRAM_FEATURES) - {feature})]
    assert not any(any(re.fullmatch(label, x) for x in labels) for labels in off)


def test_unknown_program_features_are_named():
    with pytest.raises(ValueError, match="unknown features \\['teleport'\\]"):
        grammar.programs({"float32", "teleport"})


# -- the shrinker


def test_the_program_shrinker_drops_launches_aliases_options_and_shortens_copies():
    program = _program(
        [dataclasses.replace(SQUARE, own=True, held=("y",), backward=False), SQUARE],
        [_launch(0, "s0", "s0"), Copy("s1", "s0", 1, 1, 2), _launch(1, "s1", "s0")],
    )
    smaller = list(shrink.candidates(program))
    assert any(len(p.body) == 2 for p in smaller)
    assert any(p.body[0].binding()["y"] != "s0" for p in smaller if isinstance(p.body[0], Launch))
    assert any(p.kernels[0].held == () for p in smaller) and any(p.kernels[0].backward is None for p in smaller)
    assert any(len(p.body) == 3 and p.body[1].count == 1 for p in smaller)
    dropped = shrink.normalized(dataclasses.replace(program, body=program.body[1:]))
    assert len(dropped.kernels) == 1 and dropped.body[-1].kernel == 0  # the unlaunched kernel goes, renumbered
    assert all(shrink.size(p) < shrink.size(program) for p in map(shrink.normalized, smaller) if len(p.body) < 3)


# -- the verdicts


def _result(outputs, grads, **extra):
    return paths.Result(outputs=outputs, grads=grads, **extra)


def _judge(program, results):
    case = grammar.ProgramCase(program, {}, DATA, COT)
    return verdicts.judge(case, results, _reference(program))


def test_verdicts_worse_than_stock_miss_false_alarm_and_on_purpose():
    program = _program([SQUARE], [_launch(0, "s0", "s1")])
    ref = _reference(program)
    right = _result(ref.outputs, ref.grads)
    wrong = _result(ref.outputs, {**ref.grads, "s0": ref.grads["s0"] + 1.0})
    stale = ("stale read", True, "stale read: ...")
    linear = ("stale read", False, "stale read: ...")
    results = {
        ("stock", "plain"): right,
        ("zero_store", "plain"): wrong,  # worse than stock
        ("zero_store", "snapshot"): right,
        ("zero_store", "check"): _result(wrong.outputs, wrong.grads, hazards=[linear]),  # a miss: nothing real
        ("stock", "snapshot"): right,
        ("stock", "check"): _result(right.outputs, right.grads, hazards=[stale, linear]),  # a false alarm
    }
    failures, counts = _judge(program, results)
    kinds = {(f.path, f.kind, f.worse) for f in failures}
    assert (("zero_store", "plain"), "gradient", True) in kinds
    assert (("zero_store", "check"), verdicts.MISS, False) in kinds
    assert (("stock", "check"), verdicts.FALSE_ALARM, False) in kinds
    assert counts == {"miss": 1, "false alarm": 1, "on purpose": 2}
    # negative twins: all right, nothing reported; a check Tape off the plain Tape's gradients is the package's
    failures, counts = _judge(program, {p: right for p in paths.TAPE_PATHS})
    assert failures == [] and counts == {"miss": 0, "false alarm": 0, "on purpose": 0}
    nudged = _result(right.outputs, {**right.grads, "c0": right.grads["c0"] * (1 + 1e-12)})
    failures, _ = _judge(program, {**{p: right for p in paths.TAPE_PATHS}, ("stock", "check"): nudged})
    assert [(f.path, f.kind, f.worse) for f in failures] == [(("stock", "check"), verdicts.CHECK_DIFFERS, True)]


def test_measuring_verdicts_miss_false_alarm_and_differs():
    program = _program([SQUARE], [_launch(0, "s0", "s1")])
    case = grammar.ProgramCase(program, {}, DATA, COT)
    ref = _reference(program)
    right = _result(ref.outputs, ref.grads)
    wrong = _result(ref.outputs, {**ref.grads, "s0": ref.grads["s0"] + 1.0})
    effect = ("stale read", True, "stale read: ... Measured: ...", "effect")
    no_effect = ("stale read", False, "stale read: ... Measured: no effect ...", "no effect")
    leaks = ("mutated after record", True, "mutated after record: ... Not measured: the change leaks", "not measured")
    results = {
        ("stock", "plain"): right,
        ("stock", "snapshot"): right,
        ("stock", "check"): _result(right.outputs, right.grads, hazards=[effect[:3]]),
        ("zero_store", "plain"): wrong,
        ("zero_store", "snapshot"): right,
        ("zero_store", "check"): _result(wrong.outputs, wrong.grads, hazards=[effect[:3]]),
    }
    measured = {
        ("stock", "measure"): _result(right.outputs, right.grads, hazards=[effect, leaks]),  # a false alarm
        ("zero_store", "measure"): _result(wrong.outputs, wrong.grads, hazards=[no_effect]),  # a miss
    }
    failures, counts = verdicts.judge_measure(case, results, measured, ref)
    assert {(f.path, f.kind, f.worse) for f in failures} == {
        (("stock", "measure"), verdicts.MEASURE_FALSE_ALARM, False),
        (("zero_store", "measure"), verdicts.MEASURE_MISS, False),
    }
    assert counts["measure miss"] == counts["measure miss, not a check miss"] == 1
    assert counts["measure false alarm"] == counts["measure not measured, right"] == counts["measure no effect"] == 1
    # negative twins: labels that follow the plain Tape's gradients; gradients off the plain Tape's are the package's
    measured = {
        ("stock", "measure"): _result(right.outputs, right.grads, hazards=[no_effect]),
        ("zero_store", "measure"): _result(wrong.outputs, wrong.grads, hazards=[effect]),
    }
    failures, counts = verdicts.judge_measure(case, results, measured, ref)
    assert failures == [] and counts["measure miss"] == counts["measure false alarm"] == 0
    measured[("stock", "measure")] = _result(right.outputs, {**right.grads, "c0": right.grads["c0"] * 2})
    failures, _ = verdicts.judge_measure(case, results, measured, ref)
    assert [(f.path, f.kind, f.worse) for f in failures] == [(("stock", "measure"), verdicts.MEASURE_DIFFERS, True)]


def test_a_refusal_is_right_only_where_the_program_has_a_mutation():
    program = _program([SQUARE], [_launch(0, "s0", "s1")], after=(Fill("s0", "zero_"),))
    ref = _reference(program)
    right = _result(ref.outputs, ref.grads)
    refusal = paths.Result(error="OverwriteError: mutated after record: the array ...", error_type="OverwriteError")
    failures, _ = _judge(program, {("stock", "plain"): right, ("zero_store", "snapshot"): refusal})
    assert failures == []
    plain = _program([SQUARE], [_launch(0, "s0", "s1")])
    failures, _ = _judge(plain, {("stock", "plain"): right, ("zero_store", "snapshot"): refusal})
    assert [(f.kind, f.worse) for f in failures] == [(verdicts.CRASH, True)]
    # a rollout's refusal of a copy inside a step over what a launch of the step read is one by name too; another
    # CheckpointError on a program without a mutation is a crash
    copy = "CheckpointError: rollout(): step 1 overwrites state[0] with wp.copy after kernel 'k' (argument 'y') read it"
    for error, failing in ((copy, []), ("CheckpointError: rollout(): something else", [verdicts.CRASH])):
        result = paths.Result(error=error, error_type="CheckpointError")
        failures, _ = _judge(plain, {("stock", "plain"): right, ("zero_store", "rollout"): result})
        assert [f.kind for f in failures] == failing


def test_known_program_failures_match_by_path_and_constructs():
    failure = verdicts.Failure(None, ("stock", "plain"), "gradient")
    assert known.match(failure, ("overwrite after read (launches)",), "1.19.0") == "stale-read-across-launches"
    snapshot = verdicts.Failure(None, ("zero_store", "snapshot"), "gradient")
    assert known.match(snapshot, ("overwrite after read (launches)",), "1.19.0") == ""  # the snapshot Tape's job
    assert known.match(failure, ("copy",), "1.16.0") == "copy-adjoint-overwrites-src-grad"
    assert known.match(failure, ("copy",), "1.17.0") == ""
    worse = verdicts.Failure(None, ("zero_store", "plain"), "gradient", worse=True)
    assert known.match(worse, ("overwrite after read (launches)",), "1.19.0") == ""  # never the package's
    helper = ("call", "enable_backward=True in a forward-only module")
    assert known.match(failure, helper, "1.17.0") == "forward-only-module-helper-no-adjoint"
    assert known.match(failure, helper, "1.18.0") == ""  # fixed upstream
    assert known.match(snapshot, helper, "1.17.0") == ""  # flagged kernels' helpers get their adjoint
    stores = ("callstore", "enable_backward=True in a forward-only module")
    assert known.match(failure, stores, "1.12.1") == "forward-only-module-helper-store-no-adjoint"
    assert known.match(failure, stores, "1.18.0") == ""
    assert known.match(snapshot, stores, "1.12.1") == ""
    assert known.match(snapshot, ("x = y (one array)",), "1.19.0") == ""  # the snapshot Tape is right there
    assert known.match(failure, ("x = y (one array)",), "1.19.0") == "stale-read-through-an-alias"


def test_a_constant_write_over_a_copys_source_is_labelled():
    program = _program([], [Copy("s1", "s0", 0, 0, 4), Fill("s0", "zero_", 0.0)])
    assert "constant write over a copy's source" in shrink.constructs(program)
    twin = _program([], [Copy("s1", "s0", 0, 0, 4), Fill("s1", "zero_", 0.0)])  # over the destination: a write
    assert "constant write over a copy's source" not in shrink.constructs(twin)
    assert "constant write over a recorded write" in shrink.constructs(twin)


# -- one build


def _small_campaign(tmp_path, seed=31, programs=12):
    return campaign.run(
        minutes=60, seed=seed, batch_size=programs, max_batches=1, shrink_rounds=0, bridge_every=4, out=str(tmp_path)
    )


@pytest.mark.matrix
def test_fixed_seed_program_campaign_finds_nothing_unknown(tmp_path):
    """The fast suite's program campaign, on every minor: 12 drawn programs, one build, every Tape path (and the
    bridges where the extras are installed), nothing worse than stock, no check miss, nothing unexplained."""
    summary = _small_campaign(tmp_path)
    assert summary.programs == 12 and summary.launches >= 24
    unknown = summary.new + [f for f in summary.worse if f not in summary.new]
    assert not unknown, "\n\n".join(
        f"{f.path} {f.kind} {f.status} ({', '.join(f.constructs)}) on Warp {wp.config.version}:\n"
        + (open(f.repro_path).read() if f.repro_path else "")
        for f in unknown
    )
    assert summary.runs["stock/plain"] == 12 and summary.runs["zero_store/check"] == 12


def test_a_repro_script_runs_standalone_and_marks_the_wrong_gradient(tmp_path):
    import subprocess
    import sys

    # an in-place update across launches: stock is wrong on a plain Tape (the first launch re-reads s1)
    square_y = _kernel(Store("y", "=", Binary("mul", Load("x"), Unary("sin", Load("x")))))
    program = _program([square_y], [_launch(0, "s0", "s1"), _launch(0, "s1", "s0")])
    case = grammar.ProgramCase(program, {}, DATA, COT)
    failure = verdicts.Failure(case, paths.STOCK, "gradient")
    path = tmp_path / "repro.py"
    path.write_text(repro.script(failure, ", ".join(shrink.constructs(program))))
    text = path.read_text()
    assert "import warp_zerostore" not in text  # a stock failure: ready for an upstream issue
    done = subprocess.run([sys.executable, str(path)], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    assert "s0.grad:" in done.stdout and "<-- WRONG" in done.stdout
    assert Const(1.0) is not None and MakeVec is not None and Component is not None


def test_a_repro_script_keeps_the_programs_module_option():
    """A program whose module is built with enable_backward=False prints that option: without it, the script's
    kernels get a backward the program's did not (a 1.12.1 campaign's repro did not reproduce)."""
    square_y = _kernel(Store("y", "=", Binary("mul", Load("x"), Load("x"))))
    program = dataclasses.replace(_program([square_y], [_launch(0, "s0", "s1")]), module_backward=False)
    case = grammar.ProgramCase(program, {}, DATA, COT)
    text = repro.script(verdicts.Failure(case, ("zero_store", "snapshot"), "gradient"))
    assert 'wp.set_module_options({"enable_backward": False})' in text
    plain = repro.script(
        verdicts.Failure(
            grammar.ProgramCase(_program([square_y], [_launch(0, "s0", "s1")]), {}, DATA, COT),
            ("zero_store", "snapshot"),
            "gradient",
        )
    )
    assert "set_module_options" not in plain  # negative twin


# -- quiet output, the command line, the table of versions


@wp.kernel(enable_backward=False)
def _forward_only_double(x: wp.array(dtype=float), y: wp.array(dtype=float)):
    i = wp.tid()
    y[i] = 2.0 * x[i]


def test_warps_own_warnings_are_recorded_not_printed(capfd):
    import warnings

    from warp_zerostore import _compat

    x = wp.array([1.0, 2.0], dtype=float, requires_grad=True)
    y = wp.zeros(2, dtype=float, requires_grad=True)
    capfd.readouterr()
    with _compat.warp_warnings_as_warnings(), warnings.catch_warnings(record=True) as said:
        warnings.simplefilter("always")
        tape = wp.Tape()
        with tape:
            wp.launch(_forward_only_double, dim=2, inputs=[x, y])
        tape.backward(grads={y: wp.ones(2, dtype=float)})
    printed = capfd.readouterr()
    assert any("enable_backward=False" in str(w.message) for w in said)
    assert "enable_backward" not in printed.out + printed.err


def test_a_refusal_inside_a_jax_op_prints_nothing(capfd):
    """Warp's FFI callback prints the traceback of an error raised in a JAX op's backward; the bridge path keeps
    it out of a fuzzing run's output (the refusal still reaches the path's result)."""
    pytest.importorskip("jax")
    from warp_zerostore.differential import check

    # s1 read by the launch, then changed inside the op: its snapshot Tape refuses by name at backward()
    program = _program([SQUARE], [_launch(0, "s1", "s0"), Fill("s1", "fill_", 2.0)])
    case = grammar.ProgramCase(program, {}, DATA, COT)
    capfd.readouterr()
    checked = check.check_batch([case], bridges=("jax",))
    printed = capfd.readouterr()
    assert "Traceback" not in printed.out + printed.err
    assert checked.runs.get("zero_store/jax", 0) + checked.counts.get("jax: not applicable", 0) == 1


def test_the_fuzz_command_names_an_unknown_program_feature(capsys):
    from warp_zerostore.cli import main

    assert main(["fuzz", "--programs", "--features", "stores", "teleport", "--minutes", "0"]) == 2
    assert "unknown features ['teleport']" in capsys.readouterr().out


def test_the_table_of_versions_counts_wrong_stock_flagged_warned_and_missed():
    from warp_zerostore.differential import matrix

    def finding(path, kind, count, cls, warned=False, worse=False):
        return {"path": list(path), "kind": kind, "count": count, "class": cls, "warned": warned,
                "worse_than_stock": worse, "status": cls}  # fmt: skip

    summaries = [
        {"version": "1.9.1", "programs": 10, "seconds": 60.0, "counts": {"miss": 1}, "findings": [
            finding(("stock", "plain"), "gradient", 3, "copy-adjoint-overwrites-src-grad"),
            finding(("zero_store", "snapshot"), "gradient", 2, "copy-adjoint-overwrites-src-grad", warned=True),
            finding(("zero_store", "check"), "check miss", 1, "check miss: copy"),
        ]},
        {"version": "1.19.0", "programs": 12, "seconds": 60.0, "counts": {}, "findings": [
            finding(("zero_store", "snapshot"), "gradient", 1, "gradient: aliased", worse=True),
        ]},
    ]  # fmt: skip
    rows = {(v, c): n for v, c, n in matrix.rows(summaries)}
    assert rows[("1.9.1", "copy-adjoint-overwrites-src-grad")] == {
        "wrong stock": 3, "wrong flagged": 2, "warned": 2, "missed by check": 0
    }  # fmt: skip
    assert rows[("1.9.1", "check miss: copy")]["missed by check"] == 1
    assert rows[("1.19.0", "WORSE THAN STOCK: gradient: aliased")]["wrong flagged"] == 1
    text = matrix.table(summaries)
    assert text.splitlines()[0].split() == ["warp-lang", "finding", "class", "wrong", "stock", "wrong", "flagged",
                                            "warned", "missed", "by", "check"]  # fmt: skip
    assert "warp-lang 1.9.1: 10 programs in 60 s; check mode: 1 misses" in text
