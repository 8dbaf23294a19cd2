"""Kernel modules the tests import (``from helpers import kernels_x``): module level, so each builds once."""
