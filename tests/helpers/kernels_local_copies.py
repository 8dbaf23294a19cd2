"""Kernels for tests/test_local_copies.py: a local's component or field assigned in place after a whole use.

Each kernel reads row ``i`` of ``x`` (``a, b, c``) and writes ``y[i]``; `REFERENCES` holds the same function of
one row in NumPy float64. Every construct has a flagged kernel and an unflagged twin (``*_stock``) with the same
body: the twin keeps Warp's code, whose adjoint is wrong there.
"""

import numpy as np

import warp_zerostore as wp
from warp_zerostore import _compat

wp.set_module_options({"enable_backward": True})


@wp.struct
class Pair:
    a: float
    b: float


@wp.func
def pair_product(p: Pair):
    return p.a * p.b


def _component_assign(x: wp.array2d(dtype=float), y: wp.array(dtype=float)):
    i = wp.tid()
    v = wp.vec3(x[i, 0], 2.0 * x[i, 1], x[i, 2])
    d = wp.dot(v, v)
    v[1] = 3.0 * x[i, 0]
    y[i] = d + v[1] * x[i, 1]


def _component_overwrite(x: wp.array2d(dtype=float), y: wp.array(dtype=float)):
    i = wp.tid()
    v = wp.vec3(x[i, 0], 2.0 * x[i, 1], x[i, 2])
    v[1] = 3.0  # no use before: Warp's assignment still passes the overwritten component's adjoint on to x[i, 1]
    y[i] = wp.dot(v, v)


def _attribute_assign(x: wp.array2d(dtype=float), y: wp.array(dtype=float)):
    i = wp.tid()
    v = wp.vec3(x[i, 0], 2.0 * x[i, 1], x[i, 2])
    d = wp.dot(v, v)
    v.y = 3.0 * x[i, 0]
    y[i] = d + v.y * x[i, 1]


def _component_add(x: wp.array2d(dtype=float), y: wp.array(dtype=float)):
    i = wp.tid()
    v = wp.vec3(x[i, 0], x[i, 1], x[i, 2])
    d = wp.dot(v, v)
    v[1] += x[i, 0] * x[i, 2]
    y[i] = d + v[1] * v[1]


def _component_subtract(x: wp.array2d(dtype=float), y: wp.array(dtype=float)):
    i = wp.tid()
    v = wp.vec3(x[i, 0], x[i, 1], x[i, 2])
    d = wp.length(v)
    v.z -= x[i, 0]
    y[i] = d * v.z


def _component_scale(x: wp.array2d(dtype=float), y: wp.array(dtype=float)):
    i = wp.tid()
    v = wp.vec3(x[i, 0], x[i, 1], x[i, 2])
    d = wp.dot(v, v)
    v[0] *= x[i, 1]
    y[i] = d + v[0]


def _matrix_element_assign(x: wp.array2d(dtype=float), y: wp.array(dtype=float)):
    i = wp.tid()
    m = wp.mat22(x[i, 0], x[i, 1], x[i, 2], x[i, 0])
    d = wp.determinant(m)
    m[0, 1] = x[i, 2] * x[i, 2]
    y[i] = d + m[0, 1] * x[i, 0]


def _transform_rotation_assign(x: wp.array2d(dtype=float), y: wp.array(dtype=float)):
    i = wp.tid()
    t = wp.transform(wp.vec3(x[i, 0], x[i, 1], x[i, 2]), wp.quat(x[i, 0], x[i, 1], x[i, 2], 1.0))
    p = wp.transform_point(t, wp.vec3(1.0, 2.0, 3.0))
    t.q = wp.quat_identity()
    y[i] = p[0] + 2.0 * p[1] * p[2] + wp.transform_point(t, wp.vec3(1.0, 0.0, 0.0))[0] * x[i, 0]


def _field_assign(x: wp.array2d(dtype=float), y: wp.array(dtype=float)):
    i = wp.tid()
    s = Pair()
    s.a = x[i, 0]
    s.b = x[i, 1]
    d = pair_product(s)
    s.a = x[i, 2]
    y[i] = d + s.a * s.b


def _field_add(x: wp.array2d(dtype=float), y: wp.array(dtype=float)):
    i = wp.tid()
    s = Pair()
    s.a = x[i, 0]
    s.b = x[i, 1]
    d = pair_product(s)
    s.a += x[i, 2]
    y[i] = d + s.a * s.b


def _field_scale(x: wp.array2d(dtype=float), y: wp.array(dtype=float)):
    i = wp.tid()
    s = Pair()
    s.a = x[i, 0]
    s.b = x[i, 1]
    d = pair_product(s)
    s.a *= x[i, 2]
    y[i] = d + s.a * s.b


def _rotate(q, v):
    """Warp's quat_rotate: v (2 w^2 - 1) + 2 w (q_v x v) + 2 q_v (q_v . v)."""
    qv, w = np.asarray(q[:3]), q[3]
    return v * (2 * w * w - 1) + np.cross(qv, v) * w * 2 + qv * np.dot(qv, v) * 2


def _transform_reference(a, b, c):
    p = _rotate((a, b, c, 1.0), np.array([1.0, 2.0, 3.0])) + np.array([a, b, c])
    return p[0] + 2 * p[1] * p[2] + (1 + a) * a


#: name -> (Python function of the kernel, NumPy float64 reference of one row)
CONSTRUCTS = {
    "component_assign": (_component_assign, lambda a, b, c: a * a + 4 * b * b + c * c + 3 * a * b),
    "component_overwrite": (_component_overwrite, lambda a, b, c: a * a + 9.0 + c * c),
    "attribute_assign": (_attribute_assign, lambda a, b, c: a * a + 4 * b * b + c * c + 3 * a * b),
    "component_add": (_component_add, lambda a, b, c: a * a + b * b + c * c + (b + a * c) ** 2),
    "component_subtract": (_component_subtract, lambda a, b, c: np.sqrt(a * a + b * b + c * c) * (c - a)),
    "component_scale": (_component_scale, lambda a, b, c: a * a + b * b + c * c + a * b),
    "matrix_element_assign": (_matrix_element_assign, lambda a, b, c: a * a - b * c + c * c * a),
    "transform_rotation_assign": (_transform_rotation_assign, _transform_reference),
    "field_assign": (_field_assign, lambda a, b, c: a * b + c * b),
    "field_add": (_field_add, lambda a, b, c: a * b + (a + c) * b),
    "field_scale": (_field_scale, lambda a, b, c: a * b + a * c * b),
}

FLAGGED = {name: wp.kernel(f, zero_store=True) for name, (f, _) in CONSTRUCTS.items()}
#: the same functions unflagged, in a module of their own (one kernel per function name and module)
STOCK_MODULE = _compat.get_module(f"{__name__}_stock")
STOCK = {name: wp.kernel(f, module=STOCK_MODULE) for name, (f, _) in CONSTRUCTS.items()}


@wp.kernel(zero_store=True)
def assign_in_runtime_loop(x: wp.array2d(dtype=float), y: wp.array(dtype=float), n: int):
    i = wp.tid()
    v = wp.vec3(x[i, 0], x[i, 1], x[i, 2])
    d = float(0.0)
    for _k in range(n):
        d = d + wp.dot(v, v)
        v[1] = 3.0 * x[i, 0]  # in a loop Warp does not unroll; stays Warp's (warned)
    y[i] = d


@wp.struct
class Holder:
    v: wp.vec3


@wp.func
def holder_length(h: Holder):
    return wp.length(h.v)


@wp.kernel(zero_store=True)
def component_of_a_field(x: wp.array2d(dtype=float), y: wp.array(dtype=float)):
    i = wp.tid()
    h = Holder()
    h.v = wp.vec3(x[i, 0], x[i, 1], x[i, 2])
    d = holder_length(h)
    h.v.x = 1.0  # a component of a field; stays Warp's (warned)
    y[i] = d + h.v.x
