"""Where a bridged op's Warp work runs: PyTorch's device, and on CUDA PyTorch's current stream.

Running Warp on the very stream PyTorch is using (the default stream or any ``torch.cuda.stream(s)`` the caller
set, in forward and in backward, where autograd restores the forward's stream) orders Warp's launches after
PyTorch's pending work and PyTorch's later work after Warp's, with no host synchronisation. Entering the scope
also makes that stream wait (an event, on the GPU) for work already queued on Warp's own current stream of the
device. Never ``wp.synchronize*``.
"""

from __future__ import annotations

import contextlib

import torch
import warp


@contextlib.contextmanager
def on_torch_stream(device: torch.device):
    """Make ``device`` Warp's current device, and on CUDA PyTorch's current stream Warp's current stream.

    Example::

        import torch
        from warp_zerostore.torch.streams import on_torch_stream

        with on_torch_stream(torch.device("cpu")) as wp_device:
            assert wp_device.is_cpu
    """
    warp.init()  # no-op once initialised; device_from_torch needs the runtime
    wp_device = warp.device_from_torch(device)
    with warp.ScopedDevice(wp_device):
        if wp_device.is_cuda:
            stream = warp.stream_from_torch(torch.cuda.current_stream(device))
            with warp.ScopedStream(stream, sync_enter=True):
                yield wp_device
        else:
            yield wp_device
