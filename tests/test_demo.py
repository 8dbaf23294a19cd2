"""``python -m warp_zerostore demo`` runs on the installed Warp and prints the seed table with its numbers."""

import subprocess
import sys


def test_the_demo_runs_and_prints_the_seed_numbers():
    done = subprocess.run(
        [sys.executable, "-m", "warp_zerostore", "demo"], capture_output=True, text=True, timeout=600, check=False
    )
    assert done.returncode == 0, done.stderr[-2000:]
    assert "x_a" in done.stdout, done.stdout
