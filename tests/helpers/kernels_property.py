"""Elementwise ops for the property tests: one kernel per (op, dtype, mode), all in one module, built once.

Each op writes ``dst[off + i]`` for ``i < dim``: a launch overwrites a window of its destination. Next to
the kernels: what each op reads and writes (its ``Op``) and its NumPy semantics (its reference ``Rule``).
"""

import warp_zerostore as wp
from warp_zerostore.testing import Op
from warp_zerostore.testing.reference import Rule

DTYPES = {"float32": wp.float32, "float64": wp.float64, "vec3": wp.vec3, "mat22": wp.mat22}
SCALAR_OF = {"float32": wp.float32, "float64": wp.float64, "vec3": wp.float32, "mat22": wp.float32}
OP_NAMES = ("scale", "add", "mul", "axpy")


def _ops(dtype_name, flag):
    T = DTYPES[dtype_name]
    S = SCALAR_OF[dtype_name]
    two = S(2.0)
    three = S(3.0)
    elementwise = dtype_name in ("vec3", "mat22")

    @wp.kernel(zero_store=flag)
    def scale(src: wp.array(dtype=T), dst: wp.array(dtype=T), off: int):
        i = wp.tid() + off
        dst[i] = two * src[i]

    @wp.kernel(zero_store=flag)
    def add(a: wp.array(dtype=T), b: wp.array(dtype=T), dst: wp.array(dtype=T), off: int):
        i = wp.tid() + off
        dst[i] = a[i] + b[i]

    if elementwise:

        @wp.kernel(zero_store=flag)
        def mul(a: wp.array(dtype=T), b: wp.array(dtype=T), dst: wp.array(dtype=T), off: int):
            i = wp.tid() + off
            dst[i] = wp.cw_mul(a[i], b[i])

    else:

        @wp.kernel(zero_store=flag)
        def mul(a: wp.array(dtype=T), b: wp.array(dtype=T), dst: wp.array(dtype=T), off: int):
            i = wp.tid() + off
            dst[i] = a[i] * b[i]

    @wp.kernel(zero_store=flag)
    def axpy(src: wp.array(dtype=T), dst: wp.array(dtype=T), off: int):
        i = wp.tid() + off
        dst[i] = dst[i] + three * src[i]

    return {"scale": scale, "add": add, "mul": mul, "axpy": axpy}


KERNELS = {(d, flag): _ops(d, flag) for d in DTYPES for flag in (True, False)}

# Reads, writes and the reads whose value the backward pass does not need.
ACCESS = {
    "scale": dict(reads=("src",), writes=("dst",), linear=("src",)),
    "add": dict(reads=("a", "b"), writes=("dst",), linear=("a", "b")),
    "mul": dict(reads=("a", "b"), writes=("dst",)),
    "axpy": dict(reads=("dst", "src"), writes=("dst",), linear=("dst", "src")),
}

# NumPy semantics, reads in the order the kernels load them.
RULES = {
    "scale": Rule(reads=("src",), write="dst", forward=lambda src: 2.0 * src, vjp=lambda g, src: (2.0 * g,)),
    "add": Rule(reads=("a", "b"), write="dst", forward=lambda a, b: a + b, vjp=lambda g, a, b: (g, g)),
    "mul": Rule(reads=("a", "b"), write="dst", forward=lambda a, b: a * b, vjp=lambda g, a, b: (g * b, g * a)),
    "axpy": Rule(
        reads=("dst", "src"),
        write="dst",
        forward=lambda dst, src: dst + 3.0 * src,
        vjp=lambda g, dst, src: (g, 3.0 * g),
    ),
}

OPS = {
    key: [Op(kernel, offset="off", name=name, **ACCESS[name]) for name, kernel in kernels.items()]
    for key, kernels in KERNELS.items()
}
