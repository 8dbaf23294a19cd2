"""Drawn launch programs checked per second with warp_zerostore.testing, on one device (CPU by default).

Draws N programs once (hypothesis, derandomized: 1-6 launches of four elementwise zero_store kernels over
five arrays of 1-5 elements), then times, over interleaved repeats: check_gradients in vjp and jvp mode,
and one Tape VJP compared with the NumPy reference. Prints programs per second (N / median) and JSON.
Usage: python benchmarks/bench_testing.py [--programs 200] [--repeats 5] [--dtype float32|float64|vec3|mat22]
"""

import argparse
import pathlib
import sys

import numpy as np
from common import interleaved_medians, report
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st

import warp_zerostore as wp
import warp_zerostore.testing as wpt
from warp_zerostore.testing import reference

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent.parent / "tests"))

# the property tests' elementwise ops (kernels, Op descriptions, NumPy rules): what they check, timed here
from helpers import kernels_property as kp  # noqa: E402


def draw_programs(dtype: str, count: int) -> list:
    T = kp.DTYPES[dtype]
    drawn = []

    @settings(
        max_examples=count,
        derandomize=True,
        database=None,
        deadline=None,
        phases=[Phase.generate],
        suppress_health_check=list(HealthCheck),
    )
    @given(
        program=wpt.programs(kp.OPS[(dtype, True)], {n: T for n in ("x0", "x1", "t0", "t1", "t2")}),
        seed=st.integers(0, 2**31),
    )
    def collect(program, seed):
        drawn.append((program, seed))

    collect()
    return drawn


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--programs", type=int, default=200)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--dtype", default="float32", choices=sorted(kp.DTYPES))
    parser.add_argument("--device", default="cpu")
    args = parser.parse_args()
    wp.config.quiet = True
    wp.init()
    drawn = draw_programs(args.dtype, args.programs)
    device = args.device

    def check(mode):
        def run():
            for program, seed in drawn:
                wpt.check_gradients(program, program.arrays(device), mode=mode, seed=seed)

        return run

    def against_reference():
        for program, seed in drawn:
            rng = np.random.default_rng(seed)
            seeds = {n: rng.uniform(-1, 1, v.shape) for n, v in program.data.items()}
            _, grads = wpt.vjp(program, program.arrays(device), seeds)
            expected = reference.backward(program, kp.RULES, seeds, zero=True)
            for name in grads:
                np.testing.assert_allclose(grads[name], expected[name], rtol=1e-4, atol=1e-4)

    runs = {
        "check_gradients vjp": check("vjp"),
        "check_gradients jvp": check("jvp"),
        "tape vjp vs reference": against_reference,
    }
    for fn in runs.values():  # build and warm up
        fn()
    timings = interleaved_medians(runs, args.repeats)
    per_second = {name: len(drawn) / t["median_s"] for name, t in timings.items()}
    launches = sum(len(p.launches) for p, _ in drawn) / len(drawn)
    elements = sum(p.shape[0] for p, _ in drawn) / len(drawn)
    print(
        f"{len(drawn)} drawn {args.dtype} programs on {device}: {launches:.1f} launches, {elements:.1f} elements per array on average"
    )
    for name, rate in per_second.items():
        print(f"{name:>24}: {rate:8.1f} programs/s  ({timings[name]['median_s'] * 1e3 / len(drawn):.2f} ms each)")
    report(
        f"testing_programs_{args.dtype}",
        {
            "device": device,
            "dtype": args.dtype,
            "programs": len(drawn),
            "repeats": args.repeats,
            "mean_launches": launches,
            "mean_elements_per_array": elements,
            "programs_per_second": per_second,
            "timings": timings,
        },
    )


if __name__ == "__main__":
    main()
