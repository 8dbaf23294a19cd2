"""Byte spans of Warp arrays: which addresses an array's elements occupy, for any strides (negative included)."""

from __future__ import annotations

from . import _compat


def byte_span(array) -> tuple:
    """``(first byte, one past the last byte)`` of ``array``'s elements; ``(ptr, ptr)`` when it has none.

    A negative stride puts elements below ``array.ptr``, so the first byte is not always the pointer.

    Example:
        ```python
        import warp_zerostore as wp
        from warp_zerostore._memory import byte_span

        a = wp.zeros(4, dtype=wp.float32)
        assert byte_span(a[1:3]) == (a.ptr + 4, a.ptr + 12)
        ```
    """
    ptr = int(array.ptr or 0)
    if array.size == 0 or not ptr:
        return ptr, ptr
    if getattr(array, "is_contiguous", False):
        return ptr, ptr + array.size * _compat.dtype_size_bytes(array.dtype)
    below = sum(min(0, (n - 1) * stride) for n, stride in zip(array.shape, array.strides))
    above = sum(max(0, (n - 1) * stride) for n, stride in zip(array.shape, array.strides))
    return ptr + below, ptr + above + _compat.dtype_size_bytes(array.dtype)


def overlap(a: tuple, b: tuple) -> bool:
    """Whether two byte spans share a byte."""
    return a[0] < b[1] and b[0] < a[1]
