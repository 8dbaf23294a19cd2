"""Shared test set-up: Warp initialised once, devices to run on, hypothesis profiles."""

import os

import pytest
from hypothesis import HealthCheck, settings

import warp_zerostore as wp

wp.config.quiet = True
wp.init()

# Kernels build once per session; examples draw data and programs, not kernels.
settings.register_profile(
    "ci", max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow], derandomize=True
)
settings.register_profile("dev", max_examples=10, deadline=None, suppress_health_check=[HealthCheck.too_slow])
settings.register_profile("thorough", max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "ci"))

DEVICES = ["cpu"] + (["cuda:0"] if wp.is_cuda_available() else [])


def pytest_generate_tests(metafunc):
    if "device" in metafunc.fixturenames:
        metafunc.parametrize("device", DEVICES)


@pytest.fixture
def process_default():
    """Set ``warp_zerostore.config.zero_store`` for one test, then restore it."""
    saved = wp.config.zero_store

    def set_default(value):
        wp.config.zero_store = value

    yield set_default
    wp.config.zero_store = saved
