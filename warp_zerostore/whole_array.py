"""Whole-array stores on a Tape: ``wp.copy(dest, src)`` and ``dest.assign(src)`` follow ``zero_store``.

Warp records a copy on the Tape as ``lambda: adj_copy(dest.grad, src.grad, ...)``. This module resolves the
mode when the copy is recorded (the scoped override of :func:`copy_zero_store`, else the process default
``warp_zerostore.config.zero_store``) and, for True or False, runs its own adjoint at backward time:

* True: ``src.grad[region] += dest.grad[region]``, then ``dest.grad[region] = 0`` (not for retain_grad);
* False: ``src.grad[region] += dest.grad[region]``, ``dest.grad`` kept;
* None: Warp's own ``adj_copy`` (up to 1.12 it *overwrites* ``src.grad`` with ``dest.grad``).
"""

from __future__ import annotations

import contextlib
import threading
from typing import Any

import warp

from . import _compat, config, modes


class _State(threading.local):
    def __init__(self):
        self.scoped = []  # stack of scoped overrides
        self.replaying = None  # mode of the copy whose adjoint is running


_state = _State()


@contextlib.contextmanager
def copy_zero_store(value):
    """Within the block, ``wp.copy`` / ``array.assign`` recorded on a Tape use ``zero_store=value``.

    It overrides ``warp_zerostore.config.zero_store`` for whole-array stores only; kernels keep their own
    mode (kernel, module, process). The mode is taken when the copy is recorded, not at ``backward()``.

    Example::

        import warp_zerostore as wp

        src = wp.ones(4, dtype=float, requires_grad=True)
        dest = wp.zeros(4, dtype=float, requires_grad=True)
        with wp.Tape() as tape, wp.copy_zero_store(True):
            wp.copy(dest, src)
        tape.backward(grads={dest: wp.ones(4, dtype=float)})
        assert src.grad.numpy().tolist() == [1.0] * 4 and dest.grad.numpy().tolist() == [0.0] * 4
    """
    modes.validate(value, "copy_zero_store()")
    _state.scoped.append(value)
    try:
        yield
    finally:
        _state.scoped.pop()


def current_copy_mode():
    if _state.scoped:
        return _state.scoped[-1]
    return modes.validate(config.zero_store, "warp_zerostore.config.zero_store")


@warp.kernel(enable_backward=False)
def _add_region(dest_grad: warp.array(dtype=Any), src_grad: warp.array(dtype=Any)):
    i = warp.tid()
    src_grad[i] = src_grad[i] + dest_grad[i]


def _region(grad, offset: int, count: int, role: str):
    if not grad.is_contiguous:
        raise ValueError(
            f"warp_zerostore: the Tape adjoint of wp.copy/assign needs a contiguous {role} gradient under "
            "zero_store=True/False; copy into a contiguous array, or record this copy with "
            "warp_zerostore.copy_zero_store(None) to keep Warp's own adjoint."
        )
    flat = grad.flatten()
    return flat[offset : offset + count]


def _adj_copy(adj_dest, adj_src, dest_offset=0, src_offset=0, count=0, stream=None, dest_retain_grad=False, **_):
    mode = _state.replaying
    if adj_dest.device != adj_src.device:
        raise ValueError(
            f"warp_zerostore: the Tape adjoint of a wp.copy/assign from {adj_src.device} to {adj_dest.device} under "
            "zero_store=True/False is not supported (it adds gradients on one device); record this copy with "
            "warp_zerostore.copy_zero_store(None) to keep Warp's own adjoint."
        )
    if count == 0:
        count = min(adj_dest.size - dest_offset, adj_src.size - src_offset)
    dest_region = _region(adj_dest, dest_offset, count, "destination")
    src_region = _region(adj_src, src_offset, count, "source")
    warp.launch(_add_region, dim=count, inputs=[dest_region, src_region], device=adj_src.device, stream=stream)
    if mode and not dest_retain_grad:
        dest_region.zero_()


def _wrap_record_func(original):
    def record_func(self, backward, arrays, *args, **kwargs):
        mode = current_copy_mode()
        if mode is None:
            return original(self, backward, arrays, *args, **kwargs)

        def backward_in_mode():
            previous = _state.replaying
            _state.replaying = mode
            try:
                backward()
            finally:
                _state.replaying = previous

        return original(self, backward_in_mode, arrays, *args, **kwargs)

    return record_func


def _wrap_adj_copy(original):
    def adj_copy(*args, **kwargs):
        if _state.replaying is None:
            return original(*args, **kwargs)
        return _adj_copy(*args, **kwargs)

    return adj_copy


def install() -> None:
    _compat.wrap("Tape.record_func", _wrap_record_func)
    _compat.wrap("context.adj_copy", _wrap_adj_copy)
