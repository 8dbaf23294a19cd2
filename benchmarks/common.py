"""Shared by the benchmarks: interleaved repeated timing, medians, and the JSON report."""

from __future__ import annotations

import json
import pathlib
import platform
import statistics
import time

RESULTS = pathlib.Path(__file__).resolve().parent / "results"


def interleaved_medians(runs: dict, repeats: int, setup: dict | None = None) -> dict:
    """Time each callable ``repeats`` times, alternating between them; return median seconds per name.

    ``setup[name]``, if given, runs untimed before each timed call of ``runs[name]``.
    """
    samples = {name: [] for name in runs}
    for _ in range(repeats):
        for name, fn in runs.items():
            if setup and name in setup:
                setup[name]()
            start = time.perf_counter()
            fn()
            samples[name].append(time.perf_counter() - start)
    return {name: {"median_s": statistics.median(s), "samples_s": s} for name, s in samples.items()}


def report(name: str, payload: dict) -> None:
    import warp  # noqa: PLC0415

    payload = {"benchmark": name, "warp": warp.config.version, "machine": platform.machine(), **payload}
    RESULTS.mkdir(exist_ok=True)
    path = RESULTS / f"{name}-warp{warp.config.version}.json"
    path.write_text(json.dumps(payload, indent=2))
    print(json.dumps({k: v for k, v in payload.items() if k != "timings"}, indent=2))
    print(f"(full JSON with samples: {path})")
