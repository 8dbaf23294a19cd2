"""Kernel and helper modules the tests import (``from helpers import kernels_x``)."""
