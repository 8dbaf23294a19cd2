"""A failure as a standalone script: the kernel, its inputs, Warp's gradient and the reference's, printed.

A stock failure imports only ``warp`` (ready for an upstream issue); a ``zero_store=True`` failure imports this
package, since the bug is then ours. The expected values are the reference's central differences, embedded.
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


def script(failure) -> str:
    """The standalone repro script of ``failure`` (a `batch.Failure`)."""
    import warp  # noqa: PLC0415  (the version goes into the docstring)

    case = failure.case
    ref = oracle.reference(case.program, case.thresholds, case.inputs, case.cotangents)
    dtype = case.program.dtype
    if failure.variant == "stock":
        import_line, decorator, tape = "import warp as wp", "@wp.kernel", "wp.Tape()"
    else:
        import_line, decorator, tape = (
            "import warp_zerostore as wp",
            "@wp.kernel(zero_store=True)",
            "wp.Tape(snapshot=True)",
        )
    printer = Printer(case.program, case.thresholds, "fuzzed_h")
    source = "\n".join(printer.helpers() + printer.kernel("fuzzed", decorator)).rstrip()
    shapes, outputs = oracle.inputs_of(case.program), oracle.outputs_of(case.program)
    expected = "{" + ", ".join(f"{n!r}: {np.round(ref.grads[n], 9).tolist()}" for n in shapes) + "}"
    t, v = SCALAR_TYPE[dtype], VEC_TYPE[dtype]
    arrays = "\n".join(
        f"{n} = wp.array({case.inputs[n].tolist()}, dtype={v if n == 'xv' else t}, requires_grad=True)" for n in shapes
    )
    width = max(len(n) for n in outputs) + 1
    forward = "\n".join(
        f'print("forward {n + ":":<{width}}", {n}.numpy(), "  expected", np.array({np.round(ref.outputs[n], 9).tolist()}))'
        for n in outputs
    )
    cotangents = ", ".join(f"{n}: wp.array({case.cotangents[n].tolist()}, dtype={t})" for n in outputs)
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
        launch=(
            f"wp.launch_tiled(fuzzed, dim=[{THREADS}], inputs=[{', '.join(shapes)}, {case.program.loop_count}], "
            f"block_dim={batch.TILE_BLOCK_DIM})"
            if case.program.tiles
            else f"wp.launch(fuzzed, dim={THREADS}, inputs=[{', '.join(shapes)}, {case.program.loop_count}])"
        ),
        expected=expected,
        tol=oracle.TOLERANCE[dtype],
    )


__all__ = ["batch", "script"]
