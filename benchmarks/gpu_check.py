"""The GPU check (`make gpu-check`): the test suite on a CUDA device, the benchmarks on it, one summary.

On a machine with CUDA it runs, each step in its own process and none stopping the others:

1. the test suite with ``WARP_ZEROSTORE_TEST_DEVICES=cuda:0`` (tests/conftest.py parametrises every
   ``device`` test over that list; PyTorch-bridge tests skip on the GPU when PyTorch is a CPU build);
2. the store, zeroing, tile, PyTorch-bridge, checkpoint and Tape-at-scale benchmarks with ``--device cuda:0`` (the
   bridge one only when PyTorch has CUDA; the Tape one times the snapshot and checking Tapes' bookkeeping on the
   device, which records with no host transfer per launch);

then prints one summary table and its JSON (also written to
``benchmarks/results/gpu-check-warp<version>-<device>.json``) and exits 1 if a step failed. Without a CUDA
device it prints "no CUDA device: the GPU path is compiled, not run" and exits 0.

Usage: python benchmarks/gpu_check.py [--device cuda:0] [--quick] [--tests PATH ...] [--skip-tests]
                                      [--skip-benchmarks] [--dry-run]
``--device cpu`` runs the same steps on the CPU (to try the script itself on a machine without a GPU).
"""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import time
import xml.etree.ElementTree as ET
from pathlib import Path

BENCH_DIR = Path(__file__).resolve().parent
ROOT = BENCH_DIR.parent
RESULTS = BENCH_DIR / "results"
NO_CUDA = "no CUDA device: the GPU path is compiled, not run"

#: name -> (script, extra arguments of a full run, extra arguments of a --quick run, needs PyTorch with CUDA)
BENCHMARKS = {
    "store": ("bench_store.py", [], ["--repeats", "7"], False),
    "zeroing": ("bench_zeroing.py", [], ["--repeats", "9"], False),
    "tiles": ("bench_tiles.py", [], ["--repeats", "5"], False),
    "torch_bridge": ("bench_torch_bridge.py", [], ["--repeats", "7"], True),
    "checkpoint": ("bench_checkpoint.py", ["--repeats", "3"], ["--repeats", "3", "--steps", "200"], False),
    # the Tape's bookkeeping on the GPU: fingerprints and contents on the device, no transfer per launch
    "tape_scale": ("bench_tape_scale.py", ["--repeats", "5"], ["--quick"], False),
}


def probe(device: str) -> dict:
    """What this machine offers: warp-lang, whether ``device`` exists (and its name), PyTorch's CUDA."""
    import warp  # noqa: PLC0415

    warp.config.quiet = True
    warp.init()
    info = {"warp": warp.config.version, "device": device, "device_available": False, "device_name": None}
    try:
        d = warp.get_device(device)
        info["device_available"] = device == "cpu" or (d.is_cuda and warp.is_cuda_available())
        info["device_name"] = d.name
    except (RuntimeError, ValueError):
        pass
    if not info["device_available"]:
        return info
    try:
        import torch  # noqa: PLC0415

        info["torch"] = torch.__version__
        info["torch_cuda"] = bool(torch.cuda.is_available())
    except ImportError:
        info["torch"], info["torch_cuda"] = None, False
    return info


def run_step(cmd: list, env_vars: dict, timeout: int, dry_run: bool) -> dict:
    print("$ " + " ".join([f"{k}={v}" for k, v in env_vars.items()] + cmd), flush=True)
    if dry_run:
        return {"rc": None, "seconds": 0.0, "output": ""}
    start = time.perf_counter()
    try:
        proc = subprocess.run(
            cmd,
            check=False,
            cwd=ROOT,
            env={**os.environ, **env_vars},
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
            timeout=timeout,
        )
        rc, output = proc.returncode, proc.stdout
    except subprocess.TimeoutExpired as e:
        partial = e.stdout or ""
        rc, output = "timeout", partial.decode(errors="replace") if isinstance(partial, bytes) else partial
    seconds = time.perf_counter() - start
    print("\n".join(output.splitlines()[-15:]), flush=True)
    return {"rc": rc, "seconds": round(seconds, 1), "output": output}


def junit_counts(path: Path) -> dict:
    """passed/failed/errors/skipped from pytest's JUnit XML."""
    root = ET.parse(path).getroot()
    suites = [root] if root.tag == "testsuite" else list(root.iter("testsuite"))
    total = {k: sum(int(s.get(k, 0)) for s in suites) for k in ("tests", "failures", "errors", "skipped")}
    failed = [
        f"{case.get('classname')}::{case.get('name')}"
        for case in root.iter("testcase")
        if case.find("failure") is not None or case.find("error") is not None
    ]
    return {
        "passed": total["tests"] - total["failures"] - total["errors"] - total["skipped"],
        "failed": total["failures"],
        "errors": total["errors"],
        "skipped": total["skipped"],
        "failed_tests": failed[:50],
    }


def run_tests(args, info: dict) -> dict:
    junit = RESULTS / f"gpu-check-pytest-warp{info['warp']}-{_tag(args.device)}.xml"
    env_vars = {
        "WARP_ZEROSTORE_TEST_DEVICES": args.device,
        "HYPOTHESIS_PROFILE": os.environ.get("HYPOTHESIS_PROFILE", "ci"),
    }
    cmd = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", f"--junitxml={junit}", *args.tests]
    step = run_step(cmd, env_vars, args.test_timeout, args.dry_run)
    result = {
        "rc": step["rc"],
        "seconds": step["seconds"],
        "device": args.device,
        "ok": step["rc"] == 0 or args.dry_run,
    }
    if not args.dry_run and junit.is_file():
        result.update(junit_counts(junit))
    return result


def key_figures(payload: dict) -> dict:
    """The figures a reader compares across machines: medians and every ratio (and its target)."""
    out = {}
    for key, value in payload.items():
        if key == "median_ms" or "ratio" in key or "target" in key:
            out[key] = value
    return out


def run_benchmark(name: str, args, info: dict) -> dict:
    script, full, quick, needs_torch_cuda = BENCHMARKS[name]
    if needs_torch_cuda and args.device.startswith("cuda") and not info.get("torch_cuda"):
        reason = "PyTorch is missing" if not info.get("torch") else f"PyTorch {info['torch']} has no CUDA"
        print(f"-- {name}: skipped ({reason})", flush=True)
        return {"skipped": reason, "ok": True}
    cmd = [sys.executable, str(BENCH_DIR / script), "--device", args.device, *(quick if args.quick else full)]
    step = run_step(cmd, {}, args.bench_timeout, args.dry_run)
    result = {"rc": step["rc"], "seconds": step["seconds"], "ok": step["rc"] == 0 or args.dry_run}
    found = re.search(r"\(full JSON with samples: (.+?)\)\s*$", step["output"], re.MULTILINE)
    if found and Path(found.group(1)).is_file():
        result["json"] = found.group(1)
        result.update(key_figures(json.loads(Path(found.group(1)).read_text())))
    elif not args.dry_run:
        result["ok"] = False
        result["tail"] = step["output"].splitlines()[-5:]
    return result


def print_table(summary: dict) -> None:
    print("\n==== gpu-check summary " + "=" * 60)
    print(f"warp-lang {summary['warp']}, device {summary['device']} ({summary['device_name']})")
    tests = summary.get("tests")
    if tests:
        counts = ", ".join(f"{k} {tests[k]}" for k in ("passed", "failed", "errors", "skipped") if k in tests)
        print(f"tests on {summary['device']}: {'ok' if tests['ok'] else 'FAILED'} ({counts}; {tests['seconds']} s)")
        for name in tests.get("failed_tests", []):
            print(f"    failed: {name}")
    for name, b in summary.get("benchmarks", {}).items():
        if "skipped" in b:
            print(f"bench {name:<13} skipped: {b['skipped']}")
            continue
        ratios = ", ".join(f"{k}={v:.3f}" for k, v in b.items() if "ratio" in k and isinstance(v, float))
        print(f"bench {name:<13} {'ok' if b['ok'] else 'FAILED'}  {ratios}")
    if summary["status"] == "dry-run":
        print("dry run: the steps above were listed, not run")
    else:
        print(f"overall: {'ok' if summary['ok'] else 'FAILED'}")


def _tag(device: str) -> str:
    return device.replace(":", "")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--device", default="cuda:0")
    parser.add_argument("--quick", action="store_true", help="fewer benchmark repeats")
    parser.add_argument("--tests", nargs="*", default=["tests"], help="pytest paths (default: the whole suite)")
    parser.add_argument("--skip-tests", action="store_true")
    parser.add_argument("--skip-benchmarks", action="store_true")
    parser.add_argument("--test-timeout", type=int, default=3600)
    parser.add_argument("--bench-timeout", type=int, default=900)
    parser.add_argument("--dry-run", action="store_true", help="print the steps without running them")
    args = parser.parse_args()

    info = probe(args.device)
    if not info["device_available"]:
        print(NO_CUDA if args.device.startswith("cuda") else f"device {args.device} is not available")
        print(json.dumps({**info, "status": "no-cuda", "ok": True}))
        return 0

    RESULTS.mkdir(exist_ok=True)
    summary = {**info, "status": "dry-run" if args.dry_run else "ran"}
    if not args.skip_tests:
        summary["tests"] = run_tests(args, info)
    if not args.skip_benchmarks:
        summary["benchmarks"] = {name: run_benchmark(name, args, info) for name in BENCHMARKS}
    steps = [summary.get("tests", {"ok": True})] + list(summary.get("benchmarks", {}).values())
    summary["ok"] = all(s["ok"] for s in steps)

    print_table(summary)
    path = RESULTS / f"gpu-check-warp{info['warp']}-{_tag(args.device)}.json"
    path.write_text(json.dumps(summary, indent=2))
    print(json.dumps(summary))
    print(f"(summary JSON: {path})")
    return 0 if summary["ok"] else 1


if __name__ == "__main__":
    sys.exit(main())
