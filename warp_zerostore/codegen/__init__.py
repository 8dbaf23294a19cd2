"""Code generation of flagged kernels: Warp hooks, the store-adjoint table and the native header loader."""

from __future__ import annotations

from .hooks import install
from .native import HeaderNotFoundError

__all__ = ["HeaderNotFoundError", "install"]
