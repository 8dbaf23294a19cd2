"""Hashing of flagged kernels: a kernel whose effective mode is True or False gets Warp's hash salted with the
mode, the native header's digest and the code generator's source, so flipping a flag (kernel, module or process)
or changing what generates flagged code rebuilds; an unflagged kernel keeps Warp's hash. A flagged kernel's build
is remembered by its salted hash (`replay_records`); Warp's own wrong adjoints in its source are warned where its
backward first runs (`adjoint_lints`), not here: a kernel no backward runs has no wrong gradient to warn about.
"""

from __future__ import annotations

import hashlib
import logging
import pathlib

from .. import _compat
from ..options import effective_zero_store
from . import backports, building, generation, native, replay, replay_records, store_rewrite
from .pre_twin import replay_memory

_log = logging.getLogger(__name__)

# What generates flagged code besides the header (newer Warp's fixes and the version facts that choose them
# included): a change to it must never reuse a cached binary.
_GENERATOR_DIGEST = hashlib.sha256(
    b"".join(
        pathlib.Path(m.__file__).read_bytes() for m in (store_rewrite, replay, building, generation, backports, _compat)
    )
).hexdigest()


def _salt(kernel_hash: bytes, mode: bool, memory: str = replay.POST) -> bytes:
    text = f"warp_zerostore:zero_store={mode}:header={native.header_digest()}:generator={_GENERATOR_DIGEST}"
    if memory == replay.PRE:
        text += ":replay=pre"
    return hashlib.sha256(kernel_hash + text.encode("utf-8")).digest()


def wrap_hash_kernel(original):
    def hash_kernel(self, kernel, *args, **kwargs):
        kernel_hash = original(self, kernel, *args, **kwargs)
        # Stock kernels by unsalted hash: a flagged twin with the same source must not displace them.
        stock = _compat.hasher_scratch(self, "stock_kernels")
        mode = effective_zero_store(kernel)
        if mode is None:
            stock[kernel_hash] = kernel
            return kernel_hash
        memory = replay_memory(kernel)
        salted = _salt(kernel_hash, mode, memory)
        if mode is True:
            replay_records.remember_build(kernel, salted.hex())
        unique = _compat.hasher_unique_kernels(self)
        if unique.get(kernel_hash) is kernel:
            if kernel_hash in stock:
                unique[kernel_hash] = stock[kernel_hash]
            else:
                del unique[kernel_hash]
        unique[salted] = kernel
        return salted

    return hash_kernel
