"""warp_zerostore.testing: property-based gradient checks for your own Warp kernels.

* `check_gradients` runs a function of Warp arrays on a Tape and compares its vector-Jacobian
  (or Jacobian-vector) products with central finite differences, in float64 where the function allows;
  a mismatch raises `GradientMismatch` (an ``AssertionError``) naming the worst element.
* hypothesis strategies: `dtypes`, `shapes`, `array_data`, `arrays`, and
  `programs`, launch sequences made of your kernels (each an `Op`) with overlapping
  windows and overwrites.
* `warp_zerostore.testing.reference`: an independent NumPy float64 reverse-mode interpreter of
  programs, for zero and accumulate store semantics.
* `kernels`: whole drawn Warp kernels with their inputs, for fuzzing Warp's autodiff
  (`warp_zerostore.testing.fuzz`; ``python -m warp_zerostore fuzz``).
* `register_profiles`: hypothesis profiles for CI.

The strategies and profiles need hypothesis (``pip install warp_zerostore[testing]``); the check and the
reference do not.
"""

from __future__ import annotations

from . import reference
from .check import GradientCheck, GradientMismatch, check_gradients, vjp
from .program import Launch, Op, Program

# Printed as warp_zerostore.testing.GradientMismatch, its public path.
GradientMismatch.__module__ = __name__

_NEED_HYPOTHESIS = ("dtypes", "shapes", "array_data", "arrays", "programs", "register_profiles", "kernels")

try:
    from .fuzz import kernels
    from .profiles import register_profiles
    from .strategies import array_data, arrays, dtypes, programs, shapes
except ModuleNotFoundError as _error:  # hypothesis is an optional dependency
    if _error.name is None or not _error.name.startswith("hypothesis"):
        raise
    _HYPOTHESIS_ERROR = _error

    def __getattr__(name):
        if name in _NEED_HYPOTHESIS:
            raise ImportError(
                f"warp_zerostore.testing.{name} needs hypothesis, which is not installed "
                f"({_HYPOTHESIS_ERROR}). Install it with `pip install warp_zerostore[testing]` "
                "(or `pip install 'hypothesis>=6.100'`)."
            )
        raise AttributeError(f"module 'warp_zerostore.testing' has no attribute '{name}'")


__all__ = [
    "GradientCheck",
    "GradientMismatch",
    "Launch",
    "Op",
    "Program",
    "array_data",
    "arrays",
    "check_gradients",
    "dtypes",
    "kernels",
    "programs",
    "reference",
    "register_profiles",
    "shapes",
    "vjp",
]
