"""The seed report's double store through JAX: y = 2*xa, then y = 3*xb in one zero_store=True kernel.

Run: python examples/jax_double_store.py   (needs the jax extra: pip install "warp_zerostore[jax]")
"""

import jax
import jax.numpy as jnp

import warp_zerostore as wp
import warp_zerostore.jax as wpj


@wp.kernel(zero_store=True)
def double_store(xa: wp.array(dtype=float), xb: wp.array(dtype=float), y: wp.array(dtype=float)):
    i = wp.tid()
    y[i] = 2.0 * xa[i]
    y[i] = 3.0 * xb[i]


f = wpj.kernel_op(double_store, outputs={"y": "xa"})  # y shaped and typed like xa

x = jnp.ones(4, dtype=jnp.float32)
ct = jnp.ones(4, dtype=jnp.float32)
y, vjp = jax.vjp(jax.jit(f), x, x)
dxa, dxb = vjp(ct)
print("dxa", dxa, "dxb", dxb, "ct", ct)  # dxa [0 0 0 0]  dxb [3 3 3 3]  ct [1 1 1 1] (never written)
assert (dxa == 0).all() and (dxb == 3).all() and (ct == 1).all()
