"""The journal's cost: what a checking or snapshot Tape's hooks cost the program while they stay installed between
its recording and its ``backward()`` (`warp_zerostore.tape.journal`: the calls that change arrays, with their
``file:line``, for "mutated after record" reports).

The program is the forward-only one of ``bench_check_scaling.py`` (``forward_only_program.simulate``: 4 steps x 84
tiny launches of 12 kernels on 16 bodies, most without a backward), run with no Tape and on Warp's own Tape,
(a) with no package Tape held and (b) while a checking Tape recorded earlier awaits its ``backward()`` (its hooks
in: every launch goes through the hook, which logs what the launch's source writes, by call site). Printed: each
time, their ratio and the extra time per call, on wall time and on the thread's CPU time; the budget is <= 5 us of
CPU time per hooked call while a Tape holds the journal (the ratio follows from the launches' own cost: these are
the tiniest there are). Plus the host writes (``fill_``) the journal logs, per call.

Time: medians of interleaved runs, both sides in the same run. Usage: python benchmarks/bench_change_journal.py
[--repeats 15]
"""

from __future__ import annotations

import argparse
import contextlib
import warnings

import forward_only_program
import numpy as np
import warp
from common import interleaved_medians, report

import warp_zerostore as wp

BUDGET_US_PER_CALL = 5.0  # CPU time per hooked call while a Tape holds the journal


@wp.kernel
def _read(x: wp.array(dtype=float), y: wp.array(dtype=float)):
    i = wp.tid()
    y[i] = x[i] * x[i]


def _held_tape():
    """A checking Tape that recorded one launch and awaits its backward(): its hooks are in."""
    x = wp.ones(4, dtype=float, requires_grad=True)
    y = wp.zeros(4, dtype=float, requires_grad=True)
    tape = wp.Tape(check="warn")
    with tape:
        wp.launch(_read, dim=4, inputs=[x, y])
    return tape, y


def _compare(label: str, run, calls: int, repeats: int) -> dict:
    run()  # warm-up: kernels built
    held = {}

    def hold():
        held["tape"] = _held_tape()

    def let_go():
        tape, y = held.pop("tape", (None, None))
        if tape is not None:
            tape.backward(grads={y: wp.ones(4, dtype=float)})

    def hold_afresh():
        let_go()
        hold()

    # untimed: a held Tape is recorded before each timed run of the "held" side and differentiated before the next
    # run of the other (so the "without" side runs with no hook in)
    timings = interleaved_medians(
        {"without": run, "held": run}, repeats, setup={"without": let_go, "held": hold_afresh}
    )
    let_go()
    out = {"calls": calls, "timings": timings}
    for clock in ("median_s", "cpu_median_s"):
        held_s, plain_s = timings["held"][clock], timings["without"][clock]
        ratio, extra = held_s / plain_s, (held_s - plain_s) / calls * 1e6
        out[clock.replace("median_s", "ratio")] = ratio
        out[clock.replace("median_s", "extra_us_per_call")] = extra
        print(
            f"  {label}, {'wall' if clock == 'median_s' else 'cpu '}: held {held_s * 1e3:7.2f} ms, without "
            f"{plain_s * 1e3:7.2f} ms, ratio {ratio:5.2f}x, extra {extra:5.2f} us per call ({calls} calls; budget "
            f"<= {BUDGET_US_PER_CALL} us)"
        )
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--repeats", type=int, default=15)
    parser.add_argument("--steps", type=int, default=4)
    args = parser.parse_args()
    wp.config.quiet = True
    wp.init()
    launches = args.steps * forward_only_program.LAUNCHES_PER_STEP
    payload = {"repeats": args.repeats, "budget_us_per_call": BUDGET_US_PER_CALL}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", wp.OverwriteWarning)
        print("the forward-only program with no Tape, while a checking Tape awaits backward() or not:")
        payload["untaped"] = _compare(
            "no Tape",
            lambda: forward_only_program.simulate(contextlib.nullcontext(), args.steps),
            launches,
            args.repeats,
        )
        print("the same on Warp's own Tape:")
        payload["warp_tape"] = _compare(
            "warp.Tape", lambda: forward_only_program.simulate(warp.Tape(), args.steps), launches, args.repeats
        )
        arrays = [wp.zeros(16, dtype=float) for _ in range(8)]

        def fills():
            for _ in range(50):
                for a in arrays:
                    a.fill_(1.0)

        print("fill_ on 16-element arrays:")
        payload["fill"] = _compare("fill_", fills, 50 * len(arrays), args.repeats)
    payload["within_budget"] = all(
        payload[part]["cpu_extra_us_per_call"] <= BUDGET_US_PER_CALL for part in ("untaped", "warp_tape", "fill")
    )
    print(f"within budget (CPU time per call): {payload['within_budget']}")
    report("change_journal", payload)


if __name__ == "__main__":
    np.set_printoptions(precision=3)
    main()
