"""``python -m warp_zerostore demo`` runs on the installed Warp and prints the seed table with its numbers."""

import subprocess
import sys


def test_the_demo_runs_and_prints_the_seed_numbers():
    done = subprocess.run(
        [sys.executable, "-m", "warp_zerostore", "demo"], capture_output=True, text=True, timeout=600, check=False
    )
    assert done.returncode == 0, done.stderr[-2000:]
    assert "x_a" in done.stdout, done.stdout
    # beyond the seed: the snapshot Tape makes the in-place update exact, the replay the read-back, check names it
    rows = {line.split("  ")[0]: line.split()[-4:] for line in done.stdout.splitlines() if ": d(x^" in line}
    assert rows["in place, twice: d(x^4)/dx"][2:] == ["108.0", "108.0"], done.stdout
    assert rows["read-back in a thread: d(x^3)/dx"][1:] == ["12.0", "12.0", "12.0"], done.stdout
    assert "stale read: launch #0 (square_in_place) writes argument 'x', which it reads first" in done.stdout
