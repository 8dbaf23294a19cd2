"""The loader of ``native/warp_zerostore.h``: where the header is, its digest, and the text flagged modules include."""

from __future__ import annotations

import functools
import hashlib
from pathlib import Path

from .. import _compat

HEADER_NAME = "warp_zerostore.h"

_PACKAGE_DIR = Path(__file__).resolve().parent.parent
#: Where the header is looked for: inside the installed package (wheel), then the source tree (editable).
SEARCH_PATH = [_PACKAGE_DIR / "native", _PACKAGE_DIR.parent / "native"]


class HeaderNotFoundError(FileNotFoundError):
    """The native header that flagged kernels need is missing from the installation."""


def header_path() -> Path:
    for folder in SEARCH_PATH:
        candidate = folder / HEADER_NAME
        if candidate.is_file():
            return candidate
    looked = ", ".join(str(folder / HEADER_NAME) for folder in SEARCH_PATH)
    raise HeaderNotFoundError(
        f"warp_zerostore cannot build kernels with zero_store=True/False: its native header {HEADER_NAME} "
        f"is missing (looked in {looked}). Reinstall the package (`pip install --force-reinstall "
        f"warp_zerostore`) or restore native/{HEADER_NAME} in the source tree."
    )


@functools.cache
def _prelude(path: str, mtime_ns: int) -> tuple[str, str]:
    """(prelude text, its digest) for one version of the header file; read and hashed once."""
    text = (
        f"// ---- begin warp_zerostore/native/{HEADER_NAME} ----\n"
        f"#define WP_ZS_HAS_RETAIN_GRAD {1 if _compat.HAS_RETAIN_GRAD else 0}\n"
        f"#define WP_ZS_TILE_INDEX_T {_compat.TILE_INDEX_TYPE}\n"
        f"#define WP_ZS_HAS_TILE_GRAD_ZERO_GLOBAL {1 if _compat.HAS_TILE_GRAD_ZERO_GLOBAL else 0}\n"
        f"#define WP_ZS_TILE_MAP_ADJOINT_DISPATCHES {1 if _compat.TILE_MAP_ADJOINT_DISPATCHES else 0}\n"
        f"#define WP_ZS_TILE_MAP_TAKES_RESULT {1 if _compat.TILE_MAP_TAKES_RESULT else 0}\n"
        f"{Path(path).read_text(encoding='utf-8')}\n"
        f"// ---- end warp_zerostore/native/{HEADER_NAME} ----\n"
    )
    return text, hashlib.sha256(text.encode("utf-8")).hexdigest()


def _current_prelude() -> tuple[str, str]:
    path = header_path()
    return _prelude(str(path), path.stat().st_mtime_ns)


def module_prelude() -> str:
    """The text placed into the source of a module that holds a flagged kernel (CPU and CUDA alike)."""
    return _current_prelude()[0]


def header_digest() -> str:
    """Digest of what flagged modules include; part of each flagged kernel's hash."""
    return _current_prelude()[1]
