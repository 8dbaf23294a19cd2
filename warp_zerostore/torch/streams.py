"""Where a bridged op's Warp work runs: PyTorch's device, and on CUDA PyTorch's current stream.

Running Warp on the very stream PyTorch is using (the default stream or any ``torch.cuda.stream(s)`` the caller
set; in backward, autograd makes the forward's stream current again) orders Warp's launches after PyTorch's
pending work and PyTorch's later work after Warp's, with no host synchronisation. Switching to it also makes it
wait (a device-side event, not a host sync) for work already queued on Warp's previous current stream of that
device. Nothing here calls ``wp.synchronize*``.

Backward only switches the device's stream (per-device state): PyTorch may run the backward passes of
different GPUs in parallel threads, and Warp's default device is process-wide.

The bridge's own buffers (outputs, gradients) are PyTorch's, so its caching allocator orders their reuse.
Temporaries an op allocates with Warp (``wp.zeros(..., requires_grad=True)``) live on the op's Tape until
PyTorch frees the graph, and Warp then frees them on its current stream of the device: on a non-blocking
PyTorch stream (``torch.cuda.Stream()``) that free is not ordered after the backward's kernels, Warp's own
caveat for such streams (see ``wp.stream_from_torch``). Allocate those through PyTorch
(``wp.from_torch(torch.zeros(...), requires_grad=True)``) when running on one.
"""

from __future__ import annotations

import contextlib

import torch
import warp


@contextlib.contextmanager
def torch_stream(device: torch.device):
    """Yield ``device`` as a Warp device; on CUDA, PyTorch's current stream there is Warp's meanwhile.

    Args:
        device: A ``torch.device``.

    Yields:
        The matching Warp device.

    Example:
        ```python
        import torch
        from warp_zerostore.torch.streams import torch_stream

        with torch_stream(torch.device("cpu")) as wp_device:
            assert wp_device.is_cpu
        ```
    """
    warp.init()  # no-op once initialised; device_from_torch needs the runtime
    wp_device = warp.device_from_torch(device)
    if not wp_device.is_cuda:
        yield wp_device
        return
    saved = warp.get_stream(wp_device)
    warp.set_stream(warp.stream_from_torch(torch.cuda.current_stream(device)), device=wp_device, sync=True)
    try:
        yield wp_device
    finally:
        warp.set_stream(saved, device=wp_device, sync=False)


@contextlib.contextmanager
def on_torch_device(device: torch.device):
    """`torch_stream`, with ``device`` also Warp's default device (for launches that name none).

    Args:
        device: A ``torch.device``.

    Yields:
        The matching Warp device.

    Example:
        ```python
        import torch
        import warp
        from warp_zerostore.torch.streams import on_torch_device

        with on_torch_device(torch.device("cpu")):
            assert warp.get_device().is_cpu
        ```
    """
    with torch_stream(device) as wp_device, warp.ScopedDevice(wp_device):
        yield wp_device
