"""Cost of the copy form: Tape backward of a kernel that assigns components and fields of its locals after using
them, flagged (Warp's copy form, exact) against the same kernel unflagged (Warp's in-place assignments, whose
gradient is wrong: the same work, the cost of making it right).

The kernel: a vec3 local used whole (``wp.dot``), then a component assigned (``v[1] = e``) and updated
(``v[2] += e``, ``v[0] *= e``); a mat22 element assigned after a determinant; a struct local passed to a
``@wp.func``, then a field assigned and updated. Both sides are timed interleaved in the same run (medians over
--repeats rounds); the forward is timed too.

Used atomic returns are not made exact (docs/semantics.md), so there is no storage cost to measure for them.
Usage: python benchmarks/bench_local_copies.py [--n 1000000] [--repeats 21] [--device cpu]
"""

from __future__ import annotations

import argparse

import numpy as np
from common import interleaved_medians, paired_ratio, report, taped_backward

import warp_zerostore as wp


@wp.struct
class Pair:
    a: float
    b: float


@wp.func
def pair_product(p: Pair):
    return p.a * p.b


def _locals(flag):
    @wp.kernel(zero_store=flag)
    def locals_in_place(x: wp.array(dtype=float), y: wp.array(dtype=float)):
        i = wp.tid()
        a = x[i]
        v = wp.vec3(a, 2.0 * a, 1.0)
        d = wp.dot(v, v)
        v[1] = 3.0 * a
        v[2] += a * a
        v[0] *= a
        m = wp.mat22(a, 1.0, 2.0, a)
        e = wp.determinant(m)
        m[0, 1] = a
        s = Pair()
        s.a = a
        s.b = 2.0 * a
        f = pair_product(s)
        s.a = 0.5 * a
        s.b += a
        y[i] = d + wp.dot(v, v) + e * m[0, 1] + f + s.a * s.b

    return locals_in_place


KERNELS = {"zero_store=True": _locals(True), "stock": _locals(None)}


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--n", type=int, default=1_000_000)
    parser.add_argument("--repeats", type=int, default=21)
    parser.add_argument("--device", default="cpu")
    args = parser.parse_args()
    wp.config.quiet = True
    wp.init()

    runs, setup, forwards = {}, {}, {}
    for name, kernel in KERNELS.items():
        x = wp.array(
            np.linspace(0.1, 1.0, args.n, dtype=np.float32), dtype=float, device=args.device, requires_grad=True
        )
        y = wp.zeros(args.n, dtype=float, device=args.device, requires_grad=True)
        runs[name], setup[name] = taped_backward(kernel, args.n, [x], [y], args.device)

        def forward(kernel=kernel, x=x, y=y):
            wp.launch(kernel, dim=args.n, inputs=[x, y], device=args.device)
            wp.synchronize_device(args.device)

        forwards[f"{name} forward"] = forward
    backward = interleaved_medians(runs, args.repeats, setup)
    forward = interleaved_medians(forwards, args.repeats)
    ms = {name: t["median_s"] * 1e3 for name, t in {**backward, **forward}.items()}
    ratio = ms["zero_store=True"] / ms["stock"]
    paired = paired_ratio(backward, "zero_store=True", "stock")
    forward_ratio = ms["zero_store=True forward"] / ms["stock forward"]
    print(
        f"backward median True {ms['zero_store=True']:.3f} ms, stock {ms['stock']:.3f} ms: ratio {ratio:.3f} "
        f"(per-round median {paired:.3f}); forward ratio {forward_ratio:.3f}"
    )
    report(
        "local_copies_backward",
        {
            "device": args.device,
            "threads": args.n,
            "repeats": args.repeats,
            "median_ms": ms,
            "ratio_true_over_stock": ratio,
            "paired_ratio": paired,
            "forward_ratio": forward_ratio,
        },
    )


if __name__ == "__main__":
    main()
