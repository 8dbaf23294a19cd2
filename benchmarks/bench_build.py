"""Module build time (codegen + compile), zero_store=True versus unflagged, on the same Warp.

Each build runs in a child process with an empty kernel cache, alternating flagged and unflagged.
Target: ratio <= 1.05. Usage: python benchmarks/bench_build.py [--repeats 5]
"""

from __future__ import annotations

import argparse
import os
import pathlib
import subprocess
import sys
import tempfile

from common import report

HERE = pathlib.Path(__file__).resolve().parent

CHILD = """
import time, warp_zerostore as wp
wp.config.quiet = True
wp.init()
import build_module
start = time.perf_counter()
wp.load_module(build_module, device="cpu")
print(time.perf_counter() - start)
"""


def build_once(flag: str) -> float:
    with tempfile.TemporaryDirectory() as cache:
        env = dict(
            os.environ, WARP_CACHE_PATH=cache, ZS_BENCH_FLAG=flag, PYTHONPATH=os.pathsep.join([str(HERE)] + sys.path)
        )
        out = subprocess.run([sys.executable, "-c", CHILD], env=env, capture_output=True, text=True, check=True)
        return float(out.stdout.strip().splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--repeats", type=int, default=5)
    args = parser.parse_args()
    import statistics  # noqa: PLC0415

    samples = {"true": [], "none": []}
    for _ in range(args.repeats):
        for flag in samples:
            samples[flag].append(build_once(flag))
    medians = {flag: statistics.median(s) for flag, s in samples.items()}
    ratio = medians["true"] / medians["none"]
    print(f"build median, zero_store=True : {medians['true'] * 1e3:.0f} ms")
    print(f"build median, unflagged       : {medians['none'] * 1e3:.0f} ms")
    print(f"ratio flagged/unflagged: {ratio:.3f} (target <= 1.05)")
    report(
        "module_build",
        {
            "repeats": args.repeats,
            "median_ms": {"zero_store=True": medians["true"] * 1e3, "unflagged": medians["none"] * 1e3},
            "ratio_flagged_over_unflagged": ratio,
            "target": 1.05,
            "timings": samples,
        },
    )


if __name__ == "__main__":
    main()
