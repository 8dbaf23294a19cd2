"""A campaign's budget bounds the whole run (drawing, building, checking, shrinking, repros), the work it cuts for
time is named, and the progress bar moves with the work.

The budget's arithmetic, the draw stream, the shrinker's cut and the filing of known failures are checked without
a Warp build. Then `fuzz --minutes` runs end to end in a subprocess, as a user runs it, with the known table
emptied, so that every failure the first build finds is new and is shrunk: the worst case for the budget. It must
end within its budget plus `MARGIN` (the interpreter's start and imports, and the estimate error of the last build
and of the first, sized by `budget.FIRST_GUESS`), and it is killed there if not: before the budget bounded
shrinking, this run was still shrinking when killed. The program fuzzer likewise, in this process.
"""

import argparse
import json
import subprocess
import sys
import time

import pytest
from helpers.fuzz_cases import COT, INPUTS

from warp_zerostore.testing.fuzz import Case, batch, budget, campaign, known, shrink
from warp_zerostore.testing.fuzz.budget import Budget, Stream
from warp_zerostore.testing.fuzz.nodes import Binary, Load, Program, Store, Unary

#: The kernel fuzzer's budget in the end-to-end test, and the margin it may run over (both in seconds).
SECONDS, MARGIN = 15, 25
#: A seed whose third kernel, in the first build, fails on every path (an in-place update and a loop-carried local).
SEED, FAILING_KERNEL = 16, 3

IN_PLACE = (Store("y", "=", Binary("mul", Load("x"), Load("y"))),)  # known: read-then-overwrite
SINE = (Store("y", "=", Unary("sin", Load("x"))), Store("acc", "atomic", Load("y")))


def _failure(body, variant="stock", tape="plain"):
    return batch.Failure(Case(Program("float32", (), (), (), body), {}, INPUTS, COT), variant, "gradient", tape=tape)


# -- the budget, without Warp


def test_the_first_build_is_sized_by_the_guess_and_later_ones_by_what_builds_cost():
    clock = Budget(60.0)  # (a few microseconds pass between the lines: a fit may round one down)
    guessed = int(budget.SHARE * 60 / budget.FIRST_GUESS)
    assert guessed - 1 <= clock.fit(64) <= guessed  # nothing measured yet: the first guess
    clock.measure("batch", 40, 20.0)  # half a second a case: half the time left holds 59 or 60
    assert 59 <= clock.fit(64) <= 60 and clock.fit(8) == 8  # never more than wanted
    assert clock.fit(64, "shrink") >= 59  # a kind not measured costs what a batch does
    clock.measure("shrink", 1, 20.0)
    assert clock.fit(64, "shrink") == 1 and clock.fit(64) >= 59
    assert Budget(0.0).fit(64) == 0 and Budget(0.0).expired()
    cached = Budget(600.0)
    cached.measure("batch", 3, 0.3)  # Warp's kernel cache served it: the next build is compiled, and may cost more
    assert cached.fit(64) == budget.GROWTH * 3
    assert Budget().fit(1000) == 1000 and not Budget().expired()  # no limit: a shrink run on its own


def test_what_is_cut_is_named():
    clock = Budget(1.0)
    assert clock.said() == ""
    clock.cut("failure", "not shrunk")
    clock.cut("kernel", "built, not checked", 3)
    clock.cut("kernel", "built, not checked", 0)  # nothing cut: not said
    assert clock.said() == "1 failure not shrunk; 3 kernels built, not checked: time"


def test_the_stream_draws_the_same_cases_whatever_the_build_sizes():
    def draw(k):
        return [f"{k}.{j}" for j in range(4)]

    one, other = Stream(draw), Stream(draw)
    taken = one.take(3) + one.take(6) + one.take(1)
    assert taken == other.take(10) == [f"{k}.{j}" for k in range(3) for j in range(4)][:10]
    assert Stream(lambda k: [] if k else ["a"]).take(5) == ["a"]  # a draw that runs dry ends the stream


def test_a_shrinking_round_takes_what_fits_and_says_whether_it_checked_every_candidate():
    calls = []

    def check(cases, stop, each):
        calls.append(list(cases))
        for case in cases:
            each(case)
        return "found"

    clock = Budget(60.0)
    clock.measure("shrink", 3, 27.0)  # 9 s a candidate: 3 fit in half of 60 s
    assert clock.shrink_round(list(range(48)), check, "shrinking") == ("found", False)
    assert calls == [[0, 1, 2]]  # the first (smallest) ones
    assert Budget().shrink_round([1, 2], check, "shrinking") == ("found", True)  # no limit: every candidate
    assert Budget(0.0).shrink_round([1, 2], check, "shrinking") == (None, False) and len(calls) == 2


def test_a_failure_left_no_time_is_not_shrunk_and_said_so(monkeypatch):
    monkeypatch.setattr(batch, "check_batch", lambda *a, **k: pytest.fail("no time was left for a build"))
    clock = Budget(0.0)
    start = _failure(SINE, "zero_store", "snapshot")
    assert shrink.shrink(start, budget=clock) == [start]
    assert clock.said() == "1 failure not shrunk: time"


def test_a_shrink_at_a_local_minimum_is_no_cut(monkeypatch):
    """The negative twin: every candidate checked, none fails the same way: the shrink ends, nothing is cut."""

    def check_batch(cases, device="cpu", prelude="", parts=None, stop=None, each=None):
        for case in cases:
            each(case)
        return []

    monkeypatch.setattr(batch, "check_batch", check_batch)
    clock = Budget(60.0)
    start = _failure(SINE, "zero_store", "snapshot")
    assert shrink.shrink(start, budget=clock) == [start]
    assert clock.said() == ""


def test_a_known_failure_is_filed_unshrunk_under_its_id(monkeypatch, tmp_path):
    monkeypatch.setattr(shrink, "shrink", lambda *a, **k: pytest.fail("a known failure was shrunk"))
    summary, clock = campaign.Summary(), Budget(60.0)
    first, second = _failure(IN_PLACE), _failure(IN_PLACE + SINE)  # two kernels, one known issue
    assert known.match(first) == known.match(second) == "read-then-overwrite"
    campaign._file_group(summary, [first], str(tmp_path), 12, "cpu", None, clock)
    campaign._file_group(summary, [second], str(tmp_path), 12, "cpu", None, clock)
    (finding,) = summary.findings
    assert (finding.known, finding.count, finding.constructs) == ("read-then-overwrite", 2, ("readback y[i]", "store"))
    assert finding.repro_path and "failures by class: read-then-overwrite 2 (known)" in campaign.table(summary)


def test_a_new_failure_is_shrunk(monkeypatch, tmp_path):
    """The negative twin: a failure no known entry matches goes through the shrinker, with the campaign's budget."""
    seen = []

    def fake_shrink(failure, *, rounds, device, log, budget):
        seen.append(budget)
        return [failure]

    monkeypatch.setattr(shrink, "shrink", fake_shrink)
    summary, clock = campaign.Summary(), Budget(60.0)
    campaign._file_group(summary, [_failure(SINE, "zero_store", "snapshot")], str(tmp_path), 12, "cpu", None, clock)
    assert seen == [clock] and summary.findings[0].status == "NEW"
    assert "failures by class: NEW 1" in campaign.table(summary)


def test_the_bar_moves_to_the_seconds_spent_and_shows_the_work(monkeypatch):
    from warp_zerostore import _progress
    from warp_zerostore.cli import fuzz

    made = []

    class Recorder:
        def __init__(self, total, description, unit, requested=None, leave=True, bar_format=None):
            made.append(self)
            self.total, self.n, self.postfix, self.requested = total, 0, "", requested

        def update(self, n=1):
            self.n += n

        def set_postfix_str(self, s="", refresh=True):
            self.postfix = s

        def close(self):
            pass

    monkeypatch.setattr(_progress, "bar", Recorder)
    parser = fuzz.add_parser(argparse.ArgumentParser().add_subparsers())
    args = parser.parse_args(["--minutes", "0.5"])
    bar, progress = fuzz.campaign_bar(args, "fuzz", lambda s: f"{s.kernels} kernels")
    progress(campaign.Summary(kernels=3), 4.4, "checking 3/4")
    assert (bar.total, bar.n, bar.postfix) == (30, 4, "3 kernels; checking 3/4")
    progress(campaign.Summary(kernels=9), 99.0, "done")  # past the budget: the bar stops at its end
    assert bar.n == 30 and bar.requested is None
    assert fuzz.campaign_bar(parser.parse_args(["--quiet"]), "fuzz", str)[0].requested is False


# -- end to end


#: `fuzz` as a user runs it, with the known table emptied: every failure is new, shrunk until the time is spent.
EVERY_FAILURE_NEW = (
    "import sys; from warp_zerostore.testing.fuzz import known; known.KNOWN.clear(); "
    "from warp_zerostore.cli import main; sys.exit(main(sys.argv[1:]))"
)


def test_fuzz_minutes_keeps_its_budget_with_failures_to_shrink(tmp_path):
    out = tmp_path / "repros"
    command = [sys.executable, "-c", EVERY_FAILURE_NEW, "fuzz", "--minutes", str(SECONDS / 60), "--seed", str(SEED)]
    command += ["--out", str(out), "--json"]
    started = time.monotonic()
    try:
        done = subprocess.run(command, capture_output=True, text=True, timeout=SECONDS + MARGIN)
    except subprocess.TimeoutExpired:
        pytest.fail(f"fuzz --minutes {SECONDS / 60:.2f} still ran after {SECONDS + MARGIN} s")
    wall = time.monotonic() - started
    summary = json.loads(done.stdout.strip().splitlines()[-1])
    assert wall < SECONDS + MARGIN and summary["seconds"] <= SECONDS + MARGIN
    if summary["kernels"] < FAILING_KERNEL:
        # a loaded machine (or a slow Warp: 1.9's builds) spent the budget before the failing kernel was checked:
        # the campaign still ends within its budget, finds nothing, exits 0 and says what it cut
        assert done.returncode == 0 and not summary["findings"], done.stdout + done.stderr
        assert summary["cut_for_time"].endswith(": time") and summary["cut_for_time"] in done.stdout
        return
    assert done.returncode == 1, done.stdout + done.stderr  # failures found
    assert summary["findings"]
    assert {f["status"] for f in summary["findings"]} <= {"NEW", "warned"}  # the known table was emptied
    assert summary["seconds"] <= SECONDS + MARGIN and summary["budget_seconds"] == SECONDS
    assert sorted(p.name for p in out.iterdir()) == sorted(f["repro"].split("/")[-1] for f in summary["findings"])
    if summary["cut_for_time"]:
        assert summary["cut_for_time"] in done.stdout and summary["cut_for_time"].endswith(": time")


def test_fuzz_programs_keeps_its_budget_with_a_failure_to_shrink(monkeypatch, tmp_path):
    """The program fuzzer, in this process, every failure taken as unexplained (so shrunk): seed 2's first build
    finds one; the campaign ends within its budget plus `MARGIN`, and says what it cut."""
    from warp_zerostore.differential import campaign as programs

    monkeypatch.setattr(programs, "explanation", lambda failure, labels: "")
    started = time.monotonic()
    summary = programs.run(minutes=SECONDS / 60, seed=2, out=str(tmp_path))
    assert time.monotonic() - started < SECONDS + MARGIN
    assert summary.programs > 0 and summary.new
    table = programs.table(summary)
    assert "failures by class: " in table and f"of a {SECONDS} s budget" in table
    assert not summary.cut or f"cut for time: {summary.cut}" in table
