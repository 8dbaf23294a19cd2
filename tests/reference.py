"""An independent float64 reference: forward and reverse mode of the drawn programs, in NumPy alone.

It shares no code with warp_zerostore. ``zero=True`` models store adjoints that read and zero the
overwritten gradient, ``zero=False`` ones that read and keep it.
"""

from __future__ import annotations

import numpy as np

LINEAR_READS = {"scale": ("src",), "add": ("a", "b"), "mul": (), "axpy": ("src", "dst")}
NONLINEAR_READS = {"scale": (), "add": (), "mul": ("a", "b"), "axpy": ()}


def reads(op) -> list:
    return [op[role] for role in LINEAR_READS[op["kind"]] + NONLINEAR_READS[op["kind"]]]


def forward(values: dict, program: list) -> tuple[dict, list]:
    """Run ``program`` on copies of ``values``; return final values and per-op saved inputs."""
    v = {k: np.array(a, dtype=np.float64) for k, a in values.items()}
    saved = []
    for op in program:
        w = slice(op["off"], op["off"] + op["count"])
        kind = op["kind"]
        if kind == "scale":
            out = 2.0 * v[op["src"]][w]
            saved.append(None)
        elif kind == "add":
            out = v[op["a"]][w] + v[op["b"]][w]
            saved.append(None)
        elif kind == "mul":
            va, vb = v[op["a"]][w].copy(), v[op["b"]][w].copy()
            out = va * vb
            saved.append((va, vb))
        else:  # axpy
            out = v[op["dst"]][w] + 3.0 * v[op["src"]][w]
            saved.append(None)
        v[op["dst"]][w] = out
    return v, saved


def backward(values: dict, program: list, seeds: dict, zero: bool) -> dict:
    """Gradients of sum(seeds[k] * final[k]) with respect to every array's initial value."""
    _, saved = forward(values, program)
    adj = {k: np.zeros_like(np.asarray(a, dtype=np.float64)) for k, a in values.items()}
    for k, s in seeds.items():
        adj[k] += s
    for op, kept in zip(reversed(program), reversed(saved)):
        w = slice(op["off"], op["off"] + op["count"])
        g = adj[op["dst"]][w].copy()
        if zero:
            adj[op["dst"]][w] = 0.0
        kind = op["kind"]
        if kind == "scale":
            adj[op["src"]][w] += 2.0 * g
        elif kind == "add":
            adj[op["a"]][w] += g
            adj[op["b"]][w] += g
        elif kind == "mul":
            va, vb = kept
            adj[op["a"]][w] += g * vb
            adj[op["b"]][w] += g * va
        else:
            adj[op["dst"]][w] += g
            adj[op["src"]][w] += 3.0 * g
    return adj


def finite_difference(values: dict, program: list, seeds: dict, eps: float = 1e-6) -> dict:
    """Central differences of the same loss, element by element, in float64."""

    def loss(vals):
        final, _ = forward(vals, program)
        return sum(float(np.sum(seeds[k] * final[k])) for k in seeds)

    grads = {}
    for name, array in values.items():
        base = np.array(array, dtype=np.float64)
        g = np.zeros_like(base)
        for idx in np.ndindex(base.shape):
            plus = {k: np.array(a, dtype=np.float64) for k, a in values.items()}
            minus = {k: np.array(a, dtype=np.float64) for k, a in values.items()}
            plus[name][idx] += eps
            minus[name][idx] -= eps
            g[idx] = (loss(plus) - loss(minus)) / (2 * eps)
        grads[name] = g
    return grads
