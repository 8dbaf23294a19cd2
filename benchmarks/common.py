"""Shared by the benchmarks: interleaved repeated timing, medians, peak resident-set growth, and the JSON report."""

from __future__ import annotations

import contextlib
import json
import pathlib
import platform
import statistics
import time

RESULTS = pathlib.Path(__file__).resolve().parent / "results"


def interleaved_medians(runs: dict, repeats: int, setup: dict | None = None) -> dict:
    """Time each callable ``repeats`` times, alternating between them; return median seconds per name.

    ``setup[name]``, if given, runs untimed before each timed call of ``runs[name]``. Besides wall time, each
    entry has the calling thread's CPU time (``cpu_median_s``, ``cpu_samples_s``): on a shared machine it
    leaves out the time the thread waited for a core (it means little for GPU work, which other threads do).
    """
    samples = {name: [] for name in runs}
    cpu_samples = {name: [] for name in runs}
    for _ in range(repeats):
        for name, fn in runs.items():
            if setup and name in setup:
                setup[name]()
            start, cpu_start = time.perf_counter(), time.thread_time()
            fn()
            cpu_samples[name].append(time.thread_time() - cpu_start)
            samples[name].append(time.perf_counter() - start)
    return {
        name: {
            "median_s": statistics.median(s),
            "samples_s": s,
            "cpu_median_s": statistics.median(cpu_samples[name]),
            "cpu_samples_s": cpu_samples[name],
        }
        for name, s in samples.items()
    }


def taped_backward(kernel, dim: int, inputs: list, outputs: list, device: str):
    """A Tape holding one launch of ``kernel``; returns (backward, reseed) callables, after one warm-up run.

    ``reseed`` (untimed) sets every output gradient to one and zeroes the inputs' gradients: a zeroing backward
    consumes the output gradients, so every timed run starts from the same ones.
    """
    import warp  # noqa: PLC0415

    tape = warp.Tape()
    with tape:
        warp.launch(kernel, dim=dim, inputs=[*inputs, *outputs], device=device)

    def reseed():
        for y in outputs:
            y.grad.fill_(1.0)
        for x in inputs:
            if getattr(x, "grad", None) is not None:
                x.grad.zero_()
        warp.synchronize_device(device)

    def backward():
        tape.backward()
        warp.synchronize_device(device)

    reseed()
    backward()  # build and warm up
    return backward, reseed


def report(name: str, payload: dict) -> None:
    import warp  # noqa: PLC0415

    payload = {"benchmark": name, "warp": warp.config.version, "machine": platform.machine(), **payload}
    RESULTS.mkdir(exist_ok=True)
    device = str(payload.get("device", "cpu"))
    tag = "" if device == "cpu" else "-" + device.replace(":", "")  # GPU runs do not overwrite CPU results
    path = RESULTS / f"{name}-warp{warp.config.version}{tag}.json"
    path.write_text(json.dumps(payload, indent=2))
    print(json.dumps({k: v for k, v in payload.items() if k != "timings"}, indent=2))
    print(f"(full JSON with samples: {path})")


def paired_ratio(timings: dict, numerator: str, denominator: str, key: str = "samples_s") -> float:
    """Median over rounds of numerator/denominator, each round's two samples taken back to back.

    Less sensitive than a ratio of medians to load that drifts during the run (a shared machine).
    """
    pairs = zip(timings[numerator][key], timings[denominator][key])
    return statistics.median(a / b for a, b in pairs)


def _status_kib(field: str) -> int:
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith(field + ":"):
                return int(line.split()[1])
    raise RuntimeError(f"{field} not in /proc/self/status")


@contextlib.contextmanager
def peak_rss_growth():
    """Measure how far the resident set's peak (VmHWM) rises above its size at entry, within the block.

    Yields a dict whose ``"bytes"`` is set when the block ends. Linux only (``/proc/self``); run each side in its
    own child process, since freed memory is not always returned to the system.
    """
    result: dict = {}
    before = _status_kib("VmRSS")
    with open("/proc/self/clear_refs", "w") as f:
        f.write("5")  # reset VmHWM to the current RSS
    yield result
    result["bytes"] = (_status_kib("VmHWM") - before) * 1024
