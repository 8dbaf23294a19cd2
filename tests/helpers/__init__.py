"""Kernel modules of the tests (built once per session), imported as ``from helpers import kernels_x``."""
