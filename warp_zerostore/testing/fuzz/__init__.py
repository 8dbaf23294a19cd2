"""A kernel fuzzer for Warp's autodiff: draw whole kernels, check their Tape gradients against a reference.

* `nodes` — the kernel language; `grammar` — hypothesis strategies drawing it (`kernels`);
* `printer` — Warp source text; `oracle` — a NumPy float64 forward run and central differences;
* `batch` — many drawn kernels per Warp module, checked stock and with ``zero_store=True``;
* `shrink` — a failure cut down to a minimal kernel; `repro` — it as a standalone script;
* `budget` — a campaign's time: builds and shrinking rounds sized to the time left, what was cut; `campaign` —
  builds, verdicts and filing (``python -m warp_zerostore fuzz``);
* `programs` — launch sequences of drawn kernels: their grammar, printer and reference; they run on
  every path of the package in `warp_zerostore.differential` (``python -m warp_zerostore fuzz --programs``).
"""

from .grammar import DEFAULT_FEATURES, FEATURES, Case, kernels

__all__ = ["Case", "DEFAULT_FEATURES", "FEATURES", "kernels"]
