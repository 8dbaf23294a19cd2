"""torch stays optional: the core never imports it, and ``warp_zerostore.torch`` says how to get it.

Runs with and without torch installed (each check in a fresh interpreter).
"""

import os
import pathlib
import subprocess
import sys

ROOT = pathlib.Path(__file__).resolve().parents[1]

CORE_MODULES = [
    "warp_zerostore",
    "warp_zerostore.options",
    "warp_zerostore.tape",
    "warp_zerostore.testing",
    "warp_zerostore.cli",
    "warp_zerostore.cli.demo",
    "warp_zerostore.cli.check",
    "warp_zerostore.cli.warp_suite",
]


def _python(code: str) -> subprocess.CompletedProcess:
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    return subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=120)


def test_core_never_imports_torch():
    imports = "; ".join(f"import {m}" for m in CORE_MODULES)
    done = _python(f"import sys; {imports}; import warp_zerostore as wp; wp.init(); print('torch' in sys.modules)")
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip().splitlines()[-1] == "False"


def test_bridge_without_torch_says_how_to_install_it():
    code = (
        "import sys; sys.modules['torch'] = None\n"  # what an interpreter without torch sees
        "try:\n    import warp_zerostore.torch\nexcept ImportError as e:\n    print(e)\n"
    )
    done = _python(code)
    assert done.returncode == 0, done.stderr
    assert "pip install 'warp_zerostore[torch]'" in done.stdout
