"""A kernel fuzzer for Warp's autodiff: draw whole kernels, check their Tape gradients against a reference.

* :mod:`.nodes` — the kernel language; :mod:`.grammar` — hypothesis strategies drawing it (:func:`kernels`);
* :mod:`.printer` — Warp source text; :mod:`.oracle` — a NumPy float64 forward run and central differences;
* :mod:`.batch` — many drawn kernels per Warp module, checked stock and with ``zero_store=True``;
* :mod:`.shrink` — a failure cut down to a minimal kernel; :mod:`.repro` — it as a standalone script.
"""

from .grammar import DEFAULT_FEATURES, FEATURES, Case, kernels

__all__ = ["Case", "DEFAULT_FEATURES", "FEATURES", "kernels"]
