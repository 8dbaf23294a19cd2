"""The kernel fuzzer's structs, @wp.func_grad helpers, func replay and struct-returning helpers: references by
hand, the known struct adjoint bugs per version, the shrinker on struct returns, and fixed-seed campaigns."""

import ast
import dataclasses

import numpy as np
import pytest
from helpers.fuzz_cases import COT, HELPERS, INPUTS, assert_nothing_unknown, small_campaign

from warp_zerostore.testing import kernels
from warp_zerostore.testing.fuzz import (
    batch,
    campaign,
    known,
    oracle,
    printer,
    shrink,
    walk,
)
from warp_zerostore.testing.fuzz.nodes import (
    Assign,
    Binary,
    Const,
    Load,
    Local,
    Program,
    Store,
    Unary,
)


def test_func_grad_adjoints_are_derived_exactly():
    from warp_zerostore.testing.fuzz.nodes import Helper

    p0, p1 = Local("p0", "f"), Local("p1", "f")
    # h(p0, p1) = p0 * sin(p1): the printed adjoint, term by term
    body = Binary("mul", p0, Unary("sin", p1))
    assert printer.derivative(body, "p0") == Unary("sin", p1)
    assert printer.derivative(body, "p1") == Binary("mul", p0, Unary("cos", p1))
    program = Program("float32", (), (), (Helper(2, body, grad=True),), (Store("y", "=", Load("x")),))
    text = printer.source(program, {})
    assert "@wp.func_grad(fuzzed_h0)\ndef adj_fuzzed_h0(p0: wp.float32, p1: wp.float32, adj_ret: wp.float32):" in text
    assert "    wp.adjoint[p0] += wp.sin(p1) * adj_ret\n    wp.adjoint[p1] += (p0 * wp.cos(p1)) * adj_ret" in text
    # every drawn func_grad helper: its derivative (run by the oracle) against central differences of its body
    checked = 0
    rng = np.random.default_rng(0)
    for case in campaign.draw(40, 5, {"float64", "func_grad", "stores"}):
        for helper in case.program.helpers:
            interpreter = oracle.Interpreter(case.program, {}, {"x": np.zeros((1, 4))})
            interpreter.env = {}
            point = rng.uniform(-1.0, 1.0, helper.arity)
            for j in range(helper.arity):
                step = np.eye(helper.arity)[j] * 1e-6
                up, down = (interpreter.call(helper, list(point + sign * step)) for sign in (1, -1))
                fd = (up - down) / 2e-6
                exact = interpreter.call(Helper(helper.arity, printer.derivative(helper.body, f"p{j}")), point)
                np.testing.assert_allclose(exact, fd, rtol=1e-6, atol=1e-8)
                checked += 1
    assert checked >= 20


def test_the_func_grad_build_error_of_1_9_is_known_only_through_a_helper():
    from warp_zerostore.testing.fuzz import Case
    from warp_zerostore.testing.fuzz.nodes import Call, Helper

    grad = Helper(1, Unary("sin", Local("p0", "f")), grad=True)
    store = (Store("y", "=", Call(1, (Load("x"),))),)

    def failure(helpers, version, kind="build", variant="stock"):
        case = Case(Program("float32", (), (), helpers, store), {}, INPUTS, COT)
        return known.match(batch.Failure(case, variant, kind), version)

    through_helper = (grad, Helper(1, Call(0, (Local("p0", "f"),))))
    assert "nested call(func_grad)" in shrink.constructs(Program("float32", (), (), through_helper, store))
    assert failure(through_helper, "1.9.1") == "func-grad-helper-called-from-func"
    assert failure(through_helper, "1.9.1", variant="zero_store") == ""  # a flagged module builds it
    assert failure(through_helper, "1.10.1") == ""  # builds there
    assert failure(through_helper, "1.9.1", "gradient", "zero_store") == ""  # a build error, not a gradient
    from_kernel = (Helper(1, Local("p0", "f")), grad)  # the func_grad helper called from the kernel: builds
    assert failure(from_kernel, "1.9.1") == ""


@pytest.mark.matrix
def test_snapshot_tape_in_place_update_read_back_then_two_stores():
    """y[i] += x[i]; y[i] = y[i] * x[i]; y[i] = y[i] * x[i]: the fuzzer's zero_store check failed here, silently
    (docs/repros/snapshot_inplace_then_another_store.py), until the read twin counted the update of an array the
    kernel reads back as a read of its launch input. Its twins, without the in-place update or with one store
    after the read-back, were right before too (same build)."""
    from warp_zerostore.testing.fuzz import Case

    m = Binary("mul", Load("y"), Load("x"))
    bodies = (
        (Store("y", "+=", Load("x")), Store("y", "=", m), Store("y", "=", m)),  # the bug
        (Store("y", "=", Load("x")), Store("y", "=", m), Store("y", "=", m)),  # no in-place update: right
        (Store("y", "+=", Load("x")), Store("y", "=", m)),  # one store after the read-back: right
    )
    cases = [Case(Program("float64", (), (), (), body), {}, INPUTS, COT) for body in bodies]
    found = batch.check_batch(cases, parts=1)
    assert not any(f.worse for f in found)  # the in-place updates are wrong on a plain Tape, stock and flagged
    failures = [f for f in found if f.path == ("zero_store", "snapshot")]
    assert not failures, f"zero_store {failures[0].kind} failure, warned: {failures[0].warned!r}"


def test_reference_of_structs_by_hand():
    from warp_zerostore.testing.fuzz.nodes import Call, Component, Field, Helper, MakeVec, SetField, StructArg

    x = INPUTS["x"]
    # s0 = S(); s0.a = x; s0.b = 0.5; s0.v = (x, x * x, 1); s0.a = s0.a * x  (= x^2)
    # h(p0, s) = s.a * p0 + s.v[1]; y = h(x, s0) + s0.b * s0.a = x^3 + x^2 + 0.5 x^2, dy/dx = 3x^2 + 3x
    init = (Load("x"), Const(0.5), MakeVec((Load("x"), Binary("mul", Load("x"), Load("x")), Const(1.0))))
    helper = Helper(1, Binary("add", Binary("mul", Field("s", "a"), Local("p0", "f")), Component(Field("s", "v"), 1)))
    helper = dataclasses.replace(helper, struct=True)
    value = Binary("add", Call(0, (Load("x"), StructArg("s0"))), Binary("mul", Field("s0", "b"), Field("s0", "a")))
    body = (SetField("s0", "a", "*=", Load("x")), Store("y", "=", value))
    program = Program("float64", (), (), (helper,), body, structs=(("s0", init),))
    ref = oracle.reference(program, {}, INPUTS, COT)
    np.testing.assert_allclose(ref.outputs["y"], x**3 + 1.5 * x**2, rtol=1e-12)
    np.testing.assert_allclose(ref.grads["x"], COT["y"] * (3 * x**2 + 3 * x), rtol=1e-6)
    text = printer.source(program, {})
    for line in (
        "@wp.struct\nclass fuzzed_hS:\n    a: wp.float64\n    b: wp.float64\n    v: wp.vec3d\n",
        "def fuzzed_h0(p0: wp.float64, s: fuzzed_hS):\n    return ((s.a * p0) + s.v[1])",
        "    s0 = fuzzed_hS()\n    s0.a = wp.float64(x[i])\n    s0.b = wp.float64(wp.float64(0.5))\n",
        "    s0.a = s0.a * x[i]\n    y[i] = (fuzzed_h0(x[i], s0) + (s0.b * s0.a))",
    ):
        assert line in text
    assert {"struct", "struct arg", "struct field", "setfield(*=)"} <= set(shrink.constructs(program))
    # its negative twin: the same update as `+=` (s0.a = s0.a + x = 2x): y = 2x^2 + x^2 + x, dy/dx = 6x + 1
    twin = dataclasses.replace(program, body=(SetField("s0", "a", "+=", Load("x")),) + body[1:])
    ref = oracle.reference(twin, {}, INPUTS, COT)
    np.testing.assert_allclose(ref.grads["x"], COT["y"] * (6 * x + 1), rtol=1e-6)
    assert "    s0.a = s0.a + x[i]\n" in printer.source(twin, {})
    # shrinking never puts the struct argument in place of the call (it is no scalar)
    for candidate in shrink.expression_candidates(program):
        assert not any(isinstance(s, Store) and isinstance(s.expr, StructArg) for s in candidate.body)
        assert not any(isinstance(n, Binary) and StructArg("s0") in (n.lhs, n.rhs) for n in walk.iter_nodes(candidate))


def test_the_struct_field_adjoint_bug_is_known_stock_only_up_to_1_14():
    from warp_zerostore.testing.fuzz import Case
    from warp_zerostore.testing.fuzz.nodes import Field

    store = (Store("y", "=", Binary("mul", Field("s0", "a"), Field("s0", "a"))),)
    with_struct = Program("float32", (), (), (), store, structs=(("s0", (Load("x"), Const(1.0), Load("xv"))),))
    without = Program("float32", (), (), (), (Store("y", "=", Binary("mul", Load("x"), Load("x"))),))

    def failure(program, version, variant="stock"):
        return known.match(batch.Failure(Case(program, {}, INPUTS, COT), variant, "gradient"), version)

    for version in ("1.9.1", "1.10.1", "1.12.1", "1.14.0"):
        assert failure(with_struct, version) == "struct-field-assign-no-adjoint"
        # a flagged kernel's field stores get the adjoint Warp >= 1.15 gives them: not a known failure there
        assert failure(with_struct, version, "zero_store") == ""
    assert failure(with_struct, "1.15.0") == ""  # Warp 1.15 gives the assignment its adjoint
    assert failure(with_struct, "1.19.0") == ""
    assert failure(without, "1.12.1", "zero_store") == ""  # no struct: not this entry


def test_func_replay_names_are_fresh_and_refused_without_wp_func_replay(monkeypatch):
    import re

    import warp

    from warp_zerostore.testing.fuzz.nodes import Call, Helper

    helpers = (Helper(1, Unary("sin", Local("p0", "f")), replay=True),)
    program = Program("float32", (), (), helpers, (Store("y", "=", Call(0, (Load("x"),))),))
    first, second = printer.source(program, {}), printer.source(program, {})
    names = [re.search(r"def (fuzzed_h0_r\d+)\(p0", text).group(1) for text in (first, second)]
    assert names[0] != names[1]  # Warp cannot build a replay of a reused name (func-replay-name-reused)
    assert f"@wp.func_replay({names[0]})\ndef replay_{names[0]}(p0: wp.float32):\n    return wp.sin(p0)" in first
    assert f"    y[i] = {names[0]}(x[i])" in first
    assert "func_replay" in shrink.constructs(program)
    kernels(features={"float32", "func_replay"})  # the installed Warp has it
    monkeypatch.delattr(warp, "func_replay")
    with pytest.raises(ValueError, match=f"'func_replay' needs wp.func_replay, which Warp {warp.config.version}"):
        kernels(features={"float32", "func_replay"})


@pytest.mark.matrix
def test_fixed_seed_campaign_over_structs_and_func_replay_finds_nothing_unknown(tmp_path):
    """A struct local and a helper taking it, helpers with a @wp.func_replay, with locals and stores: one small
    build, checked like the default set (on Warp <= 1.12 struct fields have no adjoint: a known issue)."""
    assert_nothing_unknown(small_campaign(HELPERS | {"structs", "func_replay"}, tmp_path), 12)


# Feature "builtins2": wp.pow, wp.atan2, wp.asin, wp.sign (a kink), wp.length, wp.length_sq, wp.normalize.


def _struct_return_helper():
    """h(p0, p1) = S(a=p0 * p1, b=sin(p0), v=(p0, p1 * p1, 1))."""
    from warp_zerostore.testing.fuzz.nodes import Helper, MakeStruct, MakeVec

    p0, p1 = Local("p0", "f"), Local("p1", "f")
    items = (Binary("mul", p0, p1), Unary("sin", p0), MakeVec((p0, Binary("mul", p1, p1), Const(1.0))))
    return Helper(2, MakeStruct(items))


def test_reference_of_struct_helpers_by_hand():
    from warp_zerostore.testing.fuzz.nodes import STRUCT, Component, Field, MakeVec, StructCall

    x, y0 = INPUTS["x"], INPUTS["y"]
    # s0 = h(x, 2): s0.b = sin x, s0.v[1] = 4;  y = h(x, x).a + s0.b * s0.v[1] + h(x, y).v[1] = x^2 + 4 sin x + y0^2
    # dy/dx = 2x + 4 cos x, dy/dy0 = 2 y0 (the read of y[i] before the store)
    init = (Load("x"), Const(0.5), MakeVec((Load("x"), Binary("mul", Load("x"), Load("x")), Const(1.0))))
    value = Binary(
        "add",
        Binary("add", Field(StructCall(0, (Load("x"), Load("x"))), "a"), _s0_b_times_v1()),
        Component(Field(StructCall(0, (Load("x"), Load("y"))), "v"), 1),
    )
    assign = Assign("s0", STRUCT, "=", StructCall(0, (Load("x"), Const(2.0))))
    program = Program("float64", (), (), (_struct_return_helper(),), (assign, Store("y", "=", value)))
    program = dataclasses.replace(program, structs=(("s0", init),))
    ref = oracle.reference(program, {}, INPUTS, COT)
    np.testing.assert_allclose(ref.outputs["y"], x**2 + 4 * np.sin(x) + y0**2, rtol=1e-12)
    np.testing.assert_allclose(ref.grads["x"], COT["y"] * (2 * x + 4 * np.cos(x)), rtol=1e-6)
    np.testing.assert_allclose(ref.grads["y"], COT["y"] * 2 * y0, rtol=1e-6)
    text = printer.source(program, {})
    for line in (
        "@wp.struct\nclass fuzzed_hS:\n",
        "def fuzzed_h0(p0: wp.float64, p1: wp.float64):\n    r = fuzzed_hS()\n    r.a = (p0 * p1)\n"
        "    r.b = wp.sin(p0)\n    r.v = wp.vec3d(p0, (p1 * p1), wp.float64(1.0))\n    return r\n",
        "    s0 = fuzzed_h0(x[i], wp.float64(2.0))\n",
        "    y[i] = ((fuzzed_h0(x[i], x[i]).a + (s0.b * s0.v[1])) + fuzzed_h0(x[i], y[i]).v[1])",
    ):
        assert line in text
    labels = set(shrink.constructs(program))
    assert {"struct return", "assign struct", "struct field", "struct"} <= labels
    assert "assign(=)" not in labels  # a whole struct assigned is no local's reassignment (loop-carried entries)
    # its negative twin: without the assignment s0 keeps its fields (b = 0.5, v[1] = x^2): y = 1.5 x^2 + y0^2
    twin = dataclasses.replace(program, body=program.body[1:])
    ref = oracle.reference(twin, {}, INPUTS, COT)
    np.testing.assert_allclose(ref.outputs["y"], 1.5 * x**2 + y0**2, rtol=1e-12)
    np.testing.assert_allclose(ref.grads["x"], COT["y"] * 3 * x, rtol=1e-6)
    assert "assign struct" not in shrink.constructs(twin)


def _s0_b_times_v1():
    from warp_zerostore.testing.fuzz.nodes import Component, Field

    return Binary("mul", Field("s0", "b"), Component(Field("s0", "v"), 1))


def test_the_shrinker_keeps_struct_returns_whole_and_drops_their_helper_when_unused():
    from warp_zerostore.testing.fuzz.nodes import STRUCT, Call, Component, Field, Helper, StructCall

    # helpers: h0 (a plain one, unused), h1 (returns the struct); y = h1(x, x).v[2] * x; s0 = h1(x, 1.0)
    plain = Helper(1, Unary("sin", Local("p0", "f")))
    read = Component(Field(StructCall(1, (Load("x"), Load("x"))), "v"), 2)
    body = (
        Assign("s0", STRUCT, "=", StructCall(1, (Load("x"), Const(1.0)))),
        Store("y", "=", Binary("mul", read, Load("x"))),
    )
    init = (Const(1.0), Const(1.0), Load("xv"))
    program = Program("float32", (), (), (plain, _struct_return_helper()), body, structs=(("s0", init),))
    candidates = list(shrink.statement_candidates(program)) + list(shrink.expression_candidates(program))
    for candidate in candidates:  # a struct-valued call stays one: assigned whole or read through a field
        nodes = list(walk.iter_nodes(candidate))
        assert all(isinstance(s.expr, StructCall) for s in nodes if isinstance(s, Assign))
        assert all(isinstance(n.struct, (str, StructCall)) for n in nodes if isinstance(n, Field))
        assert not any(type(n) is Call and candidate.helpers[n.helper].returns_struct for n in nodes)
        # nothing of the kernel's (xv[i]) in a helper's body: the struct's vector shrinks only item by item
        assert not any(isinstance(n, Load) for n in walk.iter_nodes(candidate.helpers))
        ast.parse(printer.source(candidate, {}))
    # the unused plain helper dropped, the struct-returning one renumbered (still a StructCall)
    dropped = [c for c in candidates if len(c.helpers) == 1 and c.helpers[0].returns_struct]
    assert dropped and all(
        n.helper == 0 and isinstance(n, StructCall)
        for c in dropped
        for n in walk.iter_nodes(c.body)
        if isinstance(n, Call)
    )
    # the read replaced by a leaf (h1(...).v[2] -> 1.0); with the assignment dropped too, no helper is left
    no_read = [c for c in candidates if c.body[-1] == Store("y", "=", Binary("mul", Const(1.0), Load("x")))]
    assert len(no_read) == 1
    unused = dataclasses.replace(no_read[0], body=no_read[0].body[1:])
    assert any(c.helpers == () for c in shrink.statement_candidates(unused))
    assert "struct return" in shrink.constructs(program)
    assert "struct return" not in shrink.constructs(dataclasses.replace(unused, helpers=()))


def test_each_drawn_struct_helper_kernel_reads_a_returned_field_in_its_last_store():
    from warp_zerostore.testing.fuzz.nodes import Field, StructArg, StructCall

    def reads(expr):
        return any(isinstance(n, Field) and isinstance(n.struct, StructCall) for n in walk.iter_nodes(expr))

    for features in (HELPERS | {"struct_helpers"}, HELPERS | {"structs", "struct_helpers", "branches"}):
        cases = campaign.draw(30, 6, features)
        for case in cases:
            program = case.program
            assert program.helpers[-1].returns_struct
            stores = [s for s in program.body if isinstance(s, Store) and s.array == "y"]
            assert stores and reads(stores[-1].expr)  # reaches y[i]: the last top-level store reads a field
        with_s0 = [c for c in cases if c.program.structs]
        assert bool(with_s0) == ("structs" in features)
        for case in with_s0:  # the helper taking the struct, before the struct-returning one, is called too
            assert any(isinstance(n, StructArg) for n in walk.iter_nodes(case.program.body))


def test_the_struct_return_adjoint_bug_is_known_stock_only_up_to_1_14():
    from warp_zerostore.testing.fuzz import Case
    from warp_zerostore.testing.fuzz.nodes import Field, StructCall

    read = Field(StructCall(0, (Load("x"), Load("x"))), "a")
    returned = Program("float32", (), (), (_struct_return_helper(),), (Store("y", "=", read),))

    def failure(program, version, variant="zero_store"):
        return known.match(batch.Failure(Case(program, {}, INPUTS, COT), variant, "gradient"), version)

    for version in ("1.9.1", "1.10.1", "1.12.1", "1.14.0"):
        assert failure(returned, version) == ""  # flagged: the helper gets Warp 1.15's code
        assert failure(returned, version, "stock") == "struct-return-no-adjoint"
    assert failure(returned, "1.15.0", "stock") == ""
    assert failure(returned, "1.19.0") == ""
    # the struct-local entry now wants a field read: a struct local nothing reads is not this bug's trigger
    unread = Program(
        "float32", (), (), (), (Store("y", "=", Load("x")),), structs=(("s0", (Load("x"), Const(1.0), Load("xv"))),)
    )
    assert failure(unread, "1.12.1") == ""


@pytest.mark.matrix
def test_fixed_seed_campaign_over_struct_helpers_finds_nothing_unknown(tmp_path):
    """Struct-returning helpers beside the struct local, the helper taking it and branches: one small build,
    checked like the default set (on Warp <= 1.14 the returned fields have no adjoint stock: a known issue)."""
    features = HELPERS | {"structs", "struct_helpers", "branches"}
    assert_nothing_unknown(small_campaign(features, tmp_path), 12)
