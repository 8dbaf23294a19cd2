"""Every array store form follows the kernel's flag: overwrite an element twice inside one kernel.

For ``y = c1 * x`` overwritten by ``y = c2 * x`` and ``y.grad = 1``, zero_store=True gives ``x.grad = c2``
(the overwritten value gets nothing) and zeroes ``y.grad``; zero_store=False gives ``c1 + c2`` and
leaves ``y.grad = 1``.
"""

from typing import Any

import numpy as np
import pytest

import warp_zerostore as wp
from warp_zerostore import _compat

MODES = [True, False]


def both(factory):
    return {flag: factory(flag) for flag in (True, False, None)}


def expected(flag, c1, c2):
    if flag is None:
        flag = _compat.STOCK_STORE_ZEROES
    return (c2, 0.0) if flag else (c1 + c2, 1.0)


# ---- plain arrays of 1 to 4 dimensions -------------------------------------------------------------------


def _nd_kernels(flag):
    @wp.kernel(zero_store=flag)
    def store_1d(x: wp.array(dtype=float), y: wp.array(dtype=float)):
        i = wp.tid()
        y[i] = 2.0 * x[i]
        y[i] = 3.0 * x[i]

    @wp.kernel(zero_store=flag)
    def store_2d(x: wp.array2d(dtype=float), y: wp.array2d(dtype=float)):
        i, j = wp.tid()
        y[i, j] = 2.0 * x[i, j]
        y[i, j] = 3.0 * x[i, j]

    @wp.kernel(zero_store=flag)
    def store_3d(x: wp.array3d(dtype=float), y: wp.array3d(dtype=float)):
        i, j, k = wp.tid()
        y[i, j, k] = 2.0 * x[i, j, k]
        y[i, j, k] = 3.0 * x[i, j, k]

    @wp.kernel(zero_store=flag)
    def store_4d(x: wp.array4d(dtype=float), y: wp.array4d(dtype=float)):
        i, j, k, l = wp.tid()
        y[i, j, k, l] = 2.0 * x[i, j, k, l]
        y[i, j, k, l] = 3.0 * x[i, j, k, l]

    return {1: store_1d, 2: store_2d, 3: store_3d, 4: store_4d}


ND = both(_nd_kernels)
SHAPES = {1: (5,), 2: (2, 3), 3: (2, 2, 3), 4: (2, 1, 2, 3)}


@pytest.mark.parametrize("flag", [True, False, None])
@pytest.mark.parametrize("ndim", [1, 2, 3, 4])
def test_nd_array_store(flag, ndim, device):
    shape = SHAPES[ndim]
    x = wp.array(
        np.linspace(0.5, 1.5, int(np.prod(shape))).reshape(shape), dtype=float, requires_grad=True, device=device
    )
    y = wp.zeros(shape, dtype=float, requires_grad=True, device=device)
    with wp.Tape() as tape:
        wp.launch(ND[flag][ndim], dim=shape, inputs=[x, y], device=device)
    tape.backward(grads={y: wp.ones(shape, dtype=float, device=device)})
    gx, gy = expected(flag, 2.0, 3.0)
    np.testing.assert_allclose(y.numpy(), 3.0 * x.numpy())
    np.testing.assert_array_equal(x.grad.numpy(), gx)
    np.testing.assert_array_equal(y.grad.numpy(), gy)


# ---- component stores ------------------------------------------------------------------------------------


def _component_kernels(flag):
    @wp.kernel(zero_store=flag)
    def vec_attr(x: wp.array(dtype=float), v: wp.array(dtype=wp.vec3)):
        i = wp.tid()
        v[i].x = 2.0 * x[i]
        v[i].x = 3.0 * x[i]

    @wp.kernel(zero_store=flag)
    def vec_index(x: wp.array(dtype=float), v: wp.array(dtype=wp.vec3)):
        i = wp.tid()
        v[i][1] = 2.0 * x[i]
        v[i][1] = 3.0 * x[i]

    @wp.kernel(zero_store=flag)
    def mat_index(x: wp.array(dtype=float), m: wp.array(dtype=wp.mat22)):
        i = wp.tid()
        m[i][0, 1] = 2.0 * x[i]
        m[i][0, 1] = 3.0 * x[i]

    @wp.kernel(zero_store=flag)
    def quat_attr(x: wp.array(dtype=float), q: wp.array(dtype=wp.quat)):
        i = wp.tid()
        q[i].w = 2.0 * x[i]
        q[i].w = 3.0 * x[i]

    @wp.kernel(zero_store=flag)
    def transform_index(x: wp.array(dtype=float), t: wp.array(dtype=wp.transform)):
        i = wp.tid()
        t[i][4] = 2.0 * x[i]
        t[i][4] = 3.0 * x[i]

    @wp.kernel(zero_store=flag)
    def two_components(x: wp.array(dtype=float), v: wp.array(dtype=wp.vec3)):
        i = wp.tid()
        v[i].x = 2.0 * x[i]
        v[i].y = 5.0 * x[i]

    return {
        "vec_attr": (vec_attr, wp.vec3, (0,)),
        "vec_index": (vec_index, wp.vec3, (1,)),
        "mat_index": (mat_index, wp.mat22, (0, 1)),
        "quat_attr": (quat_attr, wp.quat, (3,)),
        "transform_index": (transform_index, wp.transform, (4,)),
        "two_components": (two_components, wp.vec3, None),
    }


COMPONENT = both(_component_kernels)


@pytest.mark.parametrize("flag", MODES)
@pytest.mark.parametrize("case", ["vec_attr", "vec_index", "mat_index", "quat_attr", "transform_index"])
def test_component_store(case, flag, device):
    kernel, dtype, slot = COMPONENT[flag][case]
    n = 3
    x = wp.array(np.arange(1, n + 1), dtype=float, requires_grad=True, device=device)
    a = wp.zeros(n, dtype=dtype, requires_grad=True, device=device)
    with wp.Tape() as tape:
        wp.launch(kernel, dim=n, inputs=[x, a], device=device)
    seed = np.ones_like(a.numpy())
    tape.backward(grads={a: wp.array(seed, dtype=dtype, device=device)})
    gx, gslot = expected(flag, 2.0, 3.0)
    np.testing.assert_array_equal(x.grad.numpy(), gx)
    grad = a.grad.numpy()
    values = a.numpy()
    index = (slice(None),) + slot
    np.testing.assert_array_equal(values[index], 3.0 * x.numpy())
    np.testing.assert_array_equal(grad[index], gslot)
    others = np.ones_like(grad, dtype=bool)
    others[index] = False
    np.testing.assert_array_equal(grad[others], 1.0)  # untouched slots keep their gradient


@pytest.mark.parametrize("flag", MODES)
def test_two_components_both_count(flag, device):
    """The issue's measurement: stock 1.9-1.12 give 0 here, 1.19 gives 7; with a flag, 7 everywhere."""
    kernel = COMPONENT[flag]["two_components"][0]
    x = wp.ones(2, dtype=float, requires_grad=True, device=device)
    v = wp.zeros(2, dtype=wp.vec3, requires_grad=True, device=device)
    with wp.Tape() as tape:
        wp.launch(kernel, dim=2, inputs=[x, v], device=device)
    tape.backward(grads={v: wp.array(np.ones((2, 3)), dtype=wp.vec3, device=device)})
    np.testing.assert_array_equal(x.grad.numpy(), 7.0)


def _component_of_an_element_kernels(flag):
    @wp.kernel(zero_store=flag)
    def vec_of_an_element(y: wp.array(dtype=float), v: wp.array(dtype=wp.vec3)):
        i = wp.tid()
        v[i].z = y[i]  # the value is an array element itself, not an expression of one

    @wp.kernel(zero_store=flag)
    def mat_of_an_element(y: wp.array(dtype=float), m: wp.array(dtype=wp.mat22)):
        i = wp.tid()
        m[i][1, 0] = y[i]

    return {"vec": (vec_of_an_element, wp.vec3, (2,)), "mat": (mat_of_an_element, wp.mat22, (1, 0))}


COMPONENT_OF_AN_ELEMENT = both(_component_of_an_element_kernels)


@pytest.mark.parametrize("flag", MODES)
@pytest.mark.parametrize("case", ["vec", "mat"])
def test_a_component_store_of_an_array_element_has_its_gradient(case, flag, device):
    """``yv[i].z = y[i]``: the stored value is an array element, loaded for the store; its gradient must reach ``y``
    through the element's own adjoint (flagged kernels on warp-lang <= 1.13 gave 0: the program fuzzer's find)."""
    kernel, dtype, slot = COMPONENT_OF_AN_ELEMENT[flag][case]
    y = wp.array([0.5, 0.25, -1.0], dtype=float, requires_grad=True, device=device)
    a = wp.zeros(3, dtype=dtype, requires_grad=True, device=device)
    seed = np.arange(1.0, 1.0 + a.numpy().size).reshape(a.numpy().shape)
    for tape in (wp.Tape(), wp.Tape(snapshot=True)):
        y.grad.zero_()
        with tape:
            wp.launch(kernel, dim=3, inputs=[y, a], device=device)
        tape.backward(grads={a: wp.array(seed, dtype=dtype, device=device)})
        np.testing.assert_array_equal(y.grad.numpy(), seed[(slice(None),) + slot])


def test_component_store_unflagged_is_stock(device):
    """zero_store=None keeps the installed Warp's component-store gradient: dropped before 1.14."""
    kernel = COMPONENT[None]["two_components"][0]
    x = wp.ones(2, dtype=float, requires_grad=True, device=device)
    v = wp.zeros(2, dtype=wp.vec3, requires_grad=True, device=device)
    with wp.Tape() as tape:
        wp.launch(kernel, dim=2, inputs=[x, v], device=device)
    tape.backward(grads={v: wp.array(np.ones((2, 3)), dtype=wp.vec3, device=device)})
    np.testing.assert_array_equal(x.grad.numpy(), 7.0 if _compat.STOCK_COMPONENT_STORES_DIFFERENTIABLE else 0.0)


# ---- structs, loops, branches, helpers -------------------------------------------------------------------


@wp.struct
class Holder:
    y: wp.array(dtype=float)


@wp.func
def store_helper(y: wp.array(dtype=float), i: int, v: float):
    y[i] = v


def _control_kernels(flag):
    @wp.kernel(zero_store=flag)
    def struct_field(x: wp.array(dtype=float), s: Holder):
        i = wp.tid()
        s.y[i] = 2.0 * x[i]
        s.y[i] = 3.0 * x[i]

    @wp.kernel(zero_store=flag)
    def static_loop(x: wp.array(dtype=float), y: wp.array(dtype=float)):
        i = wp.tid()
        for k in range(2):
            y[i] = float(k + 2) * x[i]

    @wp.kernel(zero_store=flag)
    def dynamic_loop(x: wp.array(dtype=float), y: wp.array(dtype=float), count: int):
        i = wp.tid()
        for k in range(count):
            y[i] = float(k + 2) * x[i]

    @wp.kernel(zero_store=flag)
    def while_loop(x: wp.array(dtype=float), y: wp.array(dtype=float)):
        i = wp.tid()
        k = int(0)
        while k < 2:
            y[i] = float(k + 2) * x[i]
            k += 1

    @wp.kernel(zero_store=flag)
    def branch(x: wp.array(dtype=float), y: wp.array(dtype=float)):
        i = wp.tid()
        if x[i] > 0.0:
            y[i] = 2.0 * x[i]
        else:
            y[i] = 7.0 * x[i]
        y[i] = 3.0 * x[i]

    @wp.kernel(zero_store=flag)
    def helper(x: wp.array(dtype=float), y: wp.array(dtype=float)):
        i = wp.tid()
        store_helper(y, i, 2.0 * x[i])
        store_helper(y, i, 3.0 * x[i])

    return {
        "struct_field": struct_field,
        "static_loop": static_loop,
        "dynamic_loop": dynamic_loop,
        "branch": branch,
        "helper": helper,
        "while_loop": while_loop,
    }


CONTROL = both(_control_kernels)


def launch_control(case, flag, device, n=4):
    kernel = CONTROL[flag][case]
    x = wp.array(np.linspace(0.5, 2.0, n), dtype=float, requires_grad=True, device=device)
    y = wp.zeros(n, dtype=float, requires_grad=True, device=device)
    if case == "struct_field":
        s = Holder()
        s.y = y
        inputs = [x, s]
    elif case == "dynamic_loop":
        inputs = [x, y, 2]
    else:
        inputs = [x, y]
    with wp.Tape() as tape:
        wp.launch(kernel, dim=n, inputs=inputs, device=device)
    tape.backward(grads={y: wp.ones(n, dtype=float, device=device)})
    return x, y


@pytest.mark.parametrize("flag", [True, False, None])
@pytest.mark.parametrize("case", ["struct_field", "static_loop", "dynamic_loop", "branch", "helper"])
def test_control_flow_and_helpers(case, flag, device):
    x, y = launch_control(case, flag, device)
    gx, gy = expected(flag, 2.0, 3.0)
    np.testing.assert_allclose(y.numpy(), 3.0 * x.numpy())
    np.testing.assert_array_equal(x.grad.numpy(), gx)
    np.testing.assert_array_equal(y.grad.numpy(), gy)


@pytest.mark.parametrize("flag", [True, False])
def test_while_loop(flag, device):
    """Warp's reverse mode does not replay a while loop iteration by iteration, so no store mode makes it
    exact: zero_store=True gives what Warp 1.13+ gives itself (2, not 3), False what Warp <= 1.12 gives."""
    x, y = launch_control("while_loop", flag, device)
    np.testing.assert_allclose(y.numpy(), 3.0 * x.numpy())
    np.testing.assert_array_equal(x.grad.numpy(), 2.0 if flag else 5.0)
    np.testing.assert_array_equal(y.grad.numpy(), 0.0 if flag else 1.0)


# ---- what does not overwrite keeps accumulating ----------------------------------------------------------


def _accumulating_kernels(flag):
    @wp.kernel(zero_store=flag)
    def add_assign(x: wp.array(dtype=float), y: wp.array(dtype=float)):
        i = wp.tid()
        y[i] = 2.0 * x[i]
        y[i] += 3.0 * x[i]

    @wp.kernel(zero_store=flag)
    def sub_assign(x: wp.array(dtype=float), y: wp.array(dtype=float)):
        i = wp.tid()
        y[i] = 2.0 * x[i]
        y[i] -= 3.0 * x[i]

    @wp.kernel(zero_store=flag)
    def atomics(x: wp.array(dtype=float), y: wp.array(dtype=float)):
        i = wp.tid()
        wp.atomic_add(y, i, 2.0 * x[i])
        wp.atomic_sub(y, i, 3.0 * x[i])

    return {"add_assign": (add_assign, 5.0), "sub_assign": (sub_assign, -1.0), "atomics": (atomics, -1.0)}


ACCUMULATING = both(_accumulating_kernels)


@pytest.mark.parametrize("flag", MODES)
@pytest.mark.parametrize("case", ["add_assign", "sub_assign", "atomics"])
def test_accumulating_updates_do_not_zero(case, flag, device):
    kernel, coefficient = ACCUMULATING[flag][case]
    n = 3
    x = wp.ones(n, dtype=float, requires_grad=True, device=device)
    y = wp.zeros(n, dtype=float, requires_grad=True, device=device)
    with wp.Tape() as tape:
        wp.launch(kernel, dim=n, inputs=[x, y], device=device)
    tape.backward(grads={y: wp.ones(n, dtype=float, device=device)})
    np.testing.assert_array_equal(y.numpy(), coefficient)
    np.testing.assert_array_equal(x.grad.numpy(), coefficient)
    if case == "atomics":
        # nothing overwrote y: its gradient stays in both modes
        np.testing.assert_array_equal(y.grad.numpy(), 1.0)
    else:
        np.testing.assert_array_equal(y.grad.numpy(), 0.0 if flag else 1.0)


# ---- indexed arrays --------------------------------------------------------------------------------------


def _indexed_kernels(flag):
    @wp.kernel(zero_store=flag)
    def indexed_store(x: wp.array(dtype=float), y: wp.indexedarray(dtype=float)):
        i = wp.tid()
        y[i] = 2.0 * x[i]
        y[i] = 3.0 * x[i]

    return indexed_store


INDEXED = both(_indexed_kernels)


@pytest.mark.parametrize("flag", [True, False, None])
def test_indexedarray_store(flag, device):
    """Warp does not differentiate through indexed arrays (its Tape rejects them; its store adjoint is empty).

    Flagged kernels that store into one build, store the right values, and run their backward pass like
    stock Warp: no gradient flows through the indexed array.
    """
    data = wp.zeros(6, dtype=float, device=device)
    idx = wp.array([4, 1, 3], dtype=int, device=device)
    y = wp.indexedarray(data, [idx])
    x = wp.array([1.0, 2.0, 3.0], dtype=float, device=device)
    wp.launch(INDEXED[flag], dim=3, inputs=[x, y], device=device)
    np.testing.assert_array_equal(data.numpy(), [0.0, 6.0, 0.0, 9.0, 3.0, 0.0])
    x_grad = wp.zeros(3, dtype=float, device=device)
    wp.launch(INDEXED[flag], dim=3, inputs=[x, y], adj_inputs=[x_grad, None], adjoint=True, device=device)
    np.testing.assert_array_equal(x_grad.numpy(), 0.0)


# ---- fabric arrays ---------------------------------------------------------------------------------------


def _fabric_kernels(flag):
    @wp.kernel(zero_store=flag)
    def fabric_store(x: wp.array(dtype=float), y: wp.fabricarray(dtype=float)):
        i = wp.tid()
        y[i] = 2.0 * x[i]
        y[i] = 3.0 * x[i]

    return fabric_store


FABRIC = both(_fabric_kernels) if hasattr(wp, "fabricarray") else {}


@pytest.mark.skipif(not FABRIC, reason="this warp-lang has no fabric arrays")
@pytest.mark.parametrize("flag", [True, False, None])
def test_fabricarray_store(flag, device):
    """Like indexed arrays, Warp does not differentiate through fabric arrays: flagged kernels build, store
    the right values, and run their backward pass with no gradient through the fabric array."""
    fabric_helpers = pytest.importorskip("warp.tests.test_fabricarray", reason="Warp's fabric test helpers")
    data = wp.zeros(5, dtype=float, device=device)
    y = wp.fabricarray(data=fabric_helpers._create_fabric_array_interface(data, "y", bucket_sizes=[2, 3]), attrib="y")
    x = wp.array([1.0, 2.0, 3.0, 4.0, 5.0], dtype=float, device=device)
    wp.launch(FABRIC[flag], dim=5, inputs=[x, y], device=device)
    np.testing.assert_array_equal(data.numpy(), 3.0 * x.numpy())
    x_grad = wp.zeros(5, dtype=float, device=device)
    wp.launch(FABRIC[flag], dim=5, inputs=[x, y], adj_inputs=[x_grad, None], adjoint=True, device=device)
    np.testing.assert_array_equal(x_grad.numpy(), 0.0)


# ---- component stores through struct fields; generic kernels -----------------------------------------------


@wp.struct
class VecHolder:
    v: wp.array(dtype=wp.vec3)


def _more_kernels(flag):
    @wp.kernel(zero_store=flag)
    def struct_component(x: wp.array(dtype=float), s: VecHolder):
        i = wp.tid()
        s.v[i].x = 2.0 * x[i]
        s.v[i].x = 3.0 * x[i]

    @wp.kernel(zero_store=flag)
    def generic_overwrite(x: wp.array(dtype=Any), y: wp.array(dtype=Any)):
        i = wp.tid()
        y[i] = x[i] + x[i]
        y[i] = x[i] + x[i] + x[i]

    return struct_component, generic_overwrite


MORE = both(_more_kernels)


@pytest.mark.parametrize("flag", MODES)
def test_component_store_through_struct_field(flag, device):
    x = wp.ones(2, dtype=float, requires_grad=True, device=device)
    s = VecHolder()
    s.v = wp.zeros(2, dtype=wp.vec3, requires_grad=True, device=device)
    with wp.Tape() as tape:
        wp.launch(MORE[flag][0], dim=2, inputs=[x, s], device=device)
    tape.backward(grads={s.v: wp.array(np.ones((2, 3)), dtype=wp.vec3, device=device)})
    gx, gslot = expected(flag, 2.0, 3.0)
    np.testing.assert_array_equal(x.grad.numpy(), gx)
    np.testing.assert_array_equal(s.v.grad.numpy()[:, 0], gslot)
    np.testing.assert_array_equal(s.v.grad.numpy()[:, 1:], 1.0)


@pytest.mark.parametrize("flag", MODES)
@pytest.mark.parametrize("dtype", [wp.float32, wp.float64, wp.vec3])
def test_generic_kernel_overloads_follow_flag(flag, dtype, device):
    x = wp.ones(3, dtype=dtype, requires_grad=True, device=device)
    y = wp.zeros(3, dtype=dtype, requires_grad=True, device=device)
    with wp.Tape() as tape:
        wp.launch(MORE[flag][1], dim=3, inputs=[x, y], device=device)
    tape.backward(grads={y: wp.array(np.ones_like(y.numpy()), dtype=dtype, device=device)})
    gx, gy = expected(flag, 2.0, 3.0)
    np.testing.assert_array_equal(x.grad.numpy(), gx)
    np.testing.assert_array_equal(y.grad.numpy(), gy)


# ---- indices of other integer types ------------------------------------------------------------------------


def _typed_index_kernels(flag):
    @wp.kernel(zero_store=flag)
    def store_at_typed_index(x: wp.array(dtype=float), idx: wp.array(dtype=wp.uint8), y: wp.array(dtype=float)):
        i = wp.tid()
        j = idx[i]
        y[j] = 2.0 * x[i]
        y[j] = 3.0 * x[i]

    return store_at_typed_index


TYPED_INDEX = both(_typed_index_kernels)


@pytest.mark.parametrize("flag", MODES)
def test_store_at_non_int_index(flag, device):
    """Stores indexed by uint8 (or other integer types) resolve to the mode's adjoint, as Warp's own do."""
    x = wp.array([1.0, 2.0, 3.0], dtype=float, requires_grad=True, device=device)
    idx = wp.array([2, 0, 1], dtype=wp.uint8, device=device)
    y = wp.zeros(3, dtype=float, requires_grad=True, device=device)
    with wp.Tape() as tape:
        wp.launch(TYPED_INDEX[flag], dim=3, inputs=[x, idx, y], device=device)
    tape.backward(grads={y: wp.ones(3, dtype=float, device=device)})
    np.testing.assert_array_equal(y.numpy(), [6.0, 9.0, 3.0])
    gx, gy = expected(flag, 2.0, 3.0)
    np.testing.assert_array_equal(x.grad.numpy(), gx)
    np.testing.assert_array_equal(y.grad.numpy(), gy)
