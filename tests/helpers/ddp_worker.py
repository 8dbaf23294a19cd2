"""One rank of the DDP test: ``python ddp_worker.py RANK WORLD PORT OUT``; saves its all-reduced gradients."""

import datetime
import os
import sys

import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel

import warp_zerostore as wp
from helpers import ddp_model


def main(rank: int, world: int, port: int, out: str) -> None:
    wp.config.quiet = True
    torch.set_num_threads(1)
    dist.init_process_group(
        "gloo",
        init_method=f"tcp://127.0.0.1:{port}",
        rank=rank,
        world_size=world,
        timeout=datetime.timedelta(seconds=60),
    )
    model = ddp_model.TinyModel()
    ddp = DistributedDataParallel(model)
    share = ddp_model.BATCH // world
    history = ddp_model.train(ddp, model, slice(rank * share, (rank + 1) * share))
    torch.save(history, out)
    # Both ranks have their results. Leave without tearing the gloo group down: its destructors can wait forever
    # for a peer that already left (seen about 1 run in 5 on the 2-core machine); the process's exit frees it all.
    dist.barrier()
    sys.stdout.flush()
    os._exit(0)


if __name__ == "__main__":
    main(int(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3]), sys.argv[4])
