"""Shared test set-up: Warp initialised once, devices to run on, hypothesis profiles; no Tape outlives its test
holding the journal's hooks."""

import gc
import os

import pytest
from hypothesis import settings

import warp_zerostore as wp
from warp_zerostore.tape import tape as tape_safety
from warp_zerostore.tape.journal import JOURNAL
from warp_zerostore.testing import register_profiles

wp.config.quiet = True
wp.init()

# Kernels build once per session; examples draw data and programs, not kernels. The short names are the
# package's profiles: ci (25 examples, derandomized), dev (10), thorough (300).
for _short, _name in zip(("ci", "dev", "thorough"), register_profiles()):
    settings.register_profile(_short, parent=settings.get_profile(_name))
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "ci"))

DEVICES = ["cpu"] + (["cuda:0"] if wp.is_cuda_available() else [])
# `make gpu-check` runs the suite on cuda:0 only: WARP_ZEROSTORE_TEST_DEVICES=cuda:0 (comma-separated list).
if os.environ.get("WARP_ZEROSTORE_TEST_DEVICES"):
    DEVICES = [d.strip() for d in os.environ["WARP_ZEROSTORE_TEST_DEVICES"].split(",") if d.strip()]


def pytest_generate_tests(metafunc):
    if "device" in metafunc.fixturenames:
        metafunc.parametrize("device", DEVICES)


def pytest_runtest_setup(item):
    # A GPU machine whose PyTorch is a CPU build still runs the Warp tests on cuda:0; the bridge's skip.
    device = getattr(getattr(item, "callspec", None), "params", {}).get("device", "cpu")
    torch = getattr(item.module, "torch", None)
    if str(device).startswith("cuda") and hasattr(torch, "cuda") and not torch.cuda.is_available():
        pytest.skip(f"{device}: this PyTorch has no CUDA (a CUDA build of torch==2.13.0 tests the bridge on the GPU)")


def pytest_runtest_teardown(item, nextitem):
    # A checking or snapshot Tape holds the journal's hooks until its backward(), reset() or collection. One left
    # alive by a test without a backward (a docstring example's global, which Warp's kernel registry keeps) lets go
    # here, so that each test starts with the hooks out, as after import.
    if not JOURNAL.holders:
        return
    gc.collect()
    if JOURNAL.holders:
        for tape in [o for o in gc.get_objects() if isinstance(o, tape_safety.Tape)]:
            tape._release_journal()


@pytest.fixture
def process_default():
    """Set ``warp_zerostore.config.zero_store`` for one test, then restore it."""
    saved = wp.config.zero_store

    def set_default(value):
        wp.config.zero_store = value

    yield set_default
    wp.config.zero_store = saved
