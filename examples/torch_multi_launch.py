"""A bridged function that makes two launches, with a vec3 input and two outputs.

``points`` is an (N, 3) float32 tensor, seen by Warp as a ``wp.vec3`` array without a copy. Run:
``python examples/torch_multi_launch.py``.
"""

import torch

import warp_zerostore as wp
import warp_zerostore.torch as wpt


@wp.kernel
def scale_kernel(x: wp.array(dtype=wp.vec3), s: float, y: wp.array(dtype=wp.vec3)):
    i = wp.tid()
    y[i] = s * x[i]


@wp.kernel
def norm_kernel(y: wp.array(dtype=wp.vec3), n: wp.array(dtype=float)):
    i = wp.tid()
    n[i] = wp.length(y[i])


@wpt.op(outputs={"y": "x", "n": lambda x: x.shape})  # output -> shape: an input's name, a tuple, or a function
def step(x: wp.array(dtype=wp.vec3), s: float, y: wp.array(dtype=wp.vec3), n: wp.array(dtype=float)):
    wp.launch(scale_kernel, dim=x.shape, inputs=[x, s, y])
    wp.launch(norm_kernel, dim=x.shape, inputs=[y, n])


def main():
    wp.config.quiet = True
    points = torch.rand(5, 3, requires_grad=True)
    y, n = step(points, 2.0)
    n.sum().backward()
    torch.testing.assert_close(y, 2.0 * points.detach())
    torch.testing.assert_close(points.grad, 2.0 * points.detach() / points.detach().norm(dim=1, keepdim=True))
    print("two launches, vec3 input, two outputs: gradients right")


if __name__ == "__main__":
    main()
