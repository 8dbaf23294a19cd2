"""The adjoint of whole-array stores on a Tape: ``wp.copy(dest, src)`` and ``dest.assign(src)`` follow ``zero_store``.

Warp records a copy on the Tape as ``lambda: adj_copy(dest.grad, src.grad, ...)``. The mode is taken when the
copy is recorded (`warp_zerostore.options.effective_copy_mode`) and, for True or False, this module runs
its own adjoint at backward time:

* True: ``src.grad[region] += dest.grad[region]``, then ``dest.grad[region] = 0`` (not for retain_grad);
* False: ``src.grad[region] += dest.grad[region]``, ``dest.grad`` kept;
* None: Warp's own ``adj_copy`` (up to 1.12 it *overwrites* ``src.grad`` with ``dest.grad``).

Warp's ``wp.copy`` also copies ``src.grad`` over ``dest.grad`` in the forward pass (every version). Within
`gradients_kept` that forward copy skips the gradients named there: a checkpointed step that writes its
output state with ``wp.copy`` must not wipe the adjoint the executor placed in that state's ``.grad``.
"""

from __future__ import annotations

import threading
from typing import Any

import warp

from . import _compat
from .options import effective_copy_mode


class _State(threading.local):
    def __init__(self):
        self.replaying = None  # mode of the copy whose adjoint is running
        self.kept: dict = {}  # id(.grad) -> the array it belongs to: the forward gradient copy leaves it alone
        self.copies: list | None = None  # (array, Tape entries before the copy) for copies into kept arrays


_state = _State()


# Element k of a copy's window is element (offset + k) of an array in row-major (logical) order, as in
# wp.copy; these kernels walk that order for arrays of 1 to 4 dimensions, contiguous or strided views.
# _gather_Nd reads a window into a contiguous buffer; _store_Nd adds it into (keep=1) or writes it over (keep=0)
# a window.


@warp.kernel(enable_backward=False)
def _gather_1d(a: warp.array(dtype=Any), offset: int, out: warp.array(dtype=Any)):
    k = warp.tid()
    out[k] = a[offset + k]


@warp.kernel(enable_backward=False)
def _gather_2d(a: warp.array2d(dtype=Any), offset: int, out: warp.array(dtype=Any)):
    k = warp.tid()
    f = offset + k
    out[k] = a[f // a.shape[1], f % a.shape[1]]


@warp.kernel(enable_backward=False)
def _gather_3d(a: warp.array3d(dtype=Any), offset: int, out: warp.array(dtype=Any)):
    k = warp.tid()
    f = offset + k
    out[k] = a[f // (a.shape[1] * a.shape[2]), (f // a.shape[2]) % a.shape[1], f % a.shape[2]]


@warp.kernel(enable_backward=False)
def _gather_4d(a: warp.array4d(dtype=Any), offset: int, out: warp.array(dtype=Any)):
    k = warp.tid()
    f = offset + k
    s3 = a.shape[3]
    s23 = a.shape[2] * s3
    out[k] = a[f // (a.shape[1] * s23), (f // s23) % a.shape[1], (f // s3) % a.shape[2], f % s3]


@warp.kernel(enable_backward=False)
def _store_1d(a: warp.array(dtype=Any), offset: int, values: warp.array(dtype=Any), keep: int):
    k = warp.tid()
    if keep:
        a[offset + k] = a[offset + k] + values[k]
    else:
        a[offset + k] = values[k]


@warp.kernel(enable_backward=False)
def _store_2d(a: warp.array2d(dtype=Any), offset: int, values: warp.array(dtype=Any), keep: int):
    k = warp.tid()
    f = offset + k
    i = f // a.shape[1]
    j = f % a.shape[1]
    if keep:
        a[i, j] = a[i, j] + values[k]
    else:
        a[i, j] = values[k]


@warp.kernel(enable_backward=False)
def _store_3d(a: warp.array3d(dtype=Any), offset: int, values: warp.array(dtype=Any), keep: int):
    k = warp.tid()
    f = offset + k
    i = f // (a.shape[1] * a.shape[2])
    j = (f // a.shape[2]) % a.shape[1]
    l = f % a.shape[2]
    if keep:
        a[i, j, l] = a[i, j, l] + values[k]
    else:
        a[i, j, l] = values[k]


@warp.kernel(enable_backward=False)
def _store_4d(a: warp.array4d(dtype=Any), offset: int, values: warp.array(dtype=Any), keep: int):
    k = warp.tid()
    f = offset + k
    s3 = a.shape[3]
    s23 = a.shape[2] * s3
    i = f // (a.shape[1] * s23)
    j = (f // s23) % a.shape[1]
    l = (f // s3) % a.shape[2]
    m = f % s3
    if keep:
        a[i, j, l, m] = a[i, j, l, m] + values[k]
    else:
        a[i, j, l, m] = values[k]


_GATHER = {1: _gather_1d, 2: _gather_2d, 3: _gather_3d, 4: _gather_4d}
_STORE = {1: _store_1d, 2: _store_2d, 3: _store_3d, 4: _store_4d}


def _adj_copy(call: _compat.CopyAdjointCall) -> None:
    mode = _state.replaying
    adj_dest, adj_src, stream = call.adj_dest, call.adj_src, call.stream
    dest_offset, src_offset, count = call.dest_offset, call.src_offset, call.count
    if adj_dest.device != adj_src.device:
        raise ValueError(
            f"warp_zerostore: the Tape adjoint of a wp.copy/assign from {adj_src.device} to {adj_dest.device} under "
            "zero_store=True/False is not supported (it adds gradients on one device); record this copy with "
            "warp_zerostore.copy_zero_store(None) to keep Warp's own adjoint."
        )
    if count == 0:
        count = min(adj_dest.size - dest_offset, adj_src.size - src_offset)
    if count <= 0:
        return
    device = adj_src.device
    window = warp.empty(count, dtype=adj_dest.dtype, device=device)
    warp.launch(_GATHER[adj_dest.ndim], dim=count, inputs=[adj_dest, dest_offset, window], device=device, stream=stream)
    if mode and not call.dest_retain_grad:
        # zero before adding: a self-copy's windows may overlap, and the source's share must survive
        zeros = warp.zeros(count, dtype=adj_dest.dtype, device=device)
        warp.launch(
            _STORE[adj_dest.ndim], dim=count, inputs=[adj_dest, dest_offset, zeros, 0], device=device, stream=stream
        )
    warp.launch(_STORE[adj_src.ndim], dim=count, inputs=[adj_src, src_offset, window, 1], device=device, stream=stream)


def _wrap_record_func(original):
    def record_func(self, backward, arrays, *args, **kwargs):
        mode = effective_copy_mode()
        if mode is None:
            return original(self, backward, arrays, *args, **kwargs)

        def backward_in_mode():
            previous = _state.replaying
            _state.replaying = mode
            try:
                backward()
            finally:
                _state.replaying = previous

        backward_in_mode.__wrapped__ = backward  # type: ignore[attr-defined]  # what it runs (`_compat.is_copy_adjoint`)
        return original(self, backward_in_mode, arrays, *args, **kwargs)

    return record_func


def _wrap_adj_copy(original):
    def adj_copy(*args, **kwargs):
        if _state.replaying is None:
            return original(*args, **kwargs)
        return _adj_copy(_compat.copy_adjoint_call(original, args, kwargs))

    return adj_copy


def owners_of_gradients(arrays) -> dict:
    """``{id(a.grad): a}`` for those of ``arrays`` that have a gradient."""
    return {id(g): a for a in arrays if (g := a.grad) is not None}


class gradients_kept:  # noqa: N801 - used as a context manager, like contextlib's
    """Within the block, ``wp.copy`` into one of ``arrays`` copies values only: Warp's forward copy of the
    source's gradient over the destination's is skipped (the copy's adjoint is recorded on a Tape as usual).
    The block gets a list that receives ``(array, n)`` for each such copy: ``n`` entries were on the active
    Tape before it (0 without one). (A class, not a generator: a checkpointed rollout enters it every step.)

    Example:
        ```python
        import warp_zerostore as wp
        from warp_zerostore.copy_adjoint import gradients_kept

        dest = wp.zeros(2, dtype=float, requires_grad=True)
        src = wp.ones(2, dtype=float, requires_grad=True)
        dest.grad.fill_(5.0)
        with gradients_kept([dest]) as copies:
            wp.copy(dest, src)
        assert dest.numpy().tolist() == [1.0, 1.0] and dest.grad.numpy().tolist() == [5.0, 5.0]
        assert copies == [(dest, 0)]
        ```
    """

    __slots__ = ("kept", "previous")

    def __init__(self, arrays):
        self.kept = owners_of_gradients(arrays)

    @classmethod
    def of(cls, owners: dict):
        """The same, for ``owners_of_gradients(arrays)`` computed once (a rollout keeps it while its state
        arrays stay the same objects)."""
        kept = cls.__new__(cls)
        kept.kept = owners
        return kept

    def __enter__(self) -> list:
        self.previous = _state.kept, _state.copies
        kept = self.kept
        if self.previous[0]:
            kept = {**self.previous[0], **kept}
        copies: list = []
        _state.kept, _state.copies = kept, copies
        return copies

    def __exit__(self, *exc) -> None:
        _state.kept, _state.copies = self.previous


def _wrap_copy(original):
    def copy(dest, src, *args, **kwargs):
        owner = _state.kept.get(id(dest)) if _state.kept else None
        if owner is None:
            return original(dest, src, *args, **kwargs)
        # Warp's forward copy of src.grad into owner.grad (dest): skipped, and the copy into owner noted
        tape = _compat.active_tape()
        _state.copies.append((owner, 0 if tape is None else _compat.tape_launch_count(tape)))
        return None

    return copy


def install() -> None:
    _compat.wrap("Tape.record_func", _wrap_record_func)
    _compat.wrap("context.adj_copy", _wrap_adj_copy)
    _compat.wrap("context.copy", _wrap_copy)
