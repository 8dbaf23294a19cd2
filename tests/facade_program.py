"""A program run twice by tests/test_facade_identity.py: ``python facade_program.py stock|facade CACHE_DIR``.

It defines unflagged kernels of 1 to 4 launch dimensions, one calling a ``@wp.func`` helper and, where the
version has tiles, a tiled one; it launches each, takes a Tape gradient through the 2-D one and prints the
results as JSON. ``stock`` imports ``warp``; ``facade`` imports ``warp_zerostore`` as ``wp``. Both build into
``CACHE_DIR``, so the test can compare their generated C++ and run them over one shared kernel cache.
"""

import json
import sys

if sys.argv[1] == "stock":
    import warp as wp
else:
    import warp_zerostore as wp

import warp

warp.config.kernel_cache_dir = sys.argv[2]
warp.config.quiet = True
warp.init()


@wp.func
def twice(v: float):
    return 2.0 * v


@wp.kernel
def grid1(out: wp.array(dtype=int)):
    i = wp.tid()
    out[i] = i


@wp.kernel
def grid2(out: wp.array2d(dtype=int)):
    i, j = wp.tid()
    out[i, j] = 10 * i + j


@wp.kernel
def grid3(out: wp.array3d(dtype=int)):
    i, j, k = wp.tid()
    out[i, j, k] = 100 * i + 10 * j + k


@wp.kernel
def grid4(out: wp.array4d(dtype=int)):
    i, j, k, m = wp.tid()
    out[i, j, k, m] = 1000 * i + 100 * j + 10 * k + m


@wp.kernel
def overwrite2(x: wp.array2d(dtype=float), y: wp.array2d(dtype=float)):
    i, j = wp.tid()
    y[i, j] = twice(x[i, j]) * x[i, j]


HAS_TILES = hasattr(warp, "launch_tiled") and hasattr(warp, "tile_load")
if HAS_TILES:

    @wp.kernel
    def tiled(x: wp.array(dtype=float), y: wp.array(dtype=float)):
        i = wp.tid()
        t = wp.tile_load(x, shape=4, offset=i * 4)
        wp.tile_store(y, t, offset=i * 4)


results = {}
for name, kernel, shape in (
    ("grid1", grid1, (3,)),
    ("grid2", grid2, (2, 4)),
    ("grid3", grid3, (2, 3, 2)),
    ("grid4", grid4, (2, 2, 3, 2)),
):
    out = wp.zeros(shape, dtype=int)
    wp.launch(kernel, dim=shape, inputs=[out])
    results[name] = out.numpy().tolist()

x = wp.array([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]], dtype=float, requires_grad=True)
y = wp.zeros((2, 3), dtype=float, requires_grad=True)
tape = warp.Tape()
with tape:
    wp.launch(overwrite2, dim=(2, 3), inputs=[x, y])
tape.backward(grads={y: wp.ones((2, 3), dtype=float)})
results["overwrite2"] = y.numpy().tolist()
results["overwrite2_grad"] = x.grad.numpy().tolist()

if HAS_TILES:
    xs = wp.array([float(v) for v in range(8)], dtype=float)
    ys = wp.zeros(8, dtype=float)
    warp.launch_tiled(tiled, dim=[2], inputs=[xs, ys], block_dim=1)
    results["tiled"] = ys.numpy().tolist()

print(json.dumps(results))
