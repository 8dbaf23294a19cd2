"""A tiny model whose loss goes through a bridged Warp op, trained the same way by one process or by each rank
of DistributedDataParallel (``ddp_worker.py``)."""

import torch

import warp_zerostore.torch as wpt
from helpers import kernels_torch_ddp

sq_norm = wpt.kernel_op(kernels_torch_ddp.sq_norm, outputs={"y": "h"})

BATCH, STEPS, LR = 16, 3, 0.1


class TinyModel(torch.nn.Module):
    """Linear(4 -> 3), tanh, then the Warp op: loss = mean |h|^2 over the rows (h as a vec3d array)."""

    def __init__(self):
        super().__init__()
        torch.manual_seed(0)
        self.lin = torch.nn.Linear(4, 3, dtype=torch.float64)

    def forward(self, x):
        return sq_norm(torch.tanh(self.lin(x))).mean()


def full_batch(step: int) -> torch.Tensor:
    return torch.rand(BATCH, 4, generator=torch.Generator().manual_seed(100 + step), dtype=torch.float64)


def train(model, module, rows: slice) -> list:
    """SGD for STEPS steps on ``rows`` of each batch; the gradients of ``module``'s parameters per step."""
    optimizer = torch.optim.SGD(model.parameters(), lr=LR)
    history = []
    for step in range(STEPS):
        optimizer.zero_grad()
        model(full_batch(step)[rows]).backward()
        history.append([p.grad.detach().clone() for p in module.parameters()])
        optimizer.step()
    return history
