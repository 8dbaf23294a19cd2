"""Backward time of a tiled matmul (512x512, 32x32 tiles), zero_store=True versus False, on the same Warp.

Target: ratio <= 1.05 on CPU. Usage: python benchmarks/bench_tiles.py [--n 512] [--tile 32] [--repeats 7]
"""

from __future__ import annotations

import argparse

import numpy as np
from common import interleaved_medians, report

import warp_zerostore as wp

N = 512
TILE = 32


def _kernel(flag):
    @wp.kernel(zero_store=flag)
    def tiled_matmul(A: wp.array2d(dtype=float), B: wp.array2d(dtype=float), C: wp.array2d(dtype=float)):
        i, j = wp.tid()
        acc = wp.tile_zeros(shape=(TILE, TILE), dtype=float, storage="shared")
        for k in range(N // TILE):
            a = wp.tile_load(A, shape=(TILE, TILE), offset=(i * TILE, k * TILE))
            b = wp.tile_load(B, shape=(TILE, TILE), offset=(k * TILE, j * TILE))
            wp.tile_matmul(a, b, acc)
        wp.tile_store(C, acc, offset=(i * TILE, j * TILE))

    return tiled_matmul


KERNELS = {True: _kernel(True), False: _kernel(False)}


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--repeats", type=int, default=7)
    parser.add_argument("--device", default="cpu")
    parser.add_argument("--block-dim", type=int, default=64)
    args = parser.parse_args()
    wp.config.quiet = True
    wp.init()
    device = args.device
    rng = np.random.default_rng(0)
    A = wp.array(rng.random((N, N), dtype=np.float32), dtype=float, device=device)
    B = wp.array(rng.random((N, N), dtype=np.float32), dtype=float, device=device)
    grid = [N // TILE, N // TILE]

    runs, setup = {}, {}
    for flag, kernel in KERNELS.items():
        C = wp.zeros((N, N), dtype=float, device=device)
        adj = [wp.zeros((N, N), dtype=float, device=device) for _ in range(2)] + [
            wp.ones((N, N), dtype=float, device=device)
        ]
        wp.launch_tiled(kernel, dim=grid, inputs=[A, B, C], block_dim=args.block_dim, device=device)

        def backward(kernel=kernel, C=C, adj=adj):
            wp.launch_tiled(
                kernel,
                dim=grid,
                inputs=[A, B, C],
                adj_inputs=adj,
                adjoint=True,
                block_dim=args.block_dim,
                device=device,
            )
            wp.synchronize_device(device)

        def reseed(adj=adj):
            adj[0].zero_()
            adj[1].zero_()
            adj[2].fill_(1.0)
            wp.synchronize_device(device)

        runs[f"zero_store={flag}"], setup[f"zero_store={flag}"] = backward, reseed
        reseed()
        backward()  # build and warm up

    timings = interleaved_medians(runs, args.repeats, setup)
    ratio = timings["zero_store=True"]["median_s"] / timings["zero_store=False"]["median_s"]
    for name, t in timings.items():
        print(f"backward median, {name:16}: {t['median_s'] * 1e3:.1f} ms")
    print(f"ratio True/False: {ratio:.3f} (target <= 1.05)")
    report(
        "backward_tiled_matmul",
        {
            "device": device,
            "n": N,
            "tile": TILE,
            "block_dim": args.block_dim,
            "repeats": args.repeats,
            "median_ms": {k: v["median_s"] * 1e3 for k, v in timings.items()},
            "ratio_true_over_false": ratio,
            "target": 1.05,
            "timings": timings,
        },
    )


if __name__ == "__main__":
    main()
