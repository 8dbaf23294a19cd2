"""``python -m warp_zerostore demo``: the seed program's gradients, stock Warp next to each flag."""

from __future__ import annotations

import warnings

import warp

from .. import _compat, options

TILE = 4
# tile_matmul(a, b, c, alpha, beta) exists from warp-lang 1.12; before, alpha = beta = 1
HAS_ALPHA_BETA = _compat.WARP_VERSION >= (1, 12, 0)
ALPHA, BETA = (0.5, -1.3) if HAS_ALPHA_BETA else (1.0, 1.0)

COLUMNS = [("stock Warp", None), ("zero_store=True", True), ("zero_store=False", False)]


def _kernels(flag):
    @options.kernel(zero_store=flag)
    def write_2x(x: warp.array(dtype=float), y: warp.array(dtype=float)):
        i = warp.tid()
        y[i] = 2.0 * x[i]

    @options.kernel(zero_store=flag)
    def write_3x(x: warp.array(dtype=float), y: warp.array(dtype=float)):
        i = warp.tid()
        y[i] = 3.0 * x[i]

    @options.kernel(zero_store=flag)
    def write_components(x: warp.array(dtype=float), v: warp.array(dtype=warp.vec3)):
        i = warp.tid()
        v[i].x = 2.0 * x[i]
        v[i].y = 5.0 * x[i]

    alpha, beta = warp.float32(ALPHA), warp.float32(BETA)

    @options.kernel(zero_store=flag)
    def tile_matmul(A: warp.array2d(dtype=float), B: warp.array2d(dtype=float), C: warp.array2d(dtype=float)):
        i, j = warp.tid()
        a = warp.tile_load(A, shape=(TILE, TILE), offset=(i * TILE, 0))
        b = warp.tile_load(B, shape=(TILE, TILE), offset=(0, j * TILE))
        c = warp.tile_load(C, shape=(TILE, TILE), offset=(i * TILE, j * TILE))
        if warp.static(HAS_ALPHA_BETA):
            warp.tile_matmul(a, b, c, alpha=alpha, beta=beta)
        else:
            warp.tile_matmul(a, b, c)
        warp.tile_store(C, c, offset=(i * TILE, j * TILE))

    return write_2x, write_3x, write_components, tile_matmul


def _tile_matmul(kernel, device):
    A = warp.ones((TILE, TILE), dtype=float, requires_grad=True, device=device)
    B = warp.ones((TILE, TILE), dtype=float, requires_grad=True, device=device)
    C = warp.ones((TILE, TILE), dtype=float, requires_grad=True, device=device)
    with warp.Tape() as tape:
        warp.launch_tiled(kernel, dim=[1, 1], inputs=[A, B, C], block_dim=32, device=device)
    tape.backward(grads={C: warp.ones((TILE, TILE), dtype=float, device=device)})
    return float(C.grad.numpy()[0, 0])


def _seed(flag, device, n=4):
    write_2x, write_3x, write_components, tile_matmul = _kernels(flag)
    x_a = warp.ones(n, dtype=float, requires_grad=True, device=device)
    x_b = warp.ones(n, dtype=float, requires_grad=True, device=device)
    y = warp.zeros(n, dtype=float, requires_grad=True, device=device)
    with warp.Tape() as tape:
        warp.launch(write_2x, dim=n, inputs=[x_a, y], device=device)
        warp.launch(write_3x, dim=n, inputs=[x_b, y], device=device)
    y.grad = warp.ones_like(y)
    tape.backward()

    x = warp.ones(n, dtype=float, requires_grad=True, device=device)
    v = warp.zeros(n, dtype=warp.vec3, requires_grad=True, device=device)
    with warp.Tape() as tape:
        warp.launch(write_components, dim=n, inputs=[x, v], device=device)
    v.grad.fill_(1.0)
    tape.backward()
    return {
        "x_a.grad": float(x_a.grad.numpy()[0]),
        "x_b.grad": float(x_b.grad.numpy()[0]),
        "y.grad after backward": float(y.grad.numpy()[0]),
        "x.grad (components)": float(x.grad.numpy()[0]),
        "C.grad (tile matmul)": _tile_matmul(tile_matmul, device),
    }


# -- Beyond the seed program: what the package adds on top of the flag, each row with its exact value


def _square_in_place(flag):
    @options.kernel(zero_store=flag)
    def square_in_place(x: warp.array(dtype=float)):
        i = warp.tid()
        x[i] = x[i] * x[i]

    return square_in_place


def _read_back(flag):
    @options.kernel(zero_store=flag)
    def read_back(x: warp.array(dtype=float), y: warp.array(dtype=float)):
        i = warp.tid()
        y[i] = x[i] * x[i]
        y[i] = y[i] * x[i]  # reads back this thread's own store

    return read_back


def _in_place_twice(kernel, make_tape, device) -> float:
    """d(x**4)/dx at 3: x <- x*x launched twice, in place."""
    x = warp.array([3.0], dtype=float, requires_grad=True, device=device)
    tape = make_tape()
    with tape:
        warp.launch(kernel, dim=1, inputs=[x], device=device)
        warp.launch(kernel, dim=1, inputs=[x], device=device)
    tape.backward(grads={x: warp.array([1.0], dtype=float, device=device)})
    return float(x.grad.numpy()[0])


def _read_back_grad(kernel, make_tape, device) -> float:
    """d(x**3)/dx at 2 through one thread's read-back."""
    x = warp.array([2.0], dtype=float, requires_grad=True, device=device)
    y = warp.zeros(1, dtype=float, requires_grad=True, device=device)
    tape = make_tape()
    with tape:
        warp.launch(kernel, dim=1, inputs=[x, y], device=device)
    tape.backward(grads={y: warp.array([1.0], dtype=float, device=device)})
    return float(x.grad.numpy()[0])


BEYOND_COLUMNS = ["stock Warp", "zero_store=True", "+ snapshot Tape"]
BEYOND_EXACT = {"in place, twice: d(x^4)/dx": 108.0, "read-back in a thread: d(x^3)/dx": 12.0}


def _beyond(device) -> tuple:
    """({row: {column: value}}, the hazard names a checking Tape gives on the in-place program)."""
    from ..tape import OverwriteWarning, Tape  # noqa: PLC0415  (the CLI sits above the Tape)

    rows: dict = {row: {} for row in BEYOND_EXACT}
    for column, flag, make_tape in (
        (BEYOND_COLUMNS[0], None, warp.Tape),
        (BEYOND_COLUMNS[1], True, warp.Tape),
        (BEYOND_COLUMNS[2], True, lambda: Tape(snapshot=True)),
    ):
        rows["in place, twice: d(x^4)/dx"][column] = _in_place_twice(_square_in_place(flag), make_tape, device)
        rows["read-back in a thread: d(x^3)/dx"][column] = _read_back_grad(_read_back(flag), make_tape, device)
    checking = Tape(check="warn")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", OverwriteWarning)  # the demo prints what the Tape found, once
        _in_place_twice(_square_in_place(True), lambda: checking, device)
    named = sorted({_named(h) for h in checking.hazards if h.real})
    return rows, named


def _named(hazard) -> str:
    """``stale read: launch #1 (square_in_place) writes argument 'x', which launch #0 reads``."""
    name = hazard.writer.kernel.rsplit("__", 1)[-1]  # the function's name (the demo's kernels are closures)
    reader = ""
    if hazard.reader is not None:
        same = hazard.reader.launch == hazard.writer.launch
        reader = ", which it reads first" if same else f", which launch #{hazard.reader.launch} reads"
    return f"{hazard.kind}: launch #{hazard.writer.launch} ({name}) writes argument '{hazard.writer.argument}'{reader}"


EXACT = {
    "x_a.grad": 0.0,
    "x_b.grad": 3.0,
    "y.grad after backward": 0.0,
    "x.grad (components)": 7.0,
    "C.grad (tile matmul)": BETA,
}


def add_parser(subparsers) -> None:
    demo = subparsers.add_parser("demo", help="print the seed program's gradients: stock Warp vs zero_store=True/False")
    demo.add_argument("--device", default="cpu", help="the Warp device to run on (default: cpu)")
    demo.set_defaults(handler=_command)


def _command(args, parser) -> int:
    if not _device_available(args.device):
        parser.error(f"demo: device {args.device!r} is not available here ({_devices()}); try --device cpu")
    run(args.device)
    return 0


def _devices() -> str:
    return "devices: " + ", ".join(str(d) for d in warp.get_devices())


def _device_available(name: str) -> bool:
    if name.startswith("cuda") and not warp.is_cuda_available():
        return False  # asking Warp for the device would print CUDA driver errors first
    try:
        warp.get_device(name)
    except (RuntimeError, ValueError):
        return False
    return True


def run(device: str = "cpu") -> dict:
    """Print the table and return it as ``{column: {row: value}}``."""
    results = {name: _seed(flag, device) for name, flag in COLUMNS}
    print(f"warp_zerostore demo on warp-lang {warp.config.version}, device {device}")
    print("Seed program: k1 writes y = 2*x_a, then k2 overwrites y = 3*x_b; y.grad = 1; tape.backward()")
    print("Components:   y[i].x = 2*x[i]; y[i].y = 5*x[i]; y.grad = 1; tape.backward()")
    print(
        f"Tile matmul:  c = tile_load(C); tile_matmul(a, b, c, alpha={ALPHA}, beta={BETA}); tile_store(C, c); "
        "C.grad = 1\n"
    )
    header = f"{'':24}" + "".join(f"{name:>18}" for name, _ in COLUMNS) + f"{'exact':>10}"
    print(header)
    print("-" * len(header))
    for row in EXACT:
        cells = "".join(f"{results[name][row]:>18.1f}" for name, _ in COLUMNS)
        print(f"{row:24}{cells}{EXACT[row]:>10.1f}")

    beyond, named = _beyond(device)
    print("\nBeyond the seed program: an in-place update (x <- x*x, launched twice) and a read-back in one thread")
    print("(y = x*x; y = y*x), on a plain Tape and on Tape(snapshot=True):\n")
    header = f"{'':34}" + "".join(f"{name:>18}" for name in BEYOND_COLUMNS) + f"{'exact':>10}"
    print(header)
    print("-" * len(header))
    for row, exact in BEYOND_EXACT.items():
        cells = "".join(f"{beyond[row][name]:>18.1f}" for name in BEYOND_COLUMNS)
        print(f"{row:34}{cells}{exact:>10.1f}")
    print("\nTape(check='warn') on the in-place program names:")
    for line in named:
        print(f"  {line}")
    results["beyond"] = {row: dict(cells) for row, cells in beyond.items()}
    results["named"] = named
    return results
