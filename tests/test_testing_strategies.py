"""warp_zerostore.testing strategies for arrays: dtypes, shapes, element bounds, requires_grad, device; and
check_gradients run over drawn arrays of every dtype kind (zero mode passes, accumulate mode fails)."""

import numpy as np
import pytest
from helpers import kernels_testing as kt
from hypothesis import given
from hypothesis import strategies as st

import warp_zerostore as wp
from warp_zerostore.testing import GradientMismatch, array_data, arrays, check_gradients, dtypes, shapes
from warp_zerostore.testing.strategies import KINDS


@given(shape=shapes(min_dims=2, max_dims=3, min_side=2, max_side=3))
def test_shapes_are_bounded(shape):
    assert 2 <= len(shape) <= 3 and all(2 <= side <= 3 for side in shape)


ELEMENT_SHAPES = {
    "scalar": [()],
    "vector": [(2,), (3,), (4,)],
    "matrix": [(2, 2), (3, 3), (4, 4)],
    "quaternion": [(4,)],
    "transform": [(7,)],
}


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("scalar, np_scalar", [(wp.float16, np.float16), (wp.float64, np.float64)])
@given(data=st.data())
def test_dtypes_draw_the_kinds_and_scalars_asked_for(kind, scalar, np_scalar, data):
    dtype = data.draw(dtypes(scalar_types=[scalar], kinds=[kind]))
    values = wp.zeros(1, dtype=dtype).numpy()
    assert values.dtype == np_scalar and values.shape[1:] in ELEMENT_SHAPES[kind]


def test_dtype_and_shape_arguments_are_checked():
    with pytest.raises(ValueError, match="kinds must be a non-empty subset"):
        dtypes(kinds=["tensor"])
    with pytest.raises(ValueError, match="scalar_types must be"):
        dtypes(scalar_types=[wp.int32])
    with pytest.raises(ValueError, match="1 to 4 dimensions"):
        shapes(max_dims=5)


@given(a=arrays(dtypes(), shapes(max_dims=4, max_side=3), elements=(-0.5, 0.5)))
def test_arrays_have_the_drawn_dtype_shape_bounds_and_gradient(a):
    assert 1 <= a.ndim <= 4 and all(1 <= s <= 3 for s in a.shape)
    assert a.requires_grad and a.grad is not None and str(a.device) == "cpu"
    values = a.numpy().astype(np.float64)
    assert values.shape[: a.ndim] == a.shape
    assert np.all(np.abs(values) <= 0.5)


@given(a=arrays(wp.float32, (3,), requires_grad=False))
def test_arrays_without_gradient(a):
    assert not a.requires_grad and a.dtype is wp.float32


@given(data=array_data(wp.float16, (8,), elements=st.floats(-1.0, 1.0)))
def test_array_data_is_rounded_to_the_dtype(data):
    """Values are as the array stores them, so references computed from them see what Warp sees."""
    assert data.dtype == np.float64 and np.array_equal(data, data.astype(np.float16).astype(np.float64))


@given(data=array_data(wp.mat22, (2,)))
def test_array_data_has_the_element_shape(data):
    assert data.shape == (2, 2, 2)


# One (dtype, kernel) per kind and scalar width; data drawn per example.
@pytest.mark.parametrize("name", list(kt.SQUARE_DTYPES))
@given(data=st.data())
def test_check_gradients_on_drawn_arrays(name, data):
    dtype = kt.SQUARE_DTYPES[name]
    x = data.draw(arrays(dtype, shapes(max_dims=1, max_side=4)), label="x")
    y = wp.zeros(x.shape, dtype=dtype, requires_grad=True)

    def square(x, y, kernel=kt.SQUARE[(name, True)]):
        wp.launch(kernel, dim=x.shape, inputs=[x, y])

    mode = data.draw(st.sampled_from(["vjp", "jvp"]), label="mode")
    check_gradients(square, [x, y], mode=mode)


@pytest.mark.parametrize("name", list(kt.SQUARE_DTYPES))
@given(data=st.data())
def test_check_gradients_fails_accumulate_mode_on_drawn_arrays(name, data):
    """Negative twin: the overwritten y keeps its gradient in accumulate mode, for every dtype kind."""
    dtype = kt.SQUARE_DTYPES[name]
    x = data.draw(arrays(dtype, shapes(max_dims=1, max_side=4)), label="x")
    y = wp.zeros(x.shape, dtype=dtype, requires_grad=True)

    def square(x, y, kernel=kt.SQUARE[(name, False)]):
        wp.launch(kernel, dim=x.shape, inputs=[x, y])

    with pytest.raises(GradientMismatch) as failure:
        check_gradients(square, [x, y], cotangents={"x": np.zeros(x.numpy().shape), "y": np.ones(y.numpy().shape)})
    assert failure.value.array == "y" and failure.value.tape == 1.0 and failure.value.finite_difference == 0.0
