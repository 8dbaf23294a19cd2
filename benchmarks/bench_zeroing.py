"""Cost of zeroing: Tape backward of a four-store kernel, zero_store=True vs False vs unflagged stock Warp.

Each of 1M threads reads x[i] and stores four float arrays. The three kernels are recorded on one Tape each
and their backward passes timed interleaved in the same process (medians). This is the like-for-like anchor
for the zeroing adjoint: on a Tape, stock warp-lang >= 1.13 zeroes the overwritten gradients itself, so
True/stock compares two zeroing implementations; on warp-lang <= 1.12 stock accumulates, so True/False
(same header, zeroing on and off) is the cost of zeroing. Targets: True/stock <= 1.02 where stock zeroes,
True/False <= 1.05 on every version.
Usage: python benchmarks/bench_zeroing.py [--n 1000000] [--repeats 21] [--device cpu]
"""

from __future__ import annotations

import argparse

import numpy as np
from common import interleaved_medians, paired_ratio, report, taped_backward

import warp_zerostore as wp
from warp_zerostore._compat import STOCK_STORE_ZEROES

TARGET_TRUE_OVER_STOCK = 1.02
TARGET_TRUE_OVER_FALSE = 1.05


def _kernel(flag):
    @wp.kernel(zero_store=flag)
    def four_stores(
        x: wp.array(dtype=float),
        y0: wp.array(dtype=float),
        y1: wp.array(dtype=float),
        y2: wp.array(dtype=float),
        y3: wp.array(dtype=float),
    ):
        i = wp.tid()
        a = x[i]
        y0[i] = 2.0 * a
        y1[i] = 3.0 * a
        y2[i] = a * a
        y3[i] = wp.sin(a)

    return four_stores


KERNELS = {"zero_store=True": _kernel(True), "zero_store=False": _kernel(False), "stock": _kernel(None)}


def recorded_backward(kernel, n: int, device: str):
    """A Tape holding one launch of ``kernel``; returns (backward, reseed) callables."""
    x = wp.array(np.linspace(0.0, 1.0, n, dtype=np.float32), dtype=float, device=device, requires_grad=True)
    outs = [wp.zeros(n, dtype=float, device=device, requires_grad=True) for _ in range(4)]
    return taped_backward(kernel, n, [x], outs, device)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--n", type=int, default=1_000_000)
    parser.add_argument("--repeats", type=int, default=21)
    parser.add_argument("--device", default="cpu")
    args = parser.parse_args()
    wp.config.quiet = True
    wp.init()

    runs, setup = {}, {}
    for name, kernel in KERNELS.items():
        runs[name], setup[name] = recorded_backward(kernel, args.n, args.device)
    timings = interleaved_medians(runs, args.repeats, setup)
    figures = {clock: ratios(timings, clock) for clock in ("wall", "cpu")}

    stock_kind = "zeroes" if STOCK_STORE_ZEROES else "accumulates"
    for clock, f in figures.items():
        print(f"-- {CLOCKS[clock][2]}")
        for name, ms in f["median_ms"].items():
            label = f"stock ({stock_kind} on a Tape)" if name == "stock" else name
            print(f"Tape backward median, {label:<28}: {ms:.3f} ms")
        stock_target = f" (target <= {TARGET_TRUE_OVER_STOCK})" if STOCK_STORE_ZEROES else ""
        print(
            f"ratio True/stock: {f['ratio_true_over_stock']:.3f}{stock_target}, "
            f"per-round median {f['paired_ratio_true_over_stock']:.3f}"
        )
        print(
            f"ratio True/False: {f['ratio_true_over_false']:.3f} (target <= {TARGET_TRUE_OVER_FALSE}), "
            f"per-round median {f['paired_ratio_true_over_false']:.3f}"
        )
    report(
        "zeroing_tape_backward",
        {
            "device": args.device,
            "threads": args.n,
            "repeats": args.repeats,
            "stock_zeroes_on_tape": STOCK_STORE_ZEROES,
            **figures["wall"],
            "cpu_time": figures["cpu"],
            "target_true_over_stock": TARGET_TRUE_OVER_STOCK if STOCK_STORE_ZEROES else None,
            "target_true_over_false": TARGET_TRUE_OVER_FALSE,
            "timings": timings,
        },
    )


#: clock -> (median key, samples key, heading)
CLOCKS = {
    "wall": ("median_s", "samples_s", "wall time (the figure the targets are stated in)"),
    "cpu": ("cpu_median_s", "cpu_samples_s", "thread CPU time (leaves out waits for a core on a loaded machine)"),
}


def ratios(timings: dict, clock: str) -> dict:
    median_key, samples_key, _ = CLOCKS[clock]
    ms = {name: t[median_key] * 1e3 for name, t in timings.items()}
    return {
        "median_ms": ms,
        "ratio_true_over_stock": ms["zero_store=True"] / ms["stock"],
        "ratio_true_over_false": ms["zero_store=True"] / ms["zero_store=False"],
        "paired_ratio_true_over_stock": paired_ratio(timings, "zero_store=True", "stock", samples_key),
        "paired_ratio_true_over_false": paired_ratio(timings, "zero_store=True", "zero_store=False", samples_key),
    }


if __name__ == "__main__":
    main()
