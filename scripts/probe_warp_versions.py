"""Measure, on the installed warp-lang, the stock behaviours `warp_zerostore._compat` tells apart by version.

Run it with each matrix venv's Python (``make probe-versions`` runs all of them); it prints one JSON line:
store zeroing, component-store gradients, the copy adjoint (accumulating; a window's offsets), tile_store's
adjoint, slot stores and retain_grad, and the adjoint bugs newer Warp fixed (flagged kernels get the fix on every
version, `warp_zerostore.codegen.backports`: a ternary's side, a forward-only module's helper, a helper first built
for a forward-only kernel, tile maps of tanh, a hand-written adjoint called from a helper; not yet: a struct field
assigned in a kernel or in a helper that returns the struct), each measured with stock Warp (plain ``import warp``, the
package not imported), plus the version. With ``--check``, it then imports the package and exits 1 where a
measured fact and `_compat`'s disagree (``make probe-versions`` passes it).
"""

import importlib
import json
import os
import subprocess
import sys
import tempfile
import textwrap

import numpy as np
import warp as wp

if sys.argv[1:2] == ["--nested-helper"]:  # one fresh process: the helper row whose outcome varies per process
    _NESTED = True
else:
    _NESTED = False

wp.config.quiet = True
wp.config.kernel_cache_dir = tempfile.mkdtemp(prefix="probe_")
wp.init()
_SOURCES = tempfile.mkdtemp(prefix="probe_src_")
sys.path.insert(0, _SOURCES)


def source_module(name: str, body: str, header: str = ""):
    """A module of kernels written to a file of its own (module options are per module)."""
    with open(os.path.join(_SOURCES, f"{name}.py"), "w") as f:
        f.write("import warp as wp\n" + header + "\n" + textwrap.dedent(body))
    return importlib.import_module(name)


def gradient(kernel, xs, seed, n_out=None, tiled=False):
    """x.grad of one launch of ``kernel(x, y)`` on a Tape, ``y``'s gradient seeded with ``seed``."""
    x = wp.array(np.array(xs, dtype=np.float32), dtype=float, requires_grad=True)
    y = wp.zeros(n_out or len(xs), dtype=float, requires_grad=True)
    tape = wp.Tape()
    with tape:
        if tiled:
            wp.launch_tiled(kernel, dim=[1], inputs=[x, y], block_dim=1)
        else:
            wp.launch(kernel, dim=len(xs), inputs=[x, y])
    tape.backward(grads={y: wp.array(np.array(seed, dtype=np.float32), dtype=float)})
    return [round(float(v), 4) for v in x.grad.numpy()]


NESTED_HELPER = """
@wp.func
def inner(p: float):
    return p * p

@wp.func
def outer(p: float):
    return inner(p)

@wp.kernel(enable_backward=False)
def forward_only(x: wp.array(dtype=float), y: wp.array(dtype=float)):
    i = wp.tid()
    y[i] = outer(x[i])

@wp.kernel
def differentiable(x: wp.array(dtype=float), y: wp.array(dtype=float)):
    i = wp.tid()
    y[i] = outer(x[i])
"""

if _NESTED:
    module = source_module("probe_nested", NESTED_HELPER)
    print(json.dumps(gradient(module.differentiable, [0.5, -0.75], [1.0, 1.0]) == [1.0, -1.5]))
    sys.exit(0)


@wp.kernel
def overwrite(x: wp.array(dtype=float), y: wp.array(dtype=float)):
    i = wp.tid()
    y[i] = 2.0 * x[i]
    y[i] = 3.0 * x[i]


@wp.kernel
def component(x: wp.array(dtype=float), y: wp.array(dtype=wp.vec3)):
    i = wp.tid()
    y[i].x = 2.0 * x[i]
    y[i].y = 5.0 * x[i]


def grad_of(kernel, y, seed):
    x = wp.array([1.0], dtype=float, requires_grad=True)
    tape = wp.Tape()
    with tape:
        wp.launch(kernel, dim=1, inputs=[x, y])
    tape.backward(grads={y: wp.array(seed, dtype=y.dtype)})
    return float(x.grad.numpy()[0])


facts = {"version": wp.config.version}
# store adjoint: zeroes (3) or accumulates the overwritten value's gradient too (5)
facts["store_zeroes"] = grad_of(overwrite, wp.zeros(1, dtype=float, requires_grad=True), [1.0]) == 3.0
# component store into an array element: differentiable (7) or dropped (0)
facts["component_store_gradient"] = grad_of(
    component, wp.zeros(1, dtype=wp.vec3, requires_grad=True), [[1.0, 1.0, 1.0]]
)
# wp.copy on a Tape: src.grad accumulated (1 + 1 = 2) or overwritten (1) with dest.grad; dest.grad zeroed?
src = wp.array([1.0], dtype=float, requires_grad=True)
dest = wp.zeros(1, dtype=float, requires_grad=True)
src.grad.fill_(1.0)
tape = wp.Tape()
with tape:
    wp.copy(dest, src)
tape.backward(grads={dest: wp.array([1.0], dtype=float)})
facts["copy_adjoint_src_grad"] = float(src.grad.numpy()[0])
facts["copy_adjoint_dest_grad_after"] = float(dest.grad.numpy()[0])
codegen = getattr(getattr(wp, "_src", None), "codegen", None) or __import__("warp.codegen", fromlist=["Adjoint"])
facts["slot_stores"] = hasattr(codegen.Adjoint, "array_slot_adjoint")
facts["retain_grad"] = "retain_grad" in wp.array.__init__.__code__.co_varnames
facts["tid_is_warp_check"] = "_is_tid_call" in open(codegen.__file__).read()

# wp.copy with window offsets: s.grad[2:4] gets d.grad[1:3] (right) or s.grad[1:3] does (the offsets swapped)
src = wp.array([1.0, 2.0, 3.0, 4.0], dtype=float, requires_grad=True)
dest = wp.zeros(4, dtype=float, requires_grad=True)
tape = wp.Tape()
with tape:
    wp.copy(dest, src, dest_offset=1, src_offset=2, count=2)
tape.backward(grads={dest: wp.array([10.0, 20.0, 30.0, 40.0], dtype=float)})
facts["copy_adjoint_offsets_right"] = src.grad.numpy().tolist() == [0.0, 0.0, 20.0, 30.0]


def right(measure) -> "bool | str":
    """True or False as ``measure()`` says; "build error" where the kernel does not build."""
    try:
        return bool(measure())
    except Exception:  # noqa: BLE001 - Warp's build error (the C++ compiler's message is printed above)
        return "build error"


rows = source_module(
    "probe_rows",
    """
    @wp.struct
    class S:
        a: float

    @wp.kernel
    def ternary(x: wp.array(dtype=float), y: wp.array(dtype=float)):
        i = wp.tid()
        y[i] += x[i] if x[i] > 10.0 else x[(i + 1) % 2]

    @wp.kernel
    def struct_field(x: wp.array(dtype=float), y: wp.array(dtype=float)):
        i = wp.tid()
        s = S()
        s.a = x[i]
        y[i] = s.a * s.a

    @wp.func
    def make(p: float):
        r = S()
        r.a = p * p
        return r

    @wp.kernel
    def struct_return(x: wp.array(dtype=float), y: wp.array(dtype=float)):
        i = wp.tid()
        y[i] = make(x[i]).a

    @wp.kernel
    def tile_store_twice(x: wp.array(dtype=float), y: wp.array(dtype=float)):
        i = wp.tid()
        t = wp.tile_load(x, shape=4)
        wp.tile_store(y, wp.tile_map(wp.mul, t, t), offset=i * 4)
        wp.tile_store(y, t, offset=i * 4)
    """,
)
# thread 0 takes its first side (x[0] = 20), thread 1 its second (x[0] again): [4, 0]; [3, 1] where each thread
# takes its second side's element whatever it chose (<= 1.10), [0, 0] where a side has no adjoint (1.11-1.16)
ternary_gradient = gradient(rows.ternary, [20.0, 2.0], [1.0, 3.0])
facts["ternary_differentiable"] = ternary_gradient == [4.0, 0.0]
facts["ternary_takes_second_side"] = ternary_gradient == [3.0, 1.0]
facts["struct_field_store_differentiable"] = right(
    lambda: gradient(rows.struct_field, [0.5, -0.25], [1.0, 1.0]) == [1.0, -0.5]
)
facts["struct_return_differentiable"] = right(
    lambda: gradient(rows.struct_return, [0.5, -0.25], [1.0, 1.0]) == [1.0, -0.5]
)
# the first store's gradient (2 x) leaks where the tile_store adjoint accumulates: 1 + 2 x instead of 1
facts["tile_store_zeroes"] = right(
    lambda: gradient(rows.tile_store_twice, [0.5, -0.25, 1.0, 2.0], [1.0] * 4, tiled=True) == [1.0] * 4
)

forward_only_module = source_module(
    "probe_forward_only",
    """
    @wp.func
    def same(p: float):
        return p

    @wp.kernel(enable_backward=True)
    def times_helper(x: wp.array(dtype=float), y: wp.array(dtype=float)):
        i = wp.tid()
        y[i] = x[i] * same(x[i])
    """,
    header='wp.set_module_options({"enable_backward": False})',
)
facts["forward_only_module_helper_adjoint"] = right(
    lambda: gradient(forward_only_module.times_helper, [0.5, -0.75], [1.0, 1.0]) == [1.0, -1.5]
)

tanh_module = source_module(
    "probe_tile_tanh",
    """
    @wp.kernel
    def tile_tanh(x: wp.array(dtype=float), y: wp.array(dtype=float)):
        i = wp.tid()
        wp.tile_store(y, wp.tile_map(wp.tanh, wp.tile_load(x, shape=4)), offset=i * 4)
    """,
)
XS = [0.5, -0.25, 1.0, 2.0]
facts["tile_map_tanh"] = right(
    lambda: np.allclose(gradient(tanh_module.tile_tanh, XS, [1.0] * 4, tiled=True), 1.0 - np.tanh(XS) ** 2, atol=1e-3)
)

custom_module = source_module(
    "probe_custom_adjoint",
    """
    @wp.func
    def h0(p: float):
        return wp.sin(p)

    @wp.func_grad(h0)
    def adj_h0(p: float, adj_ret: float):
        wp.adjoint[p] += wp.cos(p) * adj_ret

    @wp.func
    def h1(p: float):
        return h0(p)

    @wp.kernel
    def calls_h1(x: wp.array(dtype=float), y: wp.array(dtype=float)):
        i = wp.tid()
        y[i] = h1(x[i])
    """,
)
facts["custom_adjoint_called_from_func"] = right(
    lambda: np.allclose(gradient(custom_module.calls_h1, [0.5, -0.25], [1.0, 1.0]), np.cos([0.5, -0.25]), atol=1e-3)
)

# a helper first built for a forward-only kernel, then called by a differentiable one: which kernel builds first
# varies between processes, so this is counted over fresh processes (each with its own kernel cache)
RUNS = 6
outcomes = [
    subprocess.run([sys.executable, __file__, "--nested-helper"], capture_output=True, text=True).stdout.strip()
    for _ in range(RUNS)
]
facts["helper_shared_with_forward_only_right"] = f"{outcomes.count('true')} of {RUNS}"

print(json.dumps(facts))

if "--check" in sys.argv[1:]:
    from warp_zerostore import _compat  # noqa: E402 - measured first, with stock Warp alone

    expected = {
        "store_zeroes": _compat.STOCK_STORE_ZEROES,
        "copy_adjoint_offsets_right": _compat.STOCK_COPY_ADJOINT_OFFSETS_RIGHT,
        "ternary_differentiable": not _compat.TERNARY_WITHOUT_ADJOINT,
        "ternary_takes_second_side": _compat.TERNARY_TAKES_SECOND_SIDE,
        "struct_field_store_differentiable": _compat.STOCK_STRUCT_FIELD_STORES_DIFFERENTIABLE,
        "struct_return_differentiable": _compat.STOCK_STRUCT_FIELD_STORES_DIFFERENTIABLE,
        "tile_store_zeroes": _compat.STOCK_TILE_STORE_ZEROES,
        "forward_only_module_helper_adjoint": not _compat.HELPER_ADJOINT_FOLLOWS_MODULE_OPTION,
        "tile_map_tanh": True if _compat.TILE_MAP_ADJOINT_DISPATCHES else "build error",
        "custom_adjoint_called_from_func": True if _compat.CUSTOM_ADJOINTS_FIRST else "build error",
        "slot_stores": _compat.HAS_SLOT_STORES,
        "retain_grad": _compat.HAS_RETAIN_GRAD,
    }
    wrong = {k: (facts[k], v) for k, v in expected.items() if facts[k] != v}
    copy_accumulates = facts["copy_adjoint_src_grad"] == 2.0
    if copy_accumulates != _compat.STOCK_COPY_ADJOINT_ACCUMULATES:
        wrong["copy_adjoint_src_grad"] = (facts["copy_adjoint_src_grad"], _compat.STOCK_COPY_ADJOINT_ACCUMULATES)
    # always right where Warp propagates; elsewhere wrong in some processes (not in every run of six)
    if _compat.HELPER_BACKWARD_USE_PROPAGATED and outcomes.count("true") != RUNS:
        wrong["helper_shared_with_forward_only_right"] = (facts["helper_shared_with_forward_only_right"], "all")
    if wrong:
        print(f"warp-lang {facts['version']}: measured vs _compat: {wrong}", file=sys.stderr)
        sys.exit(1)
sys.exit(0)
