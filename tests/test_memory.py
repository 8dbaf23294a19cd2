"""warp_zerostore._memory.byte_span: the bytes an array's elements occupy, whatever its strides' signs."""

import numpy as np
import pytest

import warp_zerostore as wp
from warp_zerostore._memory import byte_span


def test_contiguous_and_sliced(device):
    a = wp.zeros(10, dtype=wp.float64, device=device)
    assert byte_span(a) == (a.ptr, a.ptr + 80)
    assert byte_span(a[2:5]) == (a.ptr + 16, a.ptr + 40)
    assert byte_span(a[1::3]) == (a.ptr + 8, a.ptr + 8 + 2 * 24 + 8)  # elements 1, 4, 7


def test_negative_strides_span_below_the_pointer(device):
    a = wp.zeros((3, 4), dtype=wp.vec3, device=device)  # rows of 48 bytes
    flipped = wp.array(
        ptr=a.ptr + 2 * 48, dtype=wp.vec3, shape=(3, 4), strides=(-48, 12), capacity=3 * 48, device=device, copy=False
    )
    assert byte_span(flipped) == (a.ptr, a.ptr + 3 * 48)
    both = wp.array(ptr=a.ptr + 3 * 48 - 12, dtype=wp.vec3, shape=(3, 4), strides=(-48, -12), device=device, copy=False)
    assert byte_span(both) == (a.ptr, a.ptr + 3 * 48)
    np.testing.assert_array_equal(both.numpy().shape, (3, 4, 3))


@pytest.mark.parametrize("shape", [(0,), (3, 0)])
def test_empty_arrays_span_nothing(shape, device):
    a = wp.zeros(shape, dtype=wp.float32, device=device)
    first, end = byte_span(a)
    assert first == end
