"""The seed op (y = x0^2 * x1^2 * x2^2, float32) through the JAX bridge versus Warp's own ``jax_kernel``.

Both sides run the same kernel (no ``zero_store`` flag, where Warp's differentiable ``jax_kernel`` is right) on
the same arrays, each under ``jax.jit``: the forward alone, and forward + backward (``jax.grad`` of ``y.sum()``
for all three inputs). Time per call: medians of interleaved runs in this process, the sides' order flipped each round,
each call ending in ``block_until_ready``. Target: bridge/Warp <= 1.1 at 1k and 1M elements.

Usage: python benchmarks/bench_jax_bridge.py [--sizes 1000 1000000] [--repeats 100] [--small-repeats 400]
"""

# no `from __future__ import annotations`: Warp's differentiable jax_kernel reads the annotations unevaluated

import argparse
import statistics
import time

import jax
import jax.numpy as jnp
import numpy as np
import warp
from common import report
from seed_op import op_kernel

import warp_zerostore as wp
import warp_zerostore.jax as wpj

bridged = wpj.kernel_op(op_kernel, outputs={"y": "x0"})
bridged_unfilled = wpj.kernel_op(op_kernel, outputs={"y": "x0"}, zero_outputs=False, name="op_kernel_unfilled")
stock = warp.jax_kernel(op_kernel, enable_backward=True)

# "bridge" zero-fills its output before the launch (the default); Warp's jax_kernel does not, nor does
# "bridge, zero_outputs=False" (for kernels that write every element, as this one does).
SIDES = {
    "bridge": bridged,
    "bridge, zero_outputs=False": bridged_unfilled,
    "warp jax_kernel": lambda *xs: stock(*xs)[0],
}
BRIDGES = ("bridge", "bridge, zero_outputs=False")


def abba_medians(runs: dict, repeats: int) -> dict:
    """Like ``common.interleaved_medians``, but the order of the sides flips every repeat (A B, B A, ...): at 1M
    elements the first call of each round was measurably slower, whichever side it was."""
    samples = {name: [] for name in runs}
    names = list(runs)
    for r in range(repeats):
        for name in names if r % 2 == 0 else reversed(names):
            start = time.perf_counter()
            runs[name]()
            samples[name].append(time.perf_counter() - start)
    return {name: {"median_s": statistics.median(s), "samples_s": s} for name, s in samples.items()}


def programs(fn) -> dict:
    forward = jax.jit(fn)
    backward = jax.jit(jax.grad(lambda *xs: fn(*xs).sum(), argnums=(0, 1, 2)))
    return {"forward": forward, "forward+backward": backward}


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--sizes", type=int, nargs="+", default=[1000, 1_000_000])
    parser.add_argument("--repeats", type=int, default=100, help="interleaved runs at sizes >= 100k")
    parser.add_argument("--small-repeats", type=int, default=400, help="interleaved runs at sizes < 100k")
    args = parser.parse_args()
    wp.config.quiet = True
    wp.init()

    compiled = {side: programs(fn) for side, fn in SIDES.items()}
    results, ratios = {}, {}
    for n in args.sizes:
        rng = np.random.default_rng(0)
        xs = [jnp.asarray(rng.uniform(0.5, 1.5, n), dtype=jnp.float32) for _ in range(3)]
        for mode in ("forward", "forward+backward"):
            outs = {side: jax.block_until_ready(compiled[side][mode](*xs)) for side in SIDES}  # build, warm up
            for side in BRIDGES:  # the sides agree
                for a, b in zip(jax.tree.leaves(outs[side]), jax.tree.leaves(outs["warp jax_kernel"])):
                    np.testing.assert_allclose(a, b, rtol=1e-6)
            runs = {side: (lambda f=compiled[side][mode], xs=xs: jax.block_until_ready(f(*xs))) for side in SIDES}
            repeats = args.repeats if n >= 100_000 else args.small_repeats
            timings = abba_medians(runs, repeats)
            key = f"{mode} n={n}"
            results[key] = timings
            warp_s = timings["warp jax_kernel"]["median_s"]
            line = f"{key:>26}: warp jax_kernel {warp_s * 1e6:9.1f} us"
            for side in BRIDGES:
                ratios[f"{key}, {side}"] = timings[side]["median_s"] / warp_s
                line += f"; {side} {timings[side]['median_s'] * 1e6:9.1f} us, ratio {ratios[f'{key}, {side}']:.3f}"
            print(line + " (target <= 1.1)")
    report(
        "jax_bridge_seed_op",
        {
            "device": "cpu",
            "jax": jax.__version__,
            "sizes": args.sizes,
            "repeats": args.repeats,
            "small_repeats": args.small_repeats,
            "median_us": {k: {s: v[s]["median_s"] * 1e6 for s in v} for k, v in results.items()},
            "time_ratio_bridge_over_warp": ratios,
            "time_target": 1.1,
            "timings": results,
        },
    )


if __name__ == "__main__":
    main()
