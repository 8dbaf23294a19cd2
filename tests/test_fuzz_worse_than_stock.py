"""The fuzzer's verdict "worse than stock": a package path wrong where stock Warp on a plain Tape is right.

Each drawn kernel is checked on four paths (`batch.PATHS`): stock and ``zero_store=True``, each on a plain
``wp.Tape()`` and on ``Tape(snapshot=True)``. The update-then-use shape (``y[i] += x[i]``, then ``y[i] * y[i]``
into an output), the one a flagged kernel got wrong on a plain Tape before its replay had a POST backward, is
right on every path now (not worse than stock); with the replay mutated so that its POST backward is the PRE one
(`ModuleReplay.kernel` always PRE), the same case is reported worse than stock, never known, and shrinks to a
smaller kernel that still is. One build per test that builds (the mutant's module salted by a module option, so
its binary never serves an unmutated build from Warp's kernel cache, nor the other way round).
"""

import ast
import dataclasses

import numpy as np
import pytest

import warp_zerostore as wp
from warp_zerostore.codegen import replay
from warp_zerostore.testing.fuzz import Case, batch, campaign, known, repro, shrink
from warp_zerostore.testing.fuzz.nodes import Binary, Load, Program, Store, Unary

INPUTS = {
    "x": np.array([0.5, -0.25, 0.75, 1.0]),
    "xv": np.zeros((4, 3)),
    "y": np.array([0.1, 0.2, 0.3, 0.4]),
    "acc": np.zeros(2),
}
COT = {"y": np.array([1.0, 2.0, 3.0, 4.0]), "acc": np.array([1.0, -2.0])}

# y[i] += x[i]; wp.atomic_add(acc, i % 2, y[i] * y[i]): tests/test_never_worse_than_stock.py's first shape in the
# fuzzer's language (its outputs are y and acc). Stock is right on a plain Tape: the load after the update reads
# the final y, which memory holds at backward time.
UPDATE_THEN_USE = (Store("y", "+=", Load("x")), Store("acc", "atomic", Binary("mul", Load("y"), Load("y"))))
# the negative twin: y[i] = x[i] * y[i] (an in-place update), wrong stock on a plain Tape (read-then-overwrite)
IN_PLACE = (Store("y", "=", Binary("mul", Load("x"), Load("y"))),)

#: The mutant: every flagged kernel's backward is the PRE one (the log serves every load of an array written
#: earlier in the launch), what the replay did before it had a POST backward; wrong on a plain Tape.
MUTANT_SALT = "wp.set_module_options({'warp_zerostore_test_mutant': 'replay POST backward = PRE'})\n"


def _case(body, dtype="float64") -> Case:
    return Case(Program(dtype, (), (), (), body), {}, INPUTS, COT)


@pytest.fixture
def post_is_pre(monkeypatch):
    """The replay mutated: `ModuleReplay.kernel` returns the PRE text whatever memory is asked for."""
    original = replay.ModuleReplay.kernel

    def kernel(self, text, kernel_key, memory=replay.POST):
        return original(self, text, kernel_key, replay.PRE)

    monkeypatch.setattr(replay.ModuleReplay, "kernel", kernel)
    return MUTANT_SALT


@pytest.mark.matrix
def test_update_then_use_is_not_worse_than_stock_and_an_in_place_update_is_what_stock_is():
    failures = batch.check_batch([_case(UPDATE_THEN_USE), _case(IN_PLACE)], parts=1)
    assert not [f for f in failures if f.worse]
    assert not [f for f in failures if f.case.program.body == UPDATE_THEN_USE]  # right on all four paths
    # the in-place update: wrong on a plain Tape, stock and flagged alike (known upstream), right on a snapshot one
    # (but for stock on Warp <= 1.12, whose store adjoint keeps the gradient of the value it overwrote)
    old = wp.config.version in known.OLD
    want = [("stock", "plain"), ("zero_store", "plain")] + [("stock", "snapshot")] * old
    assert [f.path for f in failures] == want
    assert {known.match(f) for f in failures} == {"read-then-overwrite"}


@pytest.mark.matrix
def test_update_then_use_is_worse_than_stock_when_the_replays_post_backward_is_pre(post_is_pre, tmp_path):
    failures = batch.check_batch([_case(UPDATE_THEN_USE)], prelude=post_is_pre)
    worse = [f for f in failures if f.worse]
    assert [(f.path, f.kind) for f in worse] == [(("zero_store", "plain"), "gradient")]
    (failure,) = worse
    assert known.match(failure) == ""  # never a known upstream bug, whatever its constructs
    # what stock computed is kept beside it: right, where the flagged kernel's gradient is not
    assert failure.stock and not np.allclose(failure.stock[failure.array], failure.warp_value[failure.array])
    summary = campaign.Summary(kernels=1, builds=1, seconds=1.0)
    campaign._file(summary, failure, str(tmp_path))
    (finding,) = summary.findings
    assert finding.worse and finding.status == "WORSE THAN STOCK" and summary.new == [finding]
    assert "WORSE" in campaign.table(summary) and "worse than stock" in campaign.table(summary)
    text = open(finding.repro_path).read()
    ast.parse(text)
    assert "def fuzzed_stock(" in text and "def fuzzed_zero_store(" in text
    assert "WORSE THAN STOCK: zero_store on a plain Tape" in text
    assert "run(fuzzed_zero_store, wp.Tape())" in text and "run(fuzzed_stock, wp.Tape())" in text


def test_a_worse_than_stock_failure_shrinks_to_one_still_worse(post_is_pre):
    """Started from the mutant's verdict on a larger kernel (an extra unrelated statement): one round, one build."""
    body = (Store("acc", "atomic", Unary("sin", Load("x"))),) + UPDATE_THEN_USE
    start = batch.Failure(_case(body), "zero_store", "gradient", tape="plain", worse=True)
    best = shrink.shrink(start, rounds=1, prelude=post_is_pre)
    assert best[0] is not start
    assert shrink.fails_like(best[0], start) and best[0].worse
    assert shrink.size(best[0].case.program) < shrink.size(start.case.program)
    assert {"augstore", "readback y[i]"} <= set(shrink.constructs(best[0].case.program))


def test_worse_than_stock_is_never_known_and_shrinks_only_to_worse():
    in_place = batch.Failure(_case(IN_PLACE, "float32"), "zero_store", "gradient", tape="plain")
    assert known.match(in_place, "1.19.0") == "read-then-overwrite"  # flagged on a plain Tape: what stock is
    assert known.match(dataclasses.replace(in_place, worse=True), "1.19.0") == ""
    assert batch.Failure(in_place.case, "zero_store", "gradient").tape == "snapshot"  # the variant's old Tape
    assert batch.Failure(in_place.case, "stock", "gradient").tape == "plain"
    worse = dataclasses.replace(in_place, worse=True)
    assert shrink.fails_like(worse, in_place) and not shrink.fails_like(in_place, worse)
    assert not shrink.fails_like(dataclasses.replace(worse, tape="snapshot"), worse)


def _finding(tape, warned, worse=True):
    failure = batch.Failure(_case(UPDATE_THEN_USE), "zero_store", "gradient", tape=tape, worse=worse)
    return campaign.KernelFinding("zero_store", "gradient", (), failure, warned=warned, tape=tape, worse=worse)


def test_a_build_time_warning_excuses_worse_than_stock_on_the_snapshot_tape_only():
    plain, snapshot = _finding("plain", True), _finding("snapshot", True)
    assert plain.status == "WORSE THAN STOCK" and not plain.explained
    assert snapshot.status == "worse, warned" and snapshot.explained
    assert _finding("plain", True, worse=False).explained  # a warned failure that stock shares: as before
    summary = campaign.Summary(kernels=2, builds=1, seconds=1.0, findings=[plain, snapshot])
    assert summary.new == [plain] and summary.worse == [plain, snapshot]
    assert "worse than stock (a package path wrong where stock on a plain Tape is right): 2 distinct" in (
        campaign.table(summary)
    )


def test_the_fuzz_command_exits_non_zero_on_worse_than_stock(monkeypatch, capsys, tmp_path):
    from warp_zerostore.cli import main

    summary = campaign.Summary(kernels=1, builds=1, seconds=1.0, findings=[_finding("snapshot", True)])
    monkeypatch.setattr(campaign, "run", lambda **kwargs: summary)
    assert main(["fuzz", "--minutes", "0", "--out", str(tmp_path), "--json"]) == 1
    out = capsys.readouterr().out
    assert '"worse_than_stock": 1' in out and "worse, warned" in out


def test_a_package_paths_repro_runs_stock_beside_it():
    """Without values (no build): a flagged kernel's snapshot-Tape failure that stock shares, side by side."""
    failure = batch.Failure(_case(IN_PLACE), "zero_store", "gradient")
    text = repro.script(failure)
    ast.parse(text)
    assert "run(fuzzed_zero_store, wpz.Tape(snapshot=True))" in text and "WORSE" not in text
    assert "import warp_zerostore" not in repro.script(batch.Failure(failure.case, "stock", "gradient"))
