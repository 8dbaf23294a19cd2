"""warp_zerostore.testing.register_profiles, and hypothesis staying optional."""

import os
import subprocess
import sys
from datetime import timedelta

import pytest
from hypothesis import settings

from warp_zerostore.testing import register_profiles


def test_profiles_bound_examples_and_ci_is_derandomized():
    names = register_profiles()
    assert names == ["warp_zerostore-ci", "warp_zerostore-dev", "warp_zerostore-thorough"]
    ci = settings.get_profile("warp_zerostore-ci")
    assert ci.max_examples == 25 and ci.derandomize and ci.deadline is None and ci.print_blob
    assert settings.get_profile("warp_zerostore-thorough").max_examples == 300
    assert not settings.get_profile("warp_zerostore-dev").derandomize


def test_a_deadline_for_prebuilt_kernels():
    try:
        register_profiles(deadline=timedelta(seconds=2))
        assert settings.get_profile("warp_zerostore-ci").deadline == timedelta(seconds=2)
    finally:
        register_profiles()


@pytest.mark.skipif(
    os.environ.get("HYPOTHESIS_PROFILE", "ci") != "ci", reason="HYPOTHESIS_PROFILE picks another profile this run"
)
def test_the_session_runs_the_ci_profile_by_default():
    """tests/conftest.py loads `ci`, the package's warp_zerostore-ci (unless HYPOTHESIS_PROFILE says otherwise)."""
    assert settings().max_examples == 25 and settings().derandomize


BLOCKED = r"""
import sys
import warp_zerostore
assert "hypothesis" not in sys.modules, "import warp_zerostore imported hypothesis"
sys.modules["hypothesis"] = None  # as if not installed
import warp_zerostore.testing as wpt
assert callable(wpt.check_gradients) and callable(wpt.reference.backward)
try:
    from warp_zerostore.testing import programs
except ImportError as error:
    print(error)
else:
    raise SystemExit("programs imported without hypothesis")
"""


def test_hypothesis_is_optional():
    """`import warp_zerostore` never imports hypothesis; without it, check_gradients and the reference still
    import, and the strategies say which extra to install."""
    done = subprocess.run([sys.executable, "-c", BLOCKED], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert "needs hypothesis" in done.stdout and "pip install warp_zerostore[testing]" in done.stdout
