"""The seed report's op with the PyTorch bridge: y = x0^2 * x1^2 * x2^2 for three float32 inputs.

The hand-written ``torch.autograd.Function`` of the report cloned every input (else a leaf's gradient came out
twice) and zeroed Warp's gradients before each backward (else gradcheck's second backward differed). Neither is
needed here. Run: ``python examples/torch_seed.py``.
"""

from typing import Any

import torch

import warp_zerostore as wp
import warp_zerostore.torch as wpt


@wp.kernel
def seed_kernel(x0: wp.array(dtype=Any), x1: wp.array(dtype=Any), x2: wp.array(dtype=Any), y: wp.array(dtype=Any)):
    i = wp.tid()
    p = x0[i] * x1[i] * x2[i]
    y[i] = p * p


# One kernel, one output shaped (and typed) like x0; dtype=Any makes it work in float32 and float64.
seed = wpt.kernel_op(seed_kernel, outputs={"y": "x0"})


def main():
    wp.config.quiet = True
    torch.manual_seed(42)

    # float32, as in the report: leaf gradients land once, no clones
    xs = [torch.rand(3, dtype=torch.float32, requires_grad=True) for _ in range(3)]
    seed(*xs).sum().backward()
    x0, x1, x2 = (x.detach() for x in xs)
    torch.testing.assert_close(xs[0].grad, 2 * x0 * (x1 * x2) ** 2)

    # float64 variant through gradcheck, reentrancy check included (nondet_tol=0)
    xs64 = [torch.rand(3, dtype=torch.float64, requires_grad=True) for _ in range(3)]
    assert torch.autograd.gradcheck(seed, xs64, nondet_tol=0.0, check_backward_ad=True)
    print("seed op: leaf gradients right, gradcheck passed")


if __name__ == "__main__":
    main()
