"""Kernel and worker modules the tests import (``from helpers import kernels_x``); not tests themselves."""
