"""A failing program as a standalone script: its kernels and host steps, its data, the path that fails beside
stock Warp on a plain Tape, and the reference's values (central differences of a NumPy float64 run, embedded).

A failure of stock Warp on a plain Tape imports only ``warp`` (ready for an upstream issue); any other path
imports this package too and prints stock and that path side by side, per array, ``<-- WRONG`` where a value is
off (elements the reference does not compare, `programs.oracle` rule 4, print as ``nan`` in "expected").
"""

from __future__ import annotations

import re

import numpy as np

from ..testing.fuzz import oracle as kernel_oracle
from ..testing.fuzz.programs import oracle, printer
from ..testing.fuzz.programs.printer import SCALAR_TYPE, VEC_TYPE
from . import paths

_TEMPLATE = '''"""Program fuzzer repro ({title}): constructs {constructs}.

{premise}
Warp {version}. Expected values: central differences (float64) of a NumPy reference of this program
(warp_zerostore.testing.fuzz.programs.oracle; nan: an element the reference does not compare).
"""

import numpy as np
{imports}

{source}

DATA = {data}
COTANGENTS = {cotangents}
SHAPES = {shapes}
DTYPES = {dtypes}


def arrays():
    return {{
        name: wp.array(np.reshape(values, SHAPES[name]), dtype=DTYPES[name], requires_grad=True{retain})
        for name, values in DATA.items()
    }}


def run(body, tape):
    """The program on fresh arrays, recorded on ``tape``: (forward values at the Tape's exit, gradients)."""
    a = arrays()
    p_setup(a)
    with tape:
        body(a)
    forward = {{name: v.numpy().copy() for name, v in a.items()}}
    p_after(a)
    tape.backward(grads={{a[n]: wp.array(np.reshape(c, SHAPES[n]), dtype=DTYPES[n]) for n, c in COTANGENTS.items()}})
    return forward, {{name: v.grad.numpy() for name, v in a.items()}}


expected_forward = {expected_forward}
expected = {expected}
{runs}


def flag(got, want):
    want = np.asarray(want, dtype=float)
    want = np.ravel(want)
    same = np.isnan(want) | np.isclose(np.ravel(got), want, rtol={tol}, atol={tol})
    return "" if same.all() else "   <-- WRONG"


for title, got, want in (
    *((f"forward {{n}}", [r[0][n] for r in results.values()], v) for n, v in expected_forward.items()),
    *((f"{{n}}.grad", [r[1][n] for r in results.values()], v) for n, v in expected.items()),
):
    print(f"{{title}}:")
    for label, value in zip(results, got):
        print(f"  {{label:<28}} {{np.ravel(value)}}{{flag(value, want)}}")
    print(f"  {{'expected':<28}} {{np.ravel(want)}}")
'''

TAPE_TEXT = {
    "plain": "wp.Tape()",
    "snapshot": "wpz.Tape(snapshot=True)",
    "check": 'wpz.Tape(check="warn")',
    "measure": "wpz.Tape(measure=True)",
}


def script(failure, constructs: str = "", version: str = "") -> str:
    """The standalone repro of ``failure`` (a `verdicts.Failure` on a Tape path; a bridge path prints its program
    on the snapshot Tape beside the bridge's name, the op's own code being the package's)."""
    import warp  # noqa: PLC0415

    case = failure.case
    program = case.program
    variant, tape = failure.path
    stock_only = failure.path == paths.STOCK
    variants = ("stock",) if stock_only else ("stock", "zero_store")
    source = printer.source(program, case.thresholds, "p", variants)
    if not program.module_backward:  # the program's module option: this script's module is its kernels' module
        source = 'wp.set_module_options({"enable_backward": False})\n\n' + source
    reference = oracle.reference(program, case.thresholds, case.data, case.cotangents)
    shapes = {a.name: a.shape(program.launch) for a in program.arrays}
    types = {"f": SCALAR_TYPE[program.dtype], "acc": SCALAR_TYPE[program.dtype], "v": VEC_TYPE[program.dtype]}
    dtypes = "{" + ", ".join(f"{a.name!r}: {types[a.kind]}" for a in program.arrays) + "}"
    grads = {n: np.where(_mask(reference, n, g), np.round(g, 9), np.nan) for n, g in reference.grads.items()}
    if stock_only:
        runs = 'results = {"stock on a plain Tape": run(p_body_stock, wp.Tape())}'
        premise = "Stock Warp on a plain wp.Tape() gives a wrong value (marked) for this program and data."
    else:
        shown = TAPE_TEXT.get(tape, TAPE_TEXT["snapshot"])
        label = f"{variant} on {tape}" if tape in TAPE_TEXT else f"{variant} on snapshot (bridge: {tape})"
        runs = (
            f'results = {{"stock on a plain Tape": run(p_body_stock, wp.Tape()),\n'
            f'           "{label}": run(p_body_{variant}, {shown})}}'
        )
        if failure.worse:
            premise = (
                f"WORSE THAN STOCK: stock Warp on a plain wp.Tape() is right for this program and data; {variant} "
                f"on {tape} is wrong ({failure.kind}): a defect of warp_zerostore."
            )
        else:
            premise = f"{variant} on {tape} is wrong ({failure.kind}); stock Warp on a plain Tape shown beside it."
    if failure.detail:
        premise += f"\nWhat it said: {failure.detail[:300]}"
    return _TEMPLATE.format(
        title=f"{failure.describe()}, {failure.kind}",
        constructs=constructs,
        premise=premise,
        version=version or warp.config.version,
        imports="import warp as wp" if stock_only else "import warp as wp\n\nimport warp_zerostore as wpz",
        source=source.rstrip(),
        data=_values(case.data),
        cotangents=_values(case.cotangents),
        shapes=repr(shapes),
        dtypes=dtypes,
        retain=", retain_grad=name in RETAIN" if any(a.retain_grad for a in program.arrays) else "",
        expected_forward=_values(reference.outputs),
        expected=_values(grads),
        runs=(
            f"RETAIN = {tuple(a.name for a in program.arrays if a.retain_grad)!r}\n"
            if any(a.retain_grad for a in program.arrays)
            else ""
        )
        + runs,
        tol=kernel_oracle.TOLERANCE[program.dtype],
    )


def _mask(reference, name, values):
    mask = reference.compared[name]
    return mask.reshape(mask.shape + (1,) * (np.ndim(values) - 1))


def _values(values: dict) -> str:
    text = "{" + ", ".join(f"{n!r}: {np.asarray(v, dtype=float).round(9).tolist()}" for n, v in values.items()) + "}"
    return re.sub(r"\bnan\b", "np.nan", text)


__all__ = ["script"]
