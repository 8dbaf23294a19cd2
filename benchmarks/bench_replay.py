"""Cost of the replay log: Tape backward of a kernel that reads back its own stores, flagged against unflagged.

Three pairs, each flagged against the same kernel unflagged (same work; Warp's replay gives a wrong gradient):
* forwarded: each thread stores y[i] and z[i] and reads them back at the same index, which the replay
  resolves when generating code (store-to-load forwarding, no log);
* logged: the read-backs go through a helper's store and a run-time index, so the replay looks them up in
  the per-thread log;
* no read-back: stores only; flagged kernels keep Warp's code.
Both sides of each pair are timed interleaved in the same run (medians over --repeats rounds).
Targets: read-back True/stock <= 1.10; no read-back 1.00 (same code; the zeroing store adjoint's own cost is
bench_zeroing.py's).
Usage: python benchmarks/bench_replay.py [--n 1000000] [--repeats 21] [--device cpu]
"""

from __future__ import annotations

import argparse

import numpy as np
from common import interleaved_medians, paired_ratio, report, taped_backward

import warp_zerostore as wp

TARGET_READ_BACK = 1.10


@wp.func
def scaled_store(y: wp.array(dtype=float), i: int, s: float):
    y[i] = y[i] * s


def _forwarded(flag):
    @wp.kernel(zero_store=flag)
    def read_back(
        x: wp.array(dtype=float), index: wp.array(dtype=int), y: wp.array(dtype=float), z: wp.array(dtype=float)
    ):
        i = wp.tid()
        a = x[i]
        y[i] = a * a
        z[i] = y[i] + a
        y[i] = y[i] * a
        z[i] = z[i] * y[i]

    return read_back


def _logged(flag):
    @wp.kernel(zero_store=flag)
    def read_back_logged(
        x: wp.array(dtype=float), index: wp.array(dtype=int), y: wp.array(dtype=float), z: wp.array(dtype=float)
    ):
        i = wp.tid()
        a = x[i]
        j = index[i]
        y[i] = a * a
        z[i] = y[j] + a
        scaled_store(y, i, a)
        z[i] = z[j] * y[i]

    return read_back_logged


def _no_read_back(flag):
    @wp.kernel(zero_store=flag)
    def stores_only(
        x: wp.array(dtype=float), index: wp.array(dtype=int), y: wp.array(dtype=float), z: wp.array(dtype=float)
    ):
        i = wp.tid()
        a = x[i]
        y[i] = a * a
        z[i] = wp.sin(a) + a

    return stores_only


PAIRS = {
    "forwarded": {"zero_store=True": _forwarded(True), "stock": _forwarded(None)},
    "logged": {"zero_store=True": _logged(True), "stock": _logged(None)},
    "no read-back": {"zero_store=True": _no_read_back(True), "stock": _no_read_back(None)},
}


def recorded_backward(kernel, n: int, device: str):
    x = wp.array(np.linspace(0.1, 1.0, n, dtype=np.float32), dtype=float, device=device, requires_grad=True)
    index = wp.array(np.arange(n, dtype=np.int32), dtype=int, device=device)
    outs = [wp.zeros(n, dtype=float, device=device, requires_grad=True) for _ in range(2)]
    return taped_backward(kernel, n, [x, index], outs, device)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--n", type=int, default=1_000_000)
    parser.add_argument("--repeats", type=int, default=21)
    parser.add_argument("--device", default="cpu")
    args = parser.parse_args()
    wp.config.quiet = True
    wp.init()

    results = {}
    for pair, kernels in PAIRS.items():
        runs, setup = {}, {}
        for name, kernel in kernels.items():
            runs[name], setup[name] = recorded_backward(kernel, args.n, args.device)
        timings = interleaved_medians(runs, args.repeats, setup)
        ms = {name: t["median_s"] * 1e3 for name, t in timings.items()}
        ratio = ms["zero_store=True"] / ms["stock"]
        paired = paired_ratio(timings, "zero_store=True", "stock")
        target = f"target <= {TARGET_READ_BACK}" if pair != "no read-back" else "same code as stock's"
        print(
            f"{pair:>12}: backward median True {ms['zero_store=True']:.3f} ms, stock {ms['stock']:.3f} ms, "
            f"ratio {ratio:.3f} ({target}), per-round median {paired:.3f}"
        )
        results[pair] = {"median_ms": ms, "ratio_true_over_stock": ratio, "paired_ratio": paired}
    report(
        "replay_log_backward",
        {
            "device": args.device,
            "threads": args.n,
            "repeats": args.repeats,
            "target_read_back": TARGET_READ_BACK,
            **results,
        },
    )


if __name__ == "__main__":
    main()
