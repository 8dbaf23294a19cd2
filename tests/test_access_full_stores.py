"""``access.fully_stored``: which outputs every thread provably stores in full (the JAX bridge skips their zero
fill). Each positive kernel has negative twins that differ by one thing that may leave an element unwritten."""

import pytest

import warp_zerostore as wp
from warp_zerostore.access import fully_stored


@wp.kernel
def elementwise(x: wp.array(dtype=float), y: wp.array(dtype=float)):
    i = wp.tid()
    y[i] = x[i] * 2.0


@wp.kernel
def elementwise_2d(x: wp.array2d(dtype=float), y: wp.array2d(dtype=float)):
    i, j = wp.tid()
    t = x[i, j]
    y[i, j] = t * t


@wp.kernel
def conditional(x: wp.array(dtype=float), y: wp.array(dtype=float)):
    i = wp.tid()
    if x[i] > 0.0:
        y[i] = x[i]


@wp.kernel
def early_return(x: wp.array(dtype=float), y: wp.array(dtype=float)):
    i = wp.tid()
    if x[i] > 0.0:
        return
    y[i] = x[i]


@wp.kernel
def shifted(x: wp.array(dtype=float), y: wp.array(dtype=float)):
    i = wp.tid()
    y[i + 1] = x[i]


@wp.kernel
def transposed(x: wp.array2d(dtype=float), y: wp.array2d(dtype=float)):
    i, j = wp.tid()
    y[j, i] = x[i, j]


@wp.kernel
def index_rebound(x: wp.array(dtype=float), y: wp.array(dtype=float)):
    i = wp.tid()
    i = i // 2
    y[i] = x[i]


@wp.kernel
def component_store(x: wp.array(dtype=wp.vec3), y: wp.array(dtype=wp.vec3)):
    i = wp.tid()
    y[i].x = x[i].x


@wp.kernel
def accumulated(x: wp.array(dtype=float), y: wp.array(dtype=float)):
    i = wp.tid()
    y[i] += x[i]


@wp.kernel
def in_loop(x: wp.array(dtype=float), y: wp.array(dtype=float)):
    i = wp.tid()
    for _k in range(1):
        y[i] = x[i]


@pytest.mark.parametrize(
    ("kernel", "expected"),
    [
        (elementwise, {"y": 1}),
        (elementwise_2d, {"y": 2}),
        (conditional, {}),
        (early_return, {}),
        (shifted, {}),
        (transposed, {}),
        (index_rebound, {}),
        (component_store, {}),
        (accumulated, {}),
        (in_loop, {}),
    ],
    ids=lambda v: getattr(v, "key", None) or str(v),
)
def test_fully_stored(kernel, expected):
    assert fully_stored(kernel) == expected


@wp.kernel
def reads_before(x: wp.array(dtype=float), y: wp.array(dtype=float)):
    i = wp.tid()
    y[i] = y[i] + x[i]


@wp.kernel
def reads_a_neighbour_after(x: wp.array(dtype=float), y: wp.array(dtype=float), z: wp.array(dtype=float)):
    i = wp.tid()
    y[i] = x[i]
    z[i] = y[(i + 1) % y.shape[0]]


@wp.kernel
def passed_to_a_builtin(x: wp.array(dtype=float), y: wp.array(dtype=float)):
    i = wp.tid()
    y[i] = x[i]
    wp.atomic_add(y, 0, 1.0)


@pytest.mark.parametrize("kernel", [reads_before, reads_a_neighbour_after, passed_to_a_builtin], ids=lambda k: k.key)
def test_an_output_used_otherwise_is_not_fully_stored(kernel):
    assert "y" not in fully_stored(kernel)
    assert fully_stored(reads_a_neighbour_after) == {"z": 1}
