"""What the Tape keeps of arrays' contents, computed on each array's own device by Warp kernels (the CPU's or a
CUDA device's, the same code): fingerprints, copies, and per-element masks of what changed.

* **Fingerprint**: a 64-bit checksum of an array's bytes, element position by element position (the sum of a
  bijective mix of ``(position, word)``, so a change of any one word always changes it; several changes cancel
  with odds of about 2**-64). It goes into a slot of a `Ledger` on the device; the slots come back together,
  once, where the Tape compares them (at ``backward()``): taking one makes no transfer and no synchronisation.
* **Copy** (`Known`): an array's elements in a contiguous device buffer, kept to compare the array against.
  `Known.changed` compares, element by element, and can bring the copy up to date in the same pass; the mask
  it returns comes from a scratch array of this module (on a GPU, one byte per element crosses to the host,
  never the array).
* **Blend**: one contiguous copy takes another's elements wherever a mask is 0 (a snapshot of what a launch
  read: its output where a thread read its own write, its input elsewhere).

Kernels address memory by raw pointer and byte strides (any dtype, any layout, views included), a word at a
time: 4 bytes where the array's pointer, strides and element size allow it, else 1. They are built once, in
this module's own Warp module (no user kernel's hash or code changes), and launched through prepared launches
kept per layout, so a call sets two or three parameters.

Which facts are which: a fingerprint equality is a guess (another content with the same checksum: odds 2**-64),
used only to refuse or to report (a mutation after record), never to decide what a gradient reads; the masks,
copies and blends are exact.
"""

from __future__ import annotations

import math

import numpy as np
import warp

from .. import _compat

# splitmix64's finaliser, with multipliers below 2**63 (a literal above it makes C++ compilers warn); each step is a
# bijection of 64-bit words, so two different (position, word) keys never mix to the same value
_MIX1 = warp.constant(warp.uint64(0x5851F42D4C957F2D))
_MIX2 = warp.constant(warp.uint64(0x14057B7EF767814F))


@warp.func
def _mix(z: warp.uint64):
    z = (z ^ (z >> warp.uint64(30))) * _MIX1
    z = (z ^ (z >> warp.uint64(27))) * _MIX2
    return z ^ (z >> warp.uint64(31))


@warp.func
def _word(address: warp.uint64, wide: int):
    if wide != 0:
        return warp.uint64(warp.array(ptr=address, shape=(1,), dtype=warp.uint32)[0])
    return warp.uint64(warp.array(ptr=address, shape=(1,), dtype=warp.uint8)[0])


@warp.func
def _set_word(address: warp.uint64, wide: int, value: warp.uint64):
    if wide != 0:
        wide_word = warp.array(ptr=address, shape=(1,), dtype=warp.uint32)
        wide_word[0] = warp.uint32(value)
    else:
        byte = warp.array(ptr=address, shape=(1,), dtype=warp.uint8)
        byte[0] = warp.uint8(value)


@warp.func
def _element(ptr: warp.uint64, flat: int, shape: warp.vec4i, strides: warp.vec4l):
    """The address of element ``flat``, row-major over ``shape`` (four axes; unused ones of size 1)."""
    rest = flat
    i3 = rest % shape[3]
    rest = rest // shape[3]
    i2 = rest % shape[2]
    rest = rest // shape[2]
    i1 = rest % shape[1]
    i0 = rest // shape[1]
    offset = (
        warp.int64(i0) * strides[0]
        + warp.int64(i1) * strides[1]
        + warp.int64(i2) * strides[2]
        + warp.int64(i3) * strides[3]
    )
    return ptr + warp.uint64(offset)


# Each kernel walks the elements with a stride of its thread count (one thread on the CPU, up to `_GPU_THREADS`
# on a GPU): a fingerprint then takes one atomic add per thread, not one per element.


@warp.kernel(enable_backward=False)
def _fingerprint(
    ptr: warp.uint64,
    size: int,
    shape: warp.vec4i,
    strides: warp.vec4l,
    words: int,
    wide: int,
    threads: int,
    slot: warp.uint64,
):
    """Adds the fingerprint of the array at ``ptr`` into the 64-bit slot at address ``slot``."""
    e = warp.tid()
    step = warp.uint64(1)
    if wide != 0:
        step = warp.uint64(4)
    total = warp.uint64(0)
    while e < size:
        address = _element(ptr, e, shape, strides)
        for w in range(words):
            key = (warp.uint64(e * words + w) << warp.uint64(32)) | _word(address + warp.uint64(w) * step, wide)
            total += _mix(key)
        e += threads
    out = warp.array(ptr=slot, shape=(1,), dtype=warp.uint64)
    warp.atomic_add(out, 0, total)


@warp.kernel(enable_backward=False)
def _fingerprint_many(
    ptrs: warp.array(dtype=warp.uint64),
    slots: warp.array(dtype=warp.uint64),
    size: int,
    shape: warp.vec4i,
    strides: warp.vec4l,
    words: int,
    wide: int,
    threads: int,
):
    """`_fingerprint` of arrays of one layout at once: array ``j`` (at ``ptrs[j]``) into the slot at ``slots[j]``."""
    tid = warp.tid()
    j = tid // threads
    e = tid - j * threads
    step = warp.uint64(1)
    if wide != 0:
        step = warp.uint64(4)
    total = warp.uint64(0)
    while e < size:
        address = _element(ptrs[j], e, shape, strides)
        for w in range(words):
            key = (warp.uint64(e * words + w) << warp.uint64(32)) | _word(address + warp.uint64(w) * step, wide)
            total += _mix(key)
        e += threads
    out = warp.array(ptr=slots[j], shape=(1,), dtype=warp.uint64)
    warp.atomic_add(out, 0, total)


@warp.kernel(enable_backward=False)
def _compare_kernel(
    ptr: warp.uint64,
    size: int,
    shape: warp.vec4i,
    strides: warp.vec4l,
    words: int,
    wide: int,
    threads: int,
    known: warp.uint64,
    mask: warp.uint64,
    update: int,
):
    """``mask[e]``: element ``e`` differs from the copy at ``known`` (none written where ``mask`` is 0); with
    ``update``, the copy takes the array's element."""
    e = warp.tid()
    step = warp.uint64(1)
    if wide != 0:
        step = warp.uint64(4)
    while e < size:
        address = _element(ptr, e, shape, strides)
        kept = known + warp.uint64(e * words) * step
        differs = int(0)
        for w in range(words):
            now = _word(address + warp.uint64(w) * step, wide)
            if now != _word(kept + warp.uint64(w) * step, wide):
                differs = 1
                if update != 0:
                    _set_word(kept + warp.uint64(w) * step, wide, now)
        if mask != warp.uint64(0):
            flags = warp.array(ptr=mask, shape=(size,), dtype=warp.uint8)
            flags[e] = warp.uint8(differs)
        e += threads


@warp.kernel(enable_backward=False)
def _compare_many(table: warp.array2d(dtype=warp.int64), masks: warp.uint64, threads: int):
    """`_compare_kernel` of several arrays at once, one row of ``table`` each: pointer, copy, offset of its mask in
    ``masks``, size, shape (4), byte strides (4), words, wide, update, whether to write its mask."""
    tid = warp.tid()
    j = tid // threads
    e = tid - j * threads
    ptr = warp.uint64(table[j, 0])
    known = warp.uint64(table[j, 1])
    offset = table[j, 2]
    size = int(table[j, 3])
    shape = warp.vec4i(int(table[j, 4]), int(table[j, 5]), int(table[j, 6]), int(table[j, 7]))
    strides = warp.vec4l(table[j, 8], table[j, 9], table[j, 10], table[j, 11])
    words = int(table[j, 12])
    wide = int(table[j, 13])
    update = table[j, 14]
    step = warp.uint64(1)
    if wide != 0:
        step = warp.uint64(4)
    while e < size:
        address = _element(ptr, e, shape, strides)
        kept = known + warp.uint64(e * words) * step
        differs = int(0)
        for w in range(words):
            now = _word(address + warp.uint64(w) * step, wide)
            if now != _word(kept + warp.uint64(w) * step, wide):
                differs = 1
                if update != warp.int64(0):
                    _set_word(kept + warp.uint64(w) * step, wide, now)
        if table[j, 15] != warp.int64(0):
            flags = warp.array(ptr=masks + warp.uint64(offset + warp.int64(e)), shape=(1,), dtype=warp.uint8)
            flags[0] = warp.uint8(differs)
        e += threads


@warp.kernel(enable_backward=False)
def _blend(dest: warp.uint64, src: warp.uint64, mask: warp.uint64, size: int, words: int, wide: int, threads: int):
    """Contiguous copies: ``dest``'s element ``e`` becomes ``src``'s wherever ``mask[e]`` is 0."""
    e = warp.tid()
    step = warp.uint64(1)
    if wide != 0:
        step = warp.uint64(4)
    while e < size:
        if warp.array(ptr=mask, shape=(size,), dtype=warp.uint8)[e] == warp.uint8(0):
            base = warp.uint64(e * words) * step
            for w in range(words):
                offset = base + warp.uint64(w) * step
                _set_word(dest + offset, wide, _word(src + offset, wide))
        e += threads


#: threads of a launch on a GPU (each walks every this-many-th element); one on the CPU
_GPU_THREADS = 1 << 16


class Layout:
    """How to walk an array's elements a word at a time: its shape and byte strides over four axes, the words per
    element and whether a word is 4 bytes (``wide``) or 1; and the prepared launches of each kernel for it. Made
    once per array object and pointer."""

    __slots__ = ("size", "shape", "strides", "words", "wide", "nbytes", "key", "device", "row")

    def __init__(self, arr):
        element = _compat.dtype_size_bytes(arr.dtype)
        size = arr.size
        if arr.is_contiguous:  # one axis: fewer divisions per element
            shape, strides = (size, 1, 1, 1), (element, 0, 0, 0)
            wide = element % 4 == 0 and int(arr.ptr or 0) % 4 == 0
        else:
            ndim = len(arr.shape)
            shape = tuple(arr.shape) + (1,) * (4 - ndim)
            strides = tuple(int(s) for s in arr.strides) + (0,) * (4 - ndim)
            wide = element % 4 == 0 and int(arr.ptr or 0) % 4 == 0 and all(s % 4 == 0 for s in strides)
        self.size, self.shape, self.strides = size, shape, strides
        self.words = element // 4 if wide else element
        self.wide = int(wide)
        self.nbytes = size * element
        self.device = arr.device
        self.key = (id(arr.device), size, shape, strides, self.words, self.wide)
        self.row = [size, *shape, *strides, self.words, self.wide]  # its part of a `_compare_many` row


def layout(arr) -> Layout:
    """The array's `Layout`, kept on the array object while its pointer stays."""
    cached = arr.__dict__.get("_wzs_layout")
    if cached is not None and cached[0] == arr.ptr:
        return cached[1]
    found = Layout(arr)
    arr.__dict__["_wzs_layout"] = (arr.ptr, found)
    return found


def _threads(device, size: int) -> int:
    return 1 if device.is_cpu else max(1, min(size, _GPU_THREADS))


_LAUNCHES: dict = {}  # (kernel key, layout key) -> a prepared launch, its layout parameters set


def _prepared(kernel, shape_of: Layout, params):
    """The prepared launch of ``kernel`` over arrays of this layout (``params()``, the first time: the layout's own
    parameters are set once; callers set the pointers)."""
    key = (kernel.key, shape_of.key)
    launch = _LAUNCHES.get(key)
    if launch is None:
        if len(_LAUNCHES) > 1024:  # layouts that keep changing: start over rather than grow
            _LAUNCHES.clear()
        device = shape_of.device
        with _compat.no_active_tape():
            launch = _LAUNCHES[key] = _compat.prepared_launch(
                kernel, _threads(device, shape_of.size), params(), device, 0, 1 if device.is_cpu else 256
            )
    return launch


def _layout_params(shape_of: Layout) -> list:
    return [
        shape_of.size,
        warp.vec4i(*shape_of.shape),
        warp.vec4l(*shape_of.strides),
        shape_of.words,
        shape_of.wide,
        _threads(shape_of.device, shape_of.size),
    ]


# -- fingerprints


class Ledger:
    """Fingerprint slots on each device, in chunks of `CHUNK` (zeroed when made); read back all at once."""

    CHUNK = 4096

    def __init__(self):
        self.chunks: dict = {}  # device alias -> [device arrays of CHUNK slots]
        self.next: dict = {}  # device alias -> next free slot

    def take(self, arr) -> tuple:
        """Launch the fingerprint of ``arr``'s content now into a new slot; returns the slot's handle (on the CPU,
        the fingerprint itself, taken in place: `_fingerprint_in_place`)."""
        if IN_PLACE_ON_CPU and arr.device.is_cpu:
            return (None, _fingerprint_in_place(arr))
        shape_of = layout(arr)
        device = shape_of.device.alias
        slot = self.next.get(device, 0)
        self.next[device] = slot + 1
        chunk, index = divmod(slot, self.CHUNK)
        chunks = self.chunks.get(device)
        if chunks is None:
            chunks = self.chunks[device] = []
        if chunk == len(chunks):
            with _compat.no_active_tape():
                chunks.append(warp.zeros(self.CHUNK, dtype=warp.uint64, device=shape_of.device))
        if shape_of.size:
            address = chunks[chunk].ptr + 8 * index
            launch = _prepared(_fingerprint, shape_of, lambda: [arr.ptr, *_layout_params(shape_of), address])
            launch.set_param_at_index_from_ctype(0, arr.ptr)
            launch.set_param_at_index_from_ctype(7, address)
            launch.launch()
        return (device, slot)

    def take_many(self, arrays: list) -> list:
        """`take` of each array, in one launch per device and layout (at ``backward()``, where every watched array
        gets one: a table of their addresses goes to the device, not their content)."""
        handles, groups = [], {}
        for arr in arrays:
            if IN_PLACE_ON_CPU and arr.device.is_cpu:
                handles.append((None, _fingerprint_in_place(arr)))
                continue
            shape_of = layout(arr)
            device = shape_of.device.alias
            slot = self.next.get(device, 0)
            self.next[device] = slot + 1
            chunk, index = divmod(slot, self.CHUNK)
            chunks = self.chunks.setdefault(device, [])
            while chunk >= len(chunks):
                with _compat.no_active_tape():
                    chunks.append(warp.zeros(self.CHUNK, dtype=warp.uint64, device=shape_of.device))
            handles.append((device, slot))
            if shape_of.size:
                group = groups.setdefault(shape_of.key, (shape_of, [], []))
                group[1].append(arr.ptr)
                group[2].append(chunks[chunk].ptr + 8 * index)
        for shape_of, ptrs, slots in groups.values():
            device = shape_of.device
            threads = _threads(device, shape_of.size)
            with _compat.no_active_tape():
                table = warp.array(np.array([ptrs, slots], dtype=np.uint64), dtype=warp.uint64, device=device)
                layout_params = _layout_params(shape_of)[:-1]
                _compat.prepared_launch(
                    _fingerprint_many,
                    threads * len(ptrs),
                    [table[0], table[1], *layout_params, threads],
                    device,
                    0,
                    1 if device.is_cpu else 256,
                ).launch()
        return handles

    def read(self) -> dict:
        """Every slot's value, for `value`: one transfer per chunk (off the CPU)."""
        return {device: np.concatenate([c.numpy() for c in chunks]) for device, chunks in self.chunks.items()}


def value(values: dict, handle: tuple) -> int:
    """A fingerprint's value from `Ledger.read` (a handle taken in place holds its value)."""
    device, slot = handle
    return slot if device is None else int(values[device][slot])


#: bytes hashed at a time by `_fingerprint_in_place` (a larger array is hashed in parts: no copy of it whole)
_PART_BYTES = 1 << 24


def _fingerprint_in_place(arr) -> int:
    """A CPU array's fingerprint from its memory in place (`_compat.cpu_bytes`: the CPU's memory is the host's,
    nothing crosses), element position by element position: Python's 64-bit hash (SipHash) of its bytes in order, by
    parts of `_PART_BYTES` (no copy of a large array whole). The same kind of guess as the kernel's (used only to
    refuse), at a fraction of its cost: a prepared launch costs microseconds, and one CPU thread walks the elements
    with index arithmetic."""
    nbytes = arr.size * _compat.dtype_size_bytes(arr.dtype)
    if nbytes <= _PART_BYTES:
        return hash(_compat.cpu_bytes(arr))
    view = _compat.cpu_view(arr)
    rows = max(1, len(view) * _PART_BYTES // nbytes)
    return hash(tuple(hash(view[at : at + rows].tobytes()) for at in range(0, len(view), rows)))


# -- copies and masks


class Known:
    """An array's elements, in a contiguous buffer on its device: what the Tape last knew of its content. Off the
    CPU its bytes come from a slab (one allocation serves many copies: a rollout makes one per new state); on the
    CPU (`IN_PLACE_ON_CPU`) they are a ``bytes`` object (`_compat.cpu_bytes`: the CPU's memory is the host's),
    compared with the array's bytes in one ``==`` and replaced when the content changes."""

    __slots__ = ("ptr", "slab", "layout", "host")

    def __init__(self, arr, refresh: bool = True):
        if IN_PLACE_ON_CPU and arr.device.is_cpu:
            self.host = _compat.cpu_bytes(arr)  # its content now, whatever ``refresh``
            self.slab = self.ptr = self.layout = None
            return
        self.layout = layout(arr)
        self.host = None
        self.slab, self.ptr = _carve(arr.device, self.layout.nbytes)
        if refresh:  # else the caller takes the content (`changed_many`)
            self.refresh(arr)

    def release(self) -> None:
        """The Tape no longer needs this copy: its bytes serve the next one of its size (up to `SPARE_BYTES` of
        spare copies in all)."""
        global _spare_bytes
        if self.host is not None:
            self.host = None
            return
        size = _rounded(self.layout.nbytes)
        spare = _SPARE.setdefault((self.layout.device.alias, size), [])
        if len(spare) < _SPARE_PER_SIZE and _spare_bytes + size <= SPARE_BYTES:
            spare.append((self.slab, self.ptr))
            _spare_bytes += size
        self.slab = None

    def compare(self, arr):
        """On the CPU: None where ``arr``'s content equals this copy's, else the mask of its elements that differ
        (``arr``'s shape), the copy taking ``arr``'s content (`changed` with ``update``, without the batch's
        plumbing). Only for a copy on the CPU (``host``)."""
        now = _compat.cpu_bytes(arr)
        if now == self.host:
            return None
        mask = _differing_bytes(self.host, now, arr.shape)
        self.host = now
        return mask

    def same(self, arr) -> bool:
        """True where ``arr``'s content is known to equal this copy's without a comparison launch: on the CPU, its
        bytes compared in place (False off the CPU: `changed_many` compares there, several arrays at once)."""
        return self.host is not None and self.host == _compat.cpu_bytes(arr)

    def refresh(self, arr) -> None:
        """Take ``arr``'s content now."""
        changed_many([(arr, self, True, False)])

    def changed(self, arr, update: bool = False) -> np.ndarray:
        """Per element of ``arr`` (its shape): differs from this copy. ``update``: the copy takes ``arr``'s content."""
        return changed(arr, self, update)


_SPARE: dict = {}  # (device alias, rounded bytes) -> (slab, address) of released copies
_SPARE_PER_SIZE = 16
_spare_bytes = 0
#: bytes of released copies kept for reuse, all sizes together (a slab lives while a copy in it is kept)
SPARE_BYTES = 64 << 20
_SLAB_BYTES = 1 << 20
_SLABS: dict = {}  # device alias -> [the slab being carved, bytes used]


def _rounded(nbytes: int) -> int:
    return max(16, (nbytes + 15) // 16 * 16)


def _carve(device, nbytes: int) -> tuple:
    """``(slab, address)`` of ``nbytes`` on ``device``: a released copy's, else the next bytes of the current slab
    (a new slab when it is full; a slab lives while a copy in it does)."""
    global _spare_bytes
    size = _rounded(nbytes)
    spare = _SPARE.get((device.alias, size))
    if spare:
        _spare_bytes -= size
        found = spare.pop()
        if not spare:
            del _SPARE[(device.alias, size)]
        return found
    current = _SLABS.get(device.alias)
    if current is None or current[1] + size > current[0].size:
        with _compat.no_active_tape():
            slab = warp.empty(max(_SLAB_BYTES, size), dtype=warp.uint8, device=device)
        current = _SLABS[device.alias] = [slab, 0]
    address = current[0].ptr + current[1]
    current[1] += size
    return current[0], address


#: CPU arrays are compared and copied in place with NumPy (their memory is the host's: nothing crosses), the same
#: result as the kernels at a fraction of the cost per launch; tests turn it off to run the device path on the CPU
IN_PLACE_ON_CPU = True


def changed_many(items: list) -> list:
    """`changed` of several arrays in one launch per device: ``items`` are ``(arr, copy, update, masked)``; returns,
    per item, its mask (None where not ``masked``: the copy is only brought up to date)."""
    found: list = [None] * len(items)
    by_device: dict = {}
    for k, item in enumerate(items):
        if not item[0].size:
            if item[3]:
                found[k] = np.zeros(item[0].shape, dtype=bool)
        elif IN_PLACE_ON_CPU and item[0].device.is_cpu:
            found[k] = _changed_in_place(*item)
        else:
            by_device.setdefault(item[0].device.alias, []).append(k)
    for ks in by_device.values():
        device = items[ks[0]][0].device
        rows, offset, threads = [], 0, 1
        for k in ks:
            arr, copy, update, masked = items[k]
            shape_of = layout(arr)
            rows.append([arr.ptr, copy.ptr, offset, *shape_of.row, int(update), int(masked)])
            offset += shape_of.size if masked else 0
            threads = max(threads, _threads(device, shape_of.size))
        table = _table(device, rows)
        mask = _mask(device, 1 << max(offset - 1, 0).bit_length())  # pooled by capacity
        key = ("many", device.alias, len(ks), threads)
        launch = _LAUNCHES.get(key)
        if launch is None:
            with _compat.no_active_tape():
                launch = _LAUNCHES[key] = _compat.prepared_launch(
                    _compare_many,
                    threads * len(ks),
                    [table, mask[0].ptr, threads],
                    device,
                    0,
                    1 if device.is_cpu else 256,
                )
        else:
            launch.set_param_at_index(0, table)
            launch.set_param_at_index_from_ctype(1, mask[0].ptr)
        launch.launch()
        flags = _host(mask)
        offset = 0
        for k in ks:
            arr, _, _, masked = items[k]
            if masked:
                size = layout(arr).size
                found[k] = np.array(flags[offset : offset + size], dtype=bool).reshape(arr.shape)
                offset += size
    return found


def _changed_in_place(arr, copy, update: bool, masked: bool):
    """`changed_many` of one CPU array, on its memory in place: its bytes against the copy's (a `Known`, or a
    contiguous CPU array of its elements)."""
    now = _compat.cpu_bytes(arr)
    known = isinstance(copy, Known)
    kept = copy.host if known else _compat.cpu_bytes(copy)
    if kept == now:  # unchanged (the usual case): no mask to work out, nothing to copy
        return unchanged(arr.shape) if masked else None
    mask = _differing_bytes(kept, now, arr.shape) if masked else None
    if update:
        if known:
            copy.host = now
        else:
            view = _compat.cpu_view(copy)
            np.copyto(view, np.frombuffer(now, dtype=view.dtype).reshape(view.shape))
    return mask


_UNSIGNED = {1: np.uint8, 2: np.uint16, 4: np.uint32, 8: np.uint64}
_VOIDS: dict = {}  # element size in bytes -> its void dtype


def unchanged(shape: tuple) -> np.ndarray:
    """A read-only all-False mask of ``shape``, shared (an unchanged array's mask, made once per shape)."""
    mask = _UNCHANGED.get(shape)
    if mask is None:
        if len(_UNCHANGED) > 256:
            _UNCHANGED.clear()
        mask = _UNCHANGED[shape] = np.zeros(shape, dtype=bool)
        mask.flags.writeable = False
    return mask


_UNCHANGED: dict = {}  # shape -> `unchanged`


def _differing_bytes(before: bytes, after: bytes, shape: tuple) -> np.ndarray:
    """`_differing` of two arrays' bytes (`_compat.cpu_bytes`), elements of ``shape``."""
    count = math.prod(shape)
    unsigned = _UNSIGNED.get(len(before) // count)
    if unsigned is not None:  # one word per element: one compare each
        return (np.frombuffer(before, dtype=unsigned) != np.frombuffer(after, dtype=unsigned)).reshape(shape)
    before, after = np.frombuffer(before, dtype=np.uint8), np.frombuffer(after, dtype=np.uint8)
    return _differing(before.reshape(count, -1), after.reshape(count, -1), (count,)).reshape(shape)


def _differing(before: np.ndarray, after: np.ndarray, shape: tuple) -> np.ndarray:
    """Bool per Warp element (a vec3 is one element): its bytes differ."""
    shape = tuple(shape)
    if before.shape == shape and before.dtype.itemsize in _UNSIGNED:  # scalars: one compare per element
        unsigned = _UNSIGNED[before.dtype.itemsize]
        return np.ascontiguousarray(before).view(unsigned) != np.ascontiguousarray(after).view(unsigned)
    flat_before = np.ascontiguousarray(before).reshape(shape + (-1,))
    flat_after = np.ascontiguousarray(after).reshape(shape + (-1,))
    size = flat_before.shape[-1] * flat_before.itemsize
    void = _VOIDS.get(size)
    if void is None:
        void = _VOIDS[size] = np.dtype((np.void, size))
    return flat_before.view(void).reshape(shape) != flat_after.view(void).reshape(shape)


def _table(device, rows: list):
    """A device array of the rows (int64), through a pooled buffer per device and row count."""
    values = np.array(rows, dtype=np.int64)
    key = (device.alias, values.shape[0])
    entry = _TABLES.get(key)
    if entry is None:
        if len(_TABLES) > 256:
            _TABLES.clear()
        with _compat.no_active_tape():
            table = warp.empty(values.shape, dtype=warp.int64, device=device)
        entry = _TABLES[key] = (table, _compat.host_view(table) if device.is_cpu else None)
    if entry[1] is not None:
        np.copyto(entry[1], values)
    else:
        with _compat.no_active_tape():
            warp.copy(entry[0], warp.array(values, dtype=warp.int64, device="cpu"))
    return entry[0]


_TABLES: dict = {}  # (device alias, rows) -> (scratch int64 table, its host view on the CPU)


def changed(arr, copy, update: bool = False) -> np.ndarray:
    """Per element of ``arr`` (a host bool mask of its shape): its bytes differ from ``copy``'s (a contiguous device
    array holding ``arr``'s elements, as `warp.clone` makes, or a `Known`). ``update``: ``copy`` takes ``arr``'s
    content in the same pass."""
    return changed_many([(arr, copy, update, True)])[0]


def _compare(arr, copy_ptr: int, mask_ptr: int, update: bool) -> None:
    shape_of = layout(arr)
    if not shape_of.size:
        return
    launch = _prepared(_compare_kernel, shape_of, lambda: [arr.ptr, *_layout_params(shape_of), copy_ptr, 0, 0])
    launch.set_param_at_index_from_ctype(0, arr.ptr)
    launch.set_param_at_index_from_ctype(7, copy_ptr)
    launch.set_param_at_index_from_ctype(8, mask_ptr)
    launch.set_param_at_index_from_ctype(9, int(update))
    launch.launch()


def blend(dest, src, keep) -> None:
    """``dest`` (a contiguous copy) takes ``src``'s elements (a contiguous copy of the same array) wherever ``keep``
    (a host bool mask of their shape) is False."""
    shape_of = layout(dest)
    if not shape_of.size:
        return
    mask = _mask(dest.device, shape_of.size)
    if mask[1] is not None:
        np.copyto(mask[1], keep.reshape(-1))
    else:
        with _compat.no_active_tape():
            warp.copy(mask[0], warp.array(keep.reshape(-1).astype(np.uint8), dtype=warp.uint8, device="cpu"))
    params = [dest.ptr, src.ptr, mask[0].ptr, shape_of.size, shape_of.words, shape_of.wide]
    launch = _prepared(_blend, shape_of, lambda: [*params, _threads(dest.device, shape_of.size)])
    for index, v in enumerate(params[:3]):
        launch.set_param_at_index_from_ctype(index, int(v))
    launch.launch()


_MASKS: dict = {}  # (device, size) -> (scratch uint8 array, its host view on the CPU)
_mask_bytes = 0
#: bytes of scratch masks kept for reuse
MASK_BYTES = 64 << 20


def _mask(device, size: int) -> tuple:
    global _mask_bytes
    key = (str(device), size)
    entry = _MASKS.get(key)
    if entry is None:
        if len(_MASKS) > 256 or _mask_bytes + size > MASK_BYTES:  # start over rather than grow
            _MASKS.clear()
            _mask_bytes = 0
        _mask_bytes += max(size, 1)
        with _compat.no_active_tape():
            scratch = warp.empty(max(size, 1), dtype=warp.uint8, device=device)
        entry = _MASKS[key] = (scratch, _compat.host_view(scratch)[:size] if scratch.device.is_cpu else None)
    return entry


def _host(mask: tuple) -> np.ndarray:
    """The scratch mask's bytes on the host (a transfer of the mask only, off the CPU)."""
    return mask[1] if mask[1] is not None else mask[0].numpy()[: mask[0].size]


__all__ = ["Known", "Layout", "Ledger", "blend", "changed", "changed_many", "layout", "value"]
