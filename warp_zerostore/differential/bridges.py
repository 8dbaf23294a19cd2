"""The flagged program as a ``warp_zerostore.torch`` op and as a ``warp_zerostore.jax`` op, run as a user runs them.

The only module of `warp_zerostore.differential` that imports torch and jax (pyproject.toml's contracts allow
it this one place), and only when a bridge path runs. Each op's arguments are every program array after
``setup``: those the body writes are ``in_out`` (returned updated), the others inputs. The loss is the sum of
cotangent times final value over all arrays; its gradient with respect to each argument is the path's gradient.
"""

from __future__ import annotations

import numpy as np
import warp

from ..tape import Tape as PackageTape
from .runs import Result, entry_arrays, flat, written


def run_torch(module, j: int, case, result: Result) -> None:
    import warp_zerostore.torch as wpt  # noqa: PLC0415

    program = case.program
    a = entry_arrays(module, j, case)
    in_out = written(program)
    op = wpt.op(outputs={}, in_out=in_out, name=f"p{j}_program")(getattr(module, f"p{j}_op_zero_store"))
    names = [x.name for x in program.arrays]
    tensors = {n: warp.to_torch(a[n]).clone().detach().requires_grad_(True) for n in names}
    updated = op(*(tensors[n] for n in names))
    updated = updated if isinstance(updated, tuple) else (updated,)
    final = {**tensors, **dict(zip(in_out, updated))}
    cot = {x.name: np.reshape(case.cotangents[x.name], x.shape(program.launch)) for x in program.arrays}
    loss = sum((final[n] * final[n].new_tensor(cot[n])).sum() for n in names)
    result.outputs = {n: flat(program, n, final[n].detach().cpu().numpy()) for n in names}
    loss.backward()
    result.grads = {
        n: flat(program, n, np.zeros(cot[n].shape) if t.grad is None else t.grad.cpu().numpy())
        for n, t in tensors.items()
    }


def run_jax(module, j: int, case, result: Result) -> None:
    import jax  # noqa: PLC0415
    import jax.numpy as jnp  # noqa: PLC0415

    import warp_zerostore.jax as wpj  # noqa: PLC0415

    if case.program.dtype == "float64":
        jax.config.update("jax_enable_x64", True)
    program = case.program
    a = entry_arrays(module, j, case)
    in_out = written(program)
    op = wpj.op(outputs={}, in_out=in_out, tape=lambda: PackageTape(snapshot=True), name=f"p{j}_program")(
        getattr(module, f"p{j}_op_zero_store")
    )
    names = [x.name for x in program.arrays]
    primals = [jnp.asarray(a[n].numpy()) for n in names]
    out, pull_back = jax.vjp(lambda *xs: op(*xs), *primals)
    updated = out if isinstance(out, tuple) else (out,)
    final = {**dict(zip(names, primals)), **dict(zip(in_out, updated))}
    cot = {x.name: np.reshape(case.cotangents[x.name], x.shape(program.launch)) for x in program.arrays}
    seeds = tuple(jnp.asarray(cot[n], dtype=final[n].dtype) for n in in_out)
    grads = pull_back(seeds if isinstance(out, tuple) else seeds[0])
    result.outputs = {n: flat(program, n, np.asarray(final[n])) for n in names}
    result.grads = {n: flat(program, n, np.asarray(g) + (0.0 if n in in_out else cot[n])) for n, g in zip(names, grads)}
