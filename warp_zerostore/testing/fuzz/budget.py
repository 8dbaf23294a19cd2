"""A fuzzing campaign's time budget: work sized to the time left, and what was cut for time, named.

The budget bounds the whole run of both fuzzers (kernels: `campaign`; programs:
`warp_zerostore.differential.campaign`): drawing, building, checking, shrinking and writing repros. A build
cannot be stopped once started (Warp compiles in C++), so each is sized beforehand: `Budget.fit` gives how many
cases fit in half the time left at the cost per case measured on the last build of the same kind (build and
check together; before any, a first guess, `FIRST_GUESS`), and never more than twice the largest build measured
(`GROWTH`). Half, so that a build costlier than its estimate (drawn cases differ in size) overruns by little, and
the last builds shrink towards the deadline; twice, so that a build Warp's kernel cache served (a seed run
before) cannot make the next, compiled one many times larger than its cost allows. Checking stops at the
deadline (`Budget.expired`), and so does each shrinking round, whose candidates (smallest first) are cut to those
that fit (`Budget.shrink_round`). What a campaign cuts for time (a failure not shrunk, cases built but not
checked) is recorded (`Budget.cut`) and said in its summary. A cut only leaves work undone; it never changes a
verdict.

`Stream` keeps a campaign's draws independent of its build sizes: cases are drawn in fixed batches, each from its
own seed, and taken in builds of any size, so a seed checks the same kernels in the same order, whatever the
machine's speed; a longer budget checks a longer prefix of the same sequence.
"""

from __future__ import annotations

import collections
import math
import time

#: Seconds per case assumed before any build has been measured: it sizes only the first build (at most half the
#: budget), never a verdict. Measured on warp-lang 1.19.0 at -O0, 2 shared CPU cores, load 3-7: 0.3 to 1.1 s a
#: drawn kernel, 1.3 s a drawn program, built and checked (docs/testing.md, "The budget").
FIRST_GUESS = 2.0
#: The share of the time left one build may take, by its estimate.
SHARE = 0.5
#: A build holds at most this many times the cases of the largest build measured so far.
GROWTH = 2


class Budget:
    """``seconds`` of wall-clock time from now; ``report(doing)`` is told what the campaign starts doing.

    Example::

        budget = Budget(60.0)
        size = budget.fit(64)  # how many of 64 cases to build now; 0: no time left for one
    """

    def __init__(self, seconds: float = math.inf, report=None):
        self.seconds = float(seconds)  # inf: no limit (a shrink run on its own)
        self.start = time.monotonic()
        self.cuts: collections.Counter = collections.Counter()  # (noun, what befell it) -> how many
        self._per_case: dict = {}  # kind of build -> seconds per case, measured on the last one
        self._largest = 0  # cases in the largest build measured
        self._report = report

    def elapsed(self) -> float:
        return time.monotonic() - self.start

    def left(self) -> float:
        return max(0.0, self.seconds - self.elapsed())

    def expired(self) -> bool:
        return self.elapsed() >= self.seconds

    def measure(self, kind: str, cases: int, seconds: float) -> None:
        """A build of ``cases`` of ``kind`` ("batch", "shrink") took ``seconds`` to build and check."""
        if cases > 0:
            self._per_case[kind] = seconds / cases
            self._largest = max(self._largest, cases)

    def fit(self, wanted: int, kind: str = "batch") -> int:
        """How many of ``wanted`` cases one build of ``kind`` may take now: those whose estimated cost fits in
        `SHARE` of the time left (a kind not measured yet costs what a batch did, else `FIRST_GUESS`), at most
        `GROWTH` times the largest build measured."""
        if math.isinf(self.seconds):
            return wanted
        if self._largest:
            wanted = min(wanted, GROWTH * self._largest)
        per_case = self._per_case.get(kind) or self._per_case.get("batch") or FIRST_GUESS
        return max(0, min(wanted, int(SHARE * self.left() / per_case)))

    def shrink_round(self, candidates: list, check, doing: str) -> tuple:
        """One shrinking round within the budget: ``check(fitting, stop, each)`` (a fuzzer's ``check_batch``) on the
        first ``candidates`` (smallest first) that fit in the time left. Returns its result (None when none fit)
        and whether every candidate was checked: if not and none failed, the shrink is cut, not at a minimum."""
        fitting = candidates[: self.fit(len(candidates), "shrink")]
        if not fitting:
            return None, False
        self.report(f"{doing}, {len(fitting)} candidates")
        checked, started = [], time.monotonic()
        result = check(fitting, self.expired, checked.append)
        if len(checked) == len(fitting):
            self.measure("shrink", len(fitting), time.monotonic() - started)
        return result, len(checked) == len(candidates)

    def cut(self, noun: str, what: str, count: int = 1) -> None:
        """``count`` of ``noun`` (singular) cut for time: ``cut("failure", "not shrunk")``."""
        if count > 0:
            self.cuts[(noun, what)] += count

    def report(self, doing: str) -> None:
        if self._report is not None:
            self._report(doing)

    def said(self) -> str:
        """What was cut for time, as a sentence ("" when nothing was): ``1 failure not shrunk: time``."""
        parts = [f"{n} {noun}{'' if n == 1 else 's'} {what}" for (noun, what), n in self.cuts.items()]
        return "; ".join(parts) + ": time" if parts else ""


class Stream:
    """Cases drawn ``draw(k)`` for k = 0, 1, 2, ... (a fixed batch per call, each from its own seed), taken in
    builds of any size (`take`): the sequence of cases is the same whatever the sizes."""

    def __init__(self, draw):
        self._draw = draw
        self._queue: collections.deque = collections.deque()
        self._batches = 0

    def take(self, count: int) -> list:
        while len(self._queue) < count:
            drawn = self._draw(self._batches)
            self._batches += 1
            if not drawn:
                break
            self._queue.extend(drawn)
        return [self._queue.popleft() for _ in range(min(count, len(self._queue)))]


__all__ = ["Budget", "FIRST_GUESS", "GROWTH", "SHARE", "Stream"]
