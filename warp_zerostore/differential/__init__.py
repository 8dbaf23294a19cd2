"""Every path of the package against stock Warp and an independent reference, on drawn launch sequences.

A room above the features: it runs the programs of `warp_zerostore.testing.fuzz.programs` (grammar, printer,
reference: no Tape, no bridge) on the package's Tapes (`tape`), its PyTorch and JAX bridges and a checkpointed
rollout (`checkpoint`), which the features may not import from each other.

* `batch` — many programs' kernels and host functions per Warp build; `paths` — one program on one path;
* `bridges` — the torch and JAX paths (the one module that imports torch and jax, on call);
* `verdicts` — wrong, worse than stock, check mode's misses and false alarms; `check` — a batch, judged;
* `shrink` — a failing program cut down; `repro` — it as a standalone script; `campaign` — draw, check, shrink,
  file, and the summary table (per Warp version too: `matrix`).
"""
