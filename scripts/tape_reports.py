"""The worked reports of docs/tape-safety.md, one per cause, regenerated from runs: for each, a small program with
the bug, the report a Tape gives (its text), the remedy the report names, and the gradient before and after it
beside the right one (NumPy). Every figure in that section comes from this script.

    python scripts/tape_reports.py            # the Markdown section, on stdout
    python scripts/tape_reports.py --check    # exit 1 where a remedied gradient is not the right one

Paths in reports are shown relative to this script's folder.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import sys
import warnings

import numpy as np

import warp_zerostore as wp
from warp_zerostore import _compat

HERE = os.path.dirname(os.path.abspath(__file__)) + os.sep
X = np.array([1.0, 2.0, 3.0, 4.0])
N = len(X)

# -- the programs' kernels


@wp.kernel
def cube_into_claimed(x: wp.array(dtype=float), cursor: wp.array(dtype=int), out: wp.array(dtype=float)):
    slot = wp.atomic_add(cursor, 0, 1)  # a slot claimed: its value is used as an index
    out[slot] = x[slot] * x[slot] * x[slot] / 3.0


@wp.func
def claim(cursor: wp.array(dtype=int)):
    return wp.atomic_add(cursor, 0, 1)


@wp.kernel
def cube_into_helper_claimed(x: wp.array(dtype=float), cursor: wp.array(dtype=int), out: wp.array(dtype=float)):
    slot = claim(cursor)
    out[slot] = x[slot] * x[slot] * x[slot] / 3.0


@wp.func
def claim_kept(cursor: wp.array(dtype=int), slots: wp.array(dtype=int), i: int):
    slot = wp.atomic_add(cursor, 0, 1)
    slots[i] = slot
    return slot


@wp.func_replay(claim_kept)
def claim_kept_replay(cursor: wp.array(dtype=int), slots: wp.array(dtype=int), i: int):
    return slots[i]  # the remedy: the backward reads back the slot the forward claimed


@wp.kernel
def cube_into_replayed_claim(
    x: wp.array(dtype=float), cursor: wp.array(dtype=int), slots: wp.array(dtype=int), out: wp.array(dtype=float)
):
    i = wp.tid()
    slot = claim_kept(cursor, slots, i)
    out[slot] = x[slot] * x[slot] * x[slot] / 3.0


@wp.kernel(zero_store=True)
def write_2x(x: wp.array(dtype=float), y: wp.array(dtype=float)):
    i = wp.tid()
    y[i] = 2.0 * x[i]


@wp.kernel(zero_store=True)
def write_3x(x: wp.array(dtype=float), y: wp.array(dtype=float)):
    i = wp.tid()
    y[i] = 3.0 * x[i]


@wp.kernel
def square(x: wp.array(dtype=float), y: wp.array(dtype=float)):
    i = wp.tid()
    y[i] = x[i] * x[i]


@wp.kernel
def capped_double(x: wp.array(dtype=float), y: wp.array(dtype=float)):
    i = wp.tid()
    y[i] = wp.min(x[i], 10.0) * 2.0


@wp.kernel
def bump(x: wp.array(dtype=float)):
    i = wp.tid()
    x[i] = x[i] + 1.0


# -- runs


def _ones(n: int):
    return wp.ones(n, dtype=float)


@contextlib.contextmanager
def _reports(found: list):
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        yield
    found += [str(w.message).replace(HERE, "") for w in caught if issubclass(w.category, wp.OverwriteWarning)]


def atomic_body(remedied: bool):
    found: list = []
    x = wp.array(X, dtype=float, requires_grad=True)
    cursor, slots = wp.zeros(1, dtype=int), wp.zeros(N, dtype=int)
    out = wp.zeros(N, dtype=float, requires_grad=True)
    tape = wp.Tape(check="warn")
    with _reports(found):
        with tape:
            if remedied:
                wp.launch(cube_into_replayed_claim, dim=N, inputs=[x, cursor, slots, out])
            else:
                wp.launch(cube_into_claimed, dim=N, inputs=[x, cursor, out])
        tape.backward(grads={out: _ones(N)})
    return found, x.grad.numpy(), {"cursor after backward()": int(cursor.numpy()[0])}


def atomic_helper(remedied: bool):
    found: list = []
    x = wp.array(np.concatenate([X, X + N]), dtype=float, requires_grad=True)
    cursor, slots = wp.zeros(1, dtype=int), wp.zeros(N, dtype=int)
    out = wp.zeros(2 * N, dtype=float, requires_grad=True)  # room for the slots the helper's replay claims again
    tape = wp.Tape()
    with _reports(found):
        with tape:
            if remedied:
                wp.launch(cube_into_replayed_claim, dim=N, inputs=[x, cursor, slots, out])
            else:
                wp.launch(cube_into_helper_claimed, dim=N, inputs=[x, cursor, out])
        tape.backward(grads={out: wp.array([1.0] * N + [0.0] * N, dtype=float)})
    return found, x.grad.numpy()[:N], {"cursor after backward()": int(cursor.numpy()[0])}


def retain_grad(remedied: bool):
    found: list = []
    x_a, x_b = (wp.array(X, dtype=float, requires_grad=True) for _ in range(2))
    y = wp.zeros(N, dtype=float, requires_grad=True, retain_grad=not remedied)
    inspected = wp.zeros(N, dtype=float, requires_grad=True, retain_grad=True) if remedied else y
    tape = wp.Tape(snapshot=True)
    with _reports(found):
        with tape:
            wp.launch(write_2x, dim=N, inputs=[x_a, y])
            wp.launch(write_3x, dim=N, inputs=[x_b, inspected])  # the remedy: the value inspected, apart
        tape.backward(grads={inspected: _ones(N)})
    return found, x_a.grad.numpy(), {"x_b.grad": x_b.grad.numpy().tolist()}


def mutated(remedied: bool, through_numpy: bool = False):
    found: list = []
    x = wp.array(X, dtype=float, requires_grad=True)
    y = wp.zeros(N, dtype=float, requires_grad=True)
    read = wp.clone(x) if remedied else x  # the remedy: the launch reads a copy of its own
    tape = wp.Tape(check="warn")
    with _reports(found):
        with tape:
            wp.launch(square, dim=N, inputs=[read, y])
        if through_numpy:
            x.numpy()[:] += 1.0  # shared memory: no call of Warp's
        else:
            alias = wp.array(ptr=x.ptr, shape=x.shape, dtype=float, device=x.device)  # zero-copy, other object
            wp.launch(bump, dim=N, inputs=[alias])  # an in-place update after record, untaped
        tape.backward(grads={y: _ones(N)})
    return found, read.grad.numpy(), {}


def stale(reader, remedied: bool):
    found: list = []
    x = wp.array(X, dtype=float, requires_grad=True)
    y = wp.zeros(N, dtype=float, requires_grad=True)
    tape = wp.Tape(snapshot=True) if remedied else wp.Tape(measure=True)
    with _reports(found):
        with tape:
            wp.launch(reader, dim=N, inputs=[x, y])
            wp.launch(bump, dim=N, inputs=[x])  # in place, after the reader
        tape.backward(grads={y: _ones(N)})
    notes = [h.message().replace(HERE, "") for h in tape.hazards if h.measured is not None and not h.real]
    return found + notes, x.grad.numpy(), {}


CAUSES = [
    (
        "atomic replay, in the kernel's body",
        lambda r: atomic_body(r),
        X**2,
        "move the atomic into a `@wp.func` that also writes the slot to an array, with a `@wp.func_replay` that "
        "reads it back (`claim_kept` / `claim_kept_replay` in the script)",
    ),
    (
        "atomic replay, through a helper",
        lambda r: atomic_helper(r),
        X**2,
        "the same `@wp.func_replay`",
    ),
    (
        "retain_grad written twice",
        lambda r: retain_grad(r),
        np.zeros(N),
        "keep `retain_grad=True` only on an array written once: the value inspected goes to an array of its own",
    ),
    (
        "mutated after record, by a visible call",
        lambda r: mutated(r),
        2 * X,
        "give the launch a copy of its own (`wp.clone(x)`), or make the update before recording or on the Tape",
    ),
    (
        "mutated after record, through shared memory",
        lambda r: mutated(r, through_numpy=True),
        2 * X,
        "the same: a copy of its own for the launch",
    ),
    (
        "stale read, measured: an effect",
        lambda r: stale(square, r),
        2 * X,
        "record with `wp.Tape(snapshot=True)` (or write the update to a new array)",
    ),
    (
        "stale read, measured: no effect on this run",
        lambda r: stale(capped_double, r),
        np.full(N, 2.0),
        "none needed on this data; on data where `x` crosses 10 it would be, as for the effect above",
    ),
]


def _figures(values) -> str:
    return "[" + ", ".join(f"{v:g}" for v in np.ravel(values)) + "]"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="exit 1 where a remedied gradient is not right")
    args = parser.parse_args()
    wp.config.quiet = True
    wp.init()
    wrong = []
    out = [f"(warp-lang {wp.config.version}, {wp.get_device()}; `python scripts/tape_reports.py`)", ""]
    for title, run, right, remedy in CAUSES:
        if title.startswith("retain_grad") and not _compat.HAS_RETAIN_GRAD:
            out += [f"**{title}.** (no retain_grad before warp-lang 1.13)", ""]
            continue
        said, before, extra = run(False)
        _, after, extra_after = run(True)
        if not np.allclose(after, right):
            wrong.append(title)
        out += [f"**{title}.**", "", "What it says:", ""]
        out += [f"> {line}" for line in (said or ["(nothing)"])]
        out += ["", f"What to do: {remedy}.", ""]
        out.append(f"* gradient before: `{_figures(before)}`; after: `{_figures(after)}`; right: `{_figures(right)}`")
        for name, value in extra.items():
            out.append(f"* {name}: before `{value}`, after `{extra_after[name]}`")
        out.append("")
    print("\n".join(out))
    if wrong:
        print(f"remedied but not right: {', '.join(wrong)}", file=sys.stderr)
    return 1 if args.check and wrong else 0


if __name__ == "__main__":
    sys.exit(main())
