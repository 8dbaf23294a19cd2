"""`make gpu-check` without a CUDA device: it says the GPU path is compiled, not run, and exits 0."""

import json
import os
import subprocess
import sys
from pathlib import Path

SCRIPT = Path(__file__).resolve().parent.parent / "benchmarks" / "gpu_check.py"


def run_gpu_check(*args):
    env = dict(os.environ, CUDA_VISIBLE_DEVICES="")  # hides every GPU, on a GPU machine too
    return subprocess.run(
        [sys.executable, str(SCRIPT), *args], check=False, env=env, capture_output=True, text=True, timeout=300
    )


def test_without_cuda_it_says_so_and_exits_0():
    proc = run_gpu_check()
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.splitlines()
    assert "no CUDA device: the GPU path is compiled, not run" in lines
    summary = json.loads(lines[-1])
    assert summary["status"] == "no-cuda" and summary["device_available"] is False


def test_with_a_device_it_lists_the_steps_instead():
    # negative twin: where the device exists the fallback message is not printed and the steps are planned
    proc = run_gpu_check("--device", "cpu", "--dry-run", "--tests", "tests/test_seed_program.py")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "no CUDA device" not in proc.stdout
    steps = [line for line in proc.stdout.splitlines() if line.startswith("$ ")]
    assert len(steps) == 7 and "WARP_ZEROSTORE_TEST_DEVICES=cpu" in steps[0] and "pytest" in steps[0]
    assert all("--device cpu" in step for step in steps[1:])
    assert any("bench_checkpoint.py" in step for step in steps)
    assert any("bench_tape_scale.py" in step for step in steps)  # the Tape's bookkeeping on the device
