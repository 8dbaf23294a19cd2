"""A failure as a standalone script: the kernel, its inputs, Warp's gradient and the reference's, printed.

A failure of stock Warp on a plain Tape imports only ``warp`` (ready for an upstream issue). A failure of any
other path (``zero_store=True`` on either Tape, stock on the snapshot Tape) imports this package too and runs the
kernel both ways, side by side: stock on a plain ``wp.Tape()`` and the failing path, each against the reference;
for a failure worse than stock its docstring says so (stock is right there, the package is wrong: ours to fix).
The expected values are the reference's central differences, embedded.
"""

from __future__ import annotations

import numpy as np

from . import batch, oracle
from .nodes import THREADS
from .printer import SCALAR_TYPE, VEC_TYPE, Printer
from .shrink import constructs

_TEMPLATE = '''"""Fuzzer repro ({variant}, {kind} mismatch): constructs {constructs}.

Warp {warp_version}. Expected values: central differences (float64) of a NumPy reference of this kernel.
"""

import numpy as np

{import_line}

{source}

{arrays}
tape = {tape}
with tape:
    {launch}
{forward}
tape.backward(grads={{{cotangents}}})
expected = {expected}
for name, a in ({pairs}):
    got = a.grad.numpy().reshape(np.shape(expected[name]))
    flag = "" if np.allclose(got, expected[name], rtol={tol}, atol={tol}) else "   <-- WRONG"
    print(f"{{name}}.grad: warp {{got.ravel()}}  expected {{np.ravel(expected[name])}}{{flag}}")
'''


_SIDE_BY_SIDE = '''"""Fuzzer repro ({verdict}{path}, {kind} mismatch): constructs {constructs}.

{premise}
Warp {warp_version}. Expected values: central differences (float64) of a NumPy reference of this kernel.
"""

import numpy as np
import warp as wp

import warp_zerostore as wpz

{source}


def run(kernel, tape):
    """The kernel launched on fresh inputs, recorded on ``tape``: (forward outputs, gradients), by array."""
    {arrays}
    with tape:
        {launch}
    forward = {{{outputs}}}
    tape.backward(grads={{{cotangents}}})
    return forward, {{{gradients}}}


expected_forward = {expected_forward}
expected = {expected}
stock_forward, stock = run(fuzzed_stock, wp.Tape())
package_forward, package = run({kernel}, {tape})


def flag(got, want):
    return "" if np.allclose(got, want, rtol={tol}, atol={tol}) else "   <-- WRONG"


for title, got, want in (
    *((f"forward {{n}}", (stock_forward[n], package_forward[n]), v) for n, v in expected_forward.items()),
    *((f"{{n}}.grad", (stock[n], package[n]), v) for n, v in expected.items()),
):
    print(f"{{title}}:")
    print(f"  stock on a plain Tape   {{np.ravel(got[0])}}{{flag(np.ravel(got[0]), np.ravel(want))}}")
    print(f"  {label:<23} {{np.ravel(got[1])}}{{flag(np.ravel(got[1]), np.ravel(want))}}")
    print(f"  expected                {{np.ravel(want)}}")
'''


def script(failure) -> str:
    """The standalone repro script of ``failure`` (a `batch.Failure`): for stock Warp on a plain Tape, the
    kernel alone; for any other path, stock on a plain Tape and that path side by side."""
    import warp  # noqa: PLC0415  (the version goes into the docstring)

    if (failure.variant, getattr(failure, "tape", "plain")) != batch.STOCK_PATH:
        return _side_by_side(failure, warp.config.version)
    case = failure.case
    ref = oracle.reference(case.program, case.thresholds, case.inputs, case.cotangents)
    dtype = case.program.dtype
    import_line, decorator, tape = "import warp as wp", "@wp.kernel", "wp.Tape()"
    printer = Printer(case.program, case.thresholds, "fuzzed_h")
    source = "\n".join(printer.helpers() + printer.kernel("fuzzed", decorator)).rstrip()
    shapes, outputs = oracle.inputs_of(case.program), oracle.outputs_of(case.program)
    expected = "{" + ", ".join(f"{n!r}: {np.round(ref.grads[n], 9).tolist()}" for n in shapes) + "}"
    t, v = SCALAR_TYPE[dtype], VEC_TYPE[dtype]
    arrays = "\n".join(
        f"{n} = wp.array({_data(case, n, case.inputs)}, dtype={v if n in ('xv', 'yv') else t}, requires_grad=True)"
        for n in shapes
    )
    width = max(len(n) for n in outputs) + 1
    forward = "\n".join(
        f'print("forward {n + ":":<{width}}", {n}.numpy(), "  expected", np.array({np.round(ref.outputs[n], 9).tolist()}))'
        for n in outputs
    )
    cotangents = ", ".join(
        f"{n}: wp.array({_data(case, n, case.cotangents)}, dtype={v if n == 'yv' else t})" for n in outputs
    )
    return _TEMPLATE.format(
        variant=failure.variant,
        kind=failure.kind,
        constructs=", ".join(constructs(case.program)),
        warp_version=warp.config.version,
        import_line=import_line,
        tape=tape,
        source=source,
        arrays=arrays,
        forward=forward,
        cotangents=cotangents,
        pairs=", ".join(f"({n!r}, {n})" for n in shapes),
        launch=_launch(case, "fuzzed"),
        expected=expected,
        tol=oracle.TOLERANCE[dtype],
    )


def _data(case, name: str, values: dict) -> list:
    """``values[name]`` as a nested list in the Warp array's shape (x, xv, y take the launch's: "multidim")."""
    shape = oracle.inputs_of(case.program)[name]
    return np.reshape(values[name], batch.warp_shape(case.program, name, shape)).tolist()


def _launch(case, kernel: str = "kernel") -> str:
    shapes = oracle.inputs_of(case.program)
    if case.program.tiles:
        return (
            f"wp.launch_tiled({kernel}, dim=[{THREADS}], inputs=[{', '.join(shapes)}, {case.program.loop_count}], "
            f"block_dim={batch.TILE_BLOCK_DIM})"
        )
    dim = batch.launch_dim(case.program)
    return f"wp.launch({kernel}, dim={dim}, inputs=[{', '.join(shapes)}, {case.program.loop_count}])"


def _side_by_side(failure, warp_version: str) -> str:
    case = failure.case
    ref = oracle.reference(case.program, case.thresholds, case.inputs, case.cotangents)
    dtype = case.program.dtype
    printer = Printer(case.program, case.thresholds, "fuzzed_h")
    lines = printer.helpers()
    for variant, decorator in batch.VARIANTS.items():  # the flagged kernel names the facade, as users write it
        lines += printer.kernel(f"fuzzed_{variant}", decorator, batch.NAMESPACES[variant]) + [""]
    shapes, outputs = oracle.inputs_of(case.program), oracle.outputs_of(case.program)
    t, v = SCALAR_TYPE[dtype], VEC_TYPE[dtype]
    tape = "wp.Tape()" if failure.tape == "plain" else "wpz.Tape(snapshot=True)"
    path = f"{failure.variant} on {'a plain' if failure.tape == 'plain' else 'the snapshot'} Tape"
    if failure.worse:
        verdict = "WORSE THAN STOCK: "
        premise = (
            f"Stock Warp (@wp.kernel on a plain wp.Tape()) is right for this kernel and data; {path} is wrong: a "
            "defect of warp_zerostore, which must never be worse than stock."
        )
    else:
        verdict, premise = "", f"Stock Warp on a plain wp.Tape() is wrong here too; {path} shown beside it."
    if failure.warned:
        premise += f"\nBuild-time warning: {failure.warned[:200]}"

    def values(d):
        return "{" + ", ".join(f"{n!r}: {np.round(d[n], 9).tolist()}" for n in d) + "}"

    return _SIDE_BY_SIDE.format(
        verdict=verdict,
        path=path,
        kind=failure.kind,
        constructs=", ".join(constructs(case.program)),
        premise=premise,
        warp_version=warp_version,
        source="\n".join(lines).rstrip(),
        arrays="\n    ".join(
            f"{n} = wp.array({_data(case, n, case.inputs)}, dtype={v if n in ('xv', 'yv') else t}, requires_grad=True)"
            for n in shapes
        ),
        launch=_launch(case),
        cotangents=", ".join(
            f"{n}: wp.array({_data(case, n, case.cotangents)}, dtype={v if n == 'yv' else t})" for n in outputs
        ),
        # copies: on the CPU .numpy() is a view, and a backward pass may write the array (a helper's store is
        # replayed); the forward values are taken before it
        outputs=", ".join(f"{n!r}: {n}.numpy().copy()" for n in outputs),
        gradients=", ".join(f"{n!r}: {n}.grad.numpy()" for n in shapes),
        expected_forward=values({n: ref.outputs[n] for n in outputs}),
        expected=values({n: ref.grads[n] for n in shapes}),
        kernel=f"fuzzed_{failure.variant}",
        tape=tape,
        tol=oracle.TOLERANCE[dtype],
        label=f"{failure.variant} on {failure.tape}",
    )


__all__ = ["batch", "script"]
