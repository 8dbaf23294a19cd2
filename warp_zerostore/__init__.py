"""warp_zerostore: NVIDIA Warp with a per-kernel ``zero_store`` flag for array store adjoints.

Use it in place of Warp: ``import warp_zerostore as wp``. Everything ``warp`` offers is here unchanged;
this package adds ``@wp.kernel(zero_store=...)``, the ``zero_store`` module option, the process default
``warp_zerostore.config.zero_store``, `effective_zero_store`, `copy_zero_store`, and a
`Tape` with overwrite checks and snapshots (``check=``, ``snapshot=``), `read_at_backward` (the adjoint method's
state, changed after record on purpose), and `jax_kernel` (Warp's, with
differentiable ``zero_store=True`` kernels bridged by `warp_zerostore.jax`). With every default left at None,
importing it changes nothing for any kernel.
"""

from __future__ import annotations

import logging as _logging

import warp as _warp

from . import (
    _compat,  # raises ImportError on an unsupported warp-lang
    _submodules,
    config,
)
from . import codegen as _codegen
from . import copy_adjoint as _copy_adjoint
from . import options as _options
from .codegen import HeaderNotFoundError, ReplayWarning
from .lints import AdjointWarning
from .options import copy_zero_store, effective_zero_store, get_module_options, kernel, set_module_options
from .tape import OverwriteError, OverwriteWarning, Tape, read_at_backward

__version__ = "0.2.0"

# Fallbacks are logged under "warp_zerostore.<module>"; silent unless the application configures logging.
_logging.getLogger(__name__).addHandler(_logging.NullHandler())

_options.install()
_codegen.install()
_submodules.install()
_copy_adjoint.install()

# Errors and warnings print as their public path (warp_zerostore.OverwriteError), not where they are defined.
for _public in (AdjointWarning, HeaderNotFoundError, OverwriteError, OverwriteWarning, ReplayWarning):
    _public.__module__ = __name__


def jax_kernel(kernel, *args, **kwargs):
    """Warp's ``jax_kernel``; a differentiable ``zero_store=True`` kernel goes through `warp_zerostore.jax`
    (whose backward never writes JAX's cotangents). See `warp_zerostore.jax.jax_kernel`.

    Args:
        kernel: The ``wp.Kernel`` to call from JAX.
        *args: Warp's own ``jax_kernel`` arguments, passed through.
        **kwargs: Warp's own ``jax_kernel`` keywords (``num_outputs``, ``enable_backward``, ...), passed through.

    Returns:
        A JAX-callable function, as Warp's ``jax_kernel`` returns.
    """
    from .jax import stock  # noqa: PLC0415 - JAX is an optional dependency

    return stock.jax_kernel(kernel, *args, **kwargs)


#: What this package defines or overrides; every other name resolves to ``warp``.
__all__ = [
    "AdjointWarning",
    "HeaderNotFoundError",
    "OverwriteError",
    "OverwriteWarning",
    "ReplayWarning",
    "Tape",
    "__version__",
    "config",
    "copy_zero_store",
    "effective_zero_store",
    "get_module_options",
    "jax_kernel",
    "kernel",
    "read_at_backward",
    "set_module_options",
]


def __getattr__(name):
    try:
        return getattr(_warp, name)
    except AttributeError:
        pass
    module = _submodules.warp_submodule(name) if not name.startswith("_") else None
    if module is not None:
        return module
    builtin = _compat.builtin_function(name)
    if builtin is not None:
        return builtin
    raise AttributeError(f"module 'warp_zerostore' has no attribute '{name}' (nor has 'warp')")


def __dir__():
    return sorted(set(dir(_warp)) | set(__all__))
