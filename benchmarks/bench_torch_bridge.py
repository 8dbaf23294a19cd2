"""The seed op (y = x0^2 * x1^2 * x2^2, float32) forward + backward at 1M elements: the PyTorch bridge versus
the seed report's hand-written ``torch.autograd.Function``, which clones its inputs.

Both sides run the same kernel on the same tensors, loss ``y.sum()``, leaves' ``.grad`` reset (untimed) before
each run. Targets: time ratio bridge/hand-written <= 1.0, peak memory ratio <= 0.8.

Time: medians of interleaved runs in this process (``common.interleaved_medians``), with PyTorch's default
number of intra-op threads unless ``--torch-threads`` says otherwise (recorded in the JSON).

Peak memory: ``tracemalloc`` cannot see PyTorch's or Warp's native buffers, so each measurement runs in a child
process with glibc's mmap threshold fixed at 64 KiB (every buffer of this size is its own mapping, returned to
the system when freed, so resident memory follows live buffers). The child builds the kernel, creates the
inputs, runs forward + backward once to warm up and frees its results, then resets the kernel's peak-RSS
counter (``/proc/self/clear_refs``), runs forward + backward once more keeping the output and the gradients,
and reports the peak resident set (VmHWM) minus the resident set just before. Children alternate between the
two sides; the medians are compared.

Usage: python benchmarks/bench_torch_bridge.py [--n 1000000] [--repeats 15] [--memory-repeats 3] [--torch-threads N]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys

import torch
from common import interleaved_medians, peak_rss_growth, report
from seed_op import op_kernel

import warp_zerostore as wp
import warp_zerostore.torch as wpt

bridged = wpt.kernel_op(op_kernel, outputs={"y": "x0"})


class WPGradTape(torch.autograd.Function):
    """The seed report's Function, as written there (clones, shared gradient buffers, manual zeroing)."""

    @staticmethod
    def forward(ctx, x0, x1, x2):
        wp_device = wp.device_from_torch(x0.device)
        wp.synchronize_device()
        ctx.tape = wp.Tape()
        ctx.x0 = wp.from_torch(x0.clone(), requires_grad=True)
        ctx.x1 = wp.from_torch(x1.clone(), requires_grad=True)
        ctx.x2 = wp.from_torch(x2.clone(), requires_grad=True)
        ctx.y = wp.empty(x1.shape[0], dtype=wp.float32, device=wp_device)
        with ctx.tape:
            wp.launch(
                kernel=op_kernel,
                dim=[len(x1)],
                inputs=[ctx.x0, ctx.x1, ctx.x2],
                outputs=[ctx.y],
                adjoint=False,
                device=wp_device,
            )
        wp.synchronize_device()
        return wp.to_torch(ctx.y)

    @staticmethod
    def backward(ctx, adj_y):
        wp.synchronize_device()
        ctx.x0.grad.zero_()
        ctx.x1.grad.zero_()
        ctx.x2.grad.zero_()
        ctx.y.grad = wp.from_torch(adj_y).contiguous()
        ctx.tape.backward()
        wp.synchronize_device()
        return (
            wp.to_torch(ctx.tape.gradients[ctx.x0]),
            wp.to_torch(ctx.tape.gradients[ctx.x1]),
            wp.to_torch(ctx.tape.gradients[ctx.x2]),
        )


SIDES = {"bridge": bridged, "hand-written (clones)": WPGradTape.apply}


def inputs(n: int, device: str) -> list:
    g = torch.Generator().manual_seed(0)
    return [torch.rand(n, generator=g).to(device).requires_grad_() for _ in range(3)]


def step(fn, xs):
    """Forward + backward once; returns what a training step keeps (output and leaf gradients)."""
    y = fn(*xs)
    y.sum().backward()
    if xs[0].is_cuda:
        torch.cuda.synchronize(xs[0].device)
    return y


def measure_memory(side: str, n: int) -> dict:
    """In a child process (see the module docstring): peak RSS growth of one forward + backward, in bytes."""
    fn = SIDES[side]
    step(fn, inputs(16, "cpu"))  # build the kernel
    xs = inputs(n, "cpu")
    step(fn, xs)  # warm up at full size, then free what it made
    for x in xs:
        x.grad = None
    with peak_rss_growth() as growth:
        kept = step(fn, xs)
    assert kept is not None
    return {"side": side, "peak_growth_bytes": growth["bytes"]}


def memory_medians(n: int, repeats: int) -> dict:
    env = dict(os.environ, MALLOC_MMAP_THRESHOLD_="65536", OMP_NUM_THREADS="1")
    samples = {side: [] for side in SIDES}
    for _ in range(repeats):
        for side in SIDES:
            out = subprocess.run(
                [sys.executable, __file__, "--memory-child", side, "--n", str(n)],
                env=env,
                capture_output=True,
                text=True,
                timeout=300,
                check=True,
            )
            samples[side].append(json.loads(out.stdout.strip().splitlines()[-1])["peak_growth_bytes"])
    return {side: {"median_bytes": statistics.median(s), "samples_bytes": s} for side, s in samples.items()}


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--n", type=int, default=1_000_000)
    parser.add_argument("--repeats", type=int, default=15)
    parser.add_argument("--memory-repeats", type=int, default=3)
    parser.add_argument("--device", default="cpu")
    parser.add_argument("--torch-threads", type=int, default=None, help="torch.set_num_threads (default: PyTorch's)")
    parser.add_argument("--memory-child", choices=list(SIDES), help=argparse.SUPPRESS)
    args = parser.parse_args()
    wp.config.quiet = True
    wp.init()
    if args.torch_threads:
        torch.set_num_threads(args.torch_threads)
    if args.memory_child:
        print(json.dumps(measure_memory(args.memory_child, args.n)))
        return

    xs = {side: inputs(args.n, args.device) for side in SIDES}
    for side, fn in SIDES.items():
        step(fn, xs[side])  # build and warm up
    # both sides must agree (the hand-written one gets leaf gradients right only because it clones)
    for a, b in zip(xs["bridge"], xs["hand-written (clones)"]):
        torch.testing.assert_close(a.grad, b.grad)

    def reset(side):
        def run():
            for x in xs[side]:
                x.grad = None

        return run

    runs = {side: (lambda fn=fn, side=side: step(fn, xs[side])) for side, fn in SIDES.items()}
    timings = interleaved_medians(runs, args.repeats, {side: reset(side) for side in SIDES})
    time_ratio = timings["bridge"]["median_s"] / timings["hand-written (clones)"]["median_s"]

    memory = memory_medians(args.n, args.memory_repeats) if args.device == "cpu" else None
    for side in SIDES:
        line = f"{side:>22}: forward+backward median {timings[side]['median_s'] * 1e3:.2f} ms"
        if memory:
            line += f", peak memory growth median {memory[side]['median_bytes'] / 2**20:.1f} MiB"
        print(line)
    print(f"time ratio bridge/hand-written: {time_ratio:.3f} (target <= 1.0), torch threads {torch.get_num_threads()}")
    payload = {
        "device": args.device,
        "elements": args.n,
        "repeats": args.repeats,
        "torch_threads": torch.get_num_threads(),
        "median_ms": {k: v["median_s"] * 1e3 for k, v in timings.items()},
        "time_ratio_bridge_over_hand_written": time_ratio,
        "time_target": 1.0,
        "timings": timings,
    }
    if memory:
        memory_ratio = memory["bridge"]["median_bytes"] / memory["hand-written (clones)"]["median_bytes"]
        print(f"peak memory ratio bridge/hand-written: {memory_ratio:.3f} (target <= 0.8)")
        payload.update(
            memory_repeats=args.memory_repeats,
            peak_growth_mib={k: v["median_bytes"] / 2**20 for k, v in memory.items()},
            memory_ratio_bridge_over_hand_written=memory_ratio,
            memory_target=0.8,
            memory=memory,
        )
    report(f"torch_bridge_seed_op-threads{torch.get_num_threads()}", payload)


if __name__ == "__main__":
    main()
