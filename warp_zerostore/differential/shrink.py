"""Cut a failing program down: rounds of one-step simplifications (``programs.shrink.candidates``: launches, arrays,
options, copies and kernel bodies), each round one build, the smallest candidate that still fails the same way
kept, until none does or the rounds are spent."""

from __future__ import annotations

from ..testing.fuzz.budget import Budget
from ..testing.fuzz.programs.grammar import with_program
from ..testing.fuzz.programs.shrink import MAX_CANDIDATES, candidates, normalized, size
from . import check, paths, verdicts


def fails_like(found, failure) -> bool:
    """Same path and kind, and worse than stock if ``failure`` is."""
    return found.path == failure.path and found.kind == failure.kind and (found.worse or not failure.worse)


def shrink(failure, *, rounds: int = 8, log=None, budget=None) -> verdicts.Failure:
    """The smallest failure found that fails like ``failure`` (only the paths it needs are run each round). With
    ``budget`` (`Budget`), each round takes the candidates that fit in the time left, smallest first; a failure it
    leaves no time for is recorded as cut ("not shrunk", or "shrunk in part" after some rounds)."""
    budget, best = budget or Budget(), failure
    tape_paths = tuple(p for p in paths.TAPE_PATHS if p in (paths.STOCK, failure.path, (failure.variant, "plain")))
    tape_paths += tuple(
        (failure.variant, t)
        for t in ("snapshot", "check")
        if failure.tape == "check" and (failure.variant, t) not in tape_paths
    )
    bridge = failure.tape if failure.tape in paths.BRIDGES else ""
    for done in range(rounds):
        program = best.case.program
        seen, cases = {program}, []
        for candidate in sorted((normalized(c) for c in candidates(program)), key=size):
            if candidate in seen or size(candidate) >= size(program):
                continue
            seen.add(candidate)
            case = with_program(best.case, candidate)
            if case is not None and (not bridge or not paths.applies(case.program, bridge)):
                cases.append(case)
            if len(cases) >= MAX_CANDIDATES:
                break
        if not cases:
            break
        found, complete = budget.shrink_round(
            cases,
            lambda fitting, stop, each: check.check_batch(
                fitting, tape_paths=tape_paths, bridges=(bridge,) if bridge else (), stop=stop, each=each
            ),
            f"shrinking: round {done + 1} of {rounds}",
        )
        same = [f for f in found.failures if fails_like(f, failure)] if found is not None else []
        if same:
            best = min(same, key=lambda f: size(f.case.program))
            if log is not None:
                log(f"shrunk to {size(best.case.program)}")
        elif not complete:  # not a local minimum: the time left did not check every candidate
            budget.cut("failure", "shrunk in part" if done else "not shrunk")
            break
        else:
            break
    return best


__all__ = ["fails_like", "shrink"]
