"""Backward-pass time of a store-heavy kernel, zero_store=True versus False, on the same Warp.

1M threads; each writes four scalar arrays and four components of a mat44 array. Target: ratio <= 1.10 on CPU.
Usage: python benchmarks/bench_store.py [--n 1000000] [--repeats 15] [--device cpu]
"""

from __future__ import annotations

import argparse

import numpy as np
from common import interleaved_medians, report

import warp_zerostore as wp
from warp_zerostore._compat import STOCK_STORE_ZEROES


def _kernel(flag):
    @wp.kernel(zero_store=flag)
    def store_heavy(
        x: wp.array(dtype=float),
        y0: wp.array(dtype=float),
        y1: wp.array(dtype=float),
        y2: wp.array(dtype=float),
        y3: wp.array(dtype=float),
        m: wp.array(dtype=wp.mat44),
    ):
        i = wp.tid()
        a = x[i]
        y0[i] = 2.0 * a
        y1[i] = 3.0 * a
        y2[i] = a * a
        y3[i] = wp.sin(a)
        m[i][0, 0] = a
        m[i][1, 1] = 2.0 * a
        m[i][2, 3] = a * a
        m[i][3, 2] = wp.cos(a)

    return store_heavy


KERNELS = {True: _kernel(True), False: _kernel(False), None: _kernel(None)}


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--n", type=int, default=1_000_000)
    parser.add_argument("--repeats", type=int, default=15)
    parser.add_argument("--device", default="cpu")
    args = parser.parse_args()
    wp.config.quiet = True
    wp.init()
    n, device = args.n, args.device

    def arrays():
        x = wp.array(np.linspace(0.0, 1.0, n, dtype=np.float32), dtype=float, device=device)
        outs = [wp.zeros(n, dtype=float, device=device) for _ in range(4)] + [
            wp.zeros(n, dtype=wp.mat44, device=device)
        ]
        adj_x = wp.zeros(n, dtype=float, device=device)
        adj_outs = [wp.ones(n, dtype=float, device=device) for _ in range(4)] + [
            wp.ones(n, dtype=wp.mat44, device=device)
        ]
        return [x] + outs, [adj_x] + adj_outs

    runs, setup = {}, {}
    for flag, kernel in KERNELS.items():
        inputs, adj_inputs = arrays()
        wp.launch(kernel, dim=n, inputs=inputs, device=device)  # build and warm up
        wp.launch(kernel, dim=n, inputs=inputs, adj_inputs=adj_inputs, adjoint=True, device=device)
        wp.synchronize_device(device)

        def backward(kernel=kernel, inputs=inputs, adj_inputs=adj_inputs):
            wp.launch(kernel, dim=n, inputs=inputs, adj_inputs=adj_inputs, adjoint=True, device=device)
            wp.synchronize_device(device)

        def reseed(adj_inputs=adj_inputs):
            # zero mode consumes the output gradients: give every run the same nonzero ones, untimed
            for a in adj_inputs[1:]:
                a.fill_(1.0)
            adj_inputs[0].zero_()
            wp.synchronize_device(device)

        runs[f"zero_store={flag}"] = backward
        setup[f"zero_store={flag}"] = reseed

    timings = interleaved_medians(runs, args.repeats, setup)
    ratio = timings["zero_store=True"]["median_s"] / timings["zero_store=False"]["median_s"]
    print(f"backward median, zero_store=True : {timings['zero_store=True']['median_s'] * 1e3:.2f} ms")
    print(f"backward median, zero_store=False: {timings['zero_store=False']['median_s'] * 1e3:.2f} ms")
    stock = timings["zero_store=None"]["median_s"]
    print(
        f"backward median, unflagged (stock {'zeroes' if STOCK_STORE_ZEROES else 'accumulates'}): {stock * 1e3:.2f} ms"
    )
    print(f"ratio True/False: {ratio:.3f} (target <= 1.10)")
    print(f"ratio True/stock: {timings['zero_store=True']['median_s'] / stock:.3f}")
    report(
        "backward_store_heavy",
        {
            "device": device,
            "threads": n,
            "repeats": args.repeats,
            "median_ms": {k: v["median_s"] * 1e3 for k, v in timings.items()},
            "ratio_true_over_false": ratio,
            "ratio_true_over_stock": timings["zero_store=True"]["median_s"] / stock,
            "target": 1.10,
            "timings": timings,
        },
    )


if __name__ == "__main__":
    main()
