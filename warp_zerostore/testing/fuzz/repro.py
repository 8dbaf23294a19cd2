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

x = wp.array({x}, dtype={t}, requires_grad=True)
xv = wp.array({xv}, dtype={v}, requires_grad=True)
y = wp.array({y}, dtype={t}, requires_grad=True)
acc = wp.array({acc}, dtype={t}, requires_grad=True)
tape = {tape}
with tape:
    wp.launch(fuzzed, dim={threads}, inputs=[x, xv, y, acc, {n}])
print("forward y:  ", y.numpy(), "  expected", np.array({ref_y}))
print("forward acc:", acc.numpy(), "  expected", np.array({ref_acc}))
tape.backward(grads={{y: wp.array({cot_y}, dtype={t}), acc: wp.array({cot_acc}, dtype={t})}})
expected = {expected}
for name, a in (("x", x), ("xv", xv), ("y", y), ("acc", acc)):
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
    expected = "{" + ", ".join(f"{n!r}: {np.round(ref.grads[n], 9).tolist()}" for n in oracle.INPUTS) + "}"
    return _TEMPLATE.format(
        variant=failure.variant,
        kind=failure.kind,
        constructs=", ".join(constructs(case.program)),
        warp_version=warp.config.version,
        import_line=import_line,
        tape=tape,
        source=source,
        t=SCALAR_TYPE[dtype],
        v=VEC_TYPE[dtype],
        threads=THREADS,
        n=case.program.loop_count,
        x=case.inputs["x"].tolist(),
        xv=case.inputs["xv"].tolist(),
        y=case.inputs["y"].tolist(),
        acc=case.inputs["acc"].tolist(),
        cot_y=case.cotangents["y"].tolist(),
        cot_acc=case.cotangents["acc"].tolist(),
        ref_y=np.round(ref.outputs["y"], 9).tolist(),
        ref_acc=np.round(ref.outputs["acc"], 9).tolist(),
        expected=expected,
        tol=oracle.TOLERANCE[dtype],
    )


__all__ = ["batch", "script"]
