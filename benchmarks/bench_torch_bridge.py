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

Part two (``--part overhead``), the registered operators at ``--overhead-n`` (1000) elements, where
the per-call cost is the bridge's own: forward + backward of the seed op (a kernel_op, and an @op making the same
launch) in eager mode (calling the op), through its registered operator called directly in eager mode
(``torch.ops.warp_zerostore.<name>``, what ``torch.compile``'s ``eager`` backend runs; target <= 1.05 of eager),
and under ``torch.compile(fullgraph=True)`` per backend, whose graphs hold the forward and backward operators
(target <= 1.0 of eager). The reference: the same math as a registered operator written purely in torch (forward
and backward operators, fake, autograd formula, registered the way the bridge registers), eager and compiled the
same way in the same interleaved run; its compiled/eager ratio is what any opaque registered op pays under
torch.compile, and each bridged ratio minus the reference's (``ratio_beyond_reference``), or the time compiling
adds to a bridged op minus what it adds to the reference (``extra_us_beyond_reference``, ``extra_cpu_us_...``),
is what the bridge adds beyond that. Also the time to make an op (which registers its two operators, once) and the
registration alone, and the machine's load average before and after (a shared machine: read the ratios, and
the CPU-time ones, ``cpu_median_s``, which leave out the time a thread waited for a core).

Usage: python benchmarks/bench_torch_bridge.py [--part all|seed|overhead] [--n 1000000] [--repeats 15]
       [--memory-repeats 3] [--torch-threads N] [--overhead-n 1000] [--overhead-repeats 200]
       [--backends eager,aot_eager,inductor]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time

import torch
from common import interleaved_medians, peak_rss_growth, report
from seed_op import op_kernel

import warp_zerostore as wp
import warp_zerostore.torch as wpt
from warp_zerostore.torch import custom_ops

bridged = wpt.kernel_op(op_kernel, outputs={"y": "x0"})


@wpt.op(outputs={"y": "x0"})
def bridged_function(
    x0: wp.array(dtype=wp.float32),
    x1: wp.array(dtype=wp.float32),
    x2: wp.array(dtype=wp.float32),
    y: wp.array(dtype=wp.float32),
):
    wp.launch(op_kernel, dim=x0.shape, inputs=[x0, x1, x2, y])


# The reference: the same math as a registered operator written purely in torch, registered the way the
# bridge registers (``torch.library.Library``, a fake, an autograd formula whose backward is an operator of its
# own), so that its compiled/eager ratio is what any opaque registered op pays under torch.compile.
_reference_lib = torch.library.Library("warp_zerostore_bench", "DEF")
_reference_lib.define("seed_reference(Tensor x0, Tensor x1, Tensor x2) -> Tensor")
_reference_lib.define("seed_reference_backward(Tensor x0, Tensor x1, Tensor x2, Tensor grad_y) -> Tensor[]")


def _reference_forward(x0, x1, x2):
    return (x0 * x0) * (x1 * x1) * (x2 * x2)


def _reference_backward(x0, x1, x2, grad_y):
    s0, s1, s2 = x0 * x0, x1 * x1, x2 * x2
    return [2.0 * x0 * s1 * s2 * grad_y, 2.0 * x1 * s0 * s2 * grad_y, 2.0 * x2 * s0 * s1 * grad_y]


_reference_lib.impl("seed_reference", _reference_forward, "CPU")
_reference_lib.impl("seed_reference_backward", _reference_backward, "CPU")
torch.library.register_fake(
    "warp_zerostore_bench::seed_reference", lambda x0, x1, x2: torch.empty_like(x0), lib=_reference_lib
)
torch.library.register_fake(
    "warp_zerostore_bench::seed_reference_backward",
    lambda x0, x1, x2, grad_y: [torch.empty_like(x0), torch.empty_like(x1), torch.empty_like(x2)],
    lib=_reference_lib,
)
reference_op = torch.ops.warp_zerostore_bench.seed_reference.default
_reference_backward_op = torch.ops.warp_zerostore_bench.seed_reference_backward.default


def _reference_setup_context(ctx, inputs, output):
    ctx.save_for_backward(*inputs)


def _reference_autograd(ctx, grad_y):
    return tuple(_reference_backward_op(*ctx.saved_tensors, grad_y))


torch.library.register_autograd(
    "warp_zerostore_bench::seed_reference",
    _reference_autograd,
    setup_context=_reference_setup_context,
    lib=_reference_lib,
)


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


def registration_costs(repeats: int = 20) -> dict:
    """Median seconds to make a kernel_op (registration included), and to register one op's two operators."""
    make, register = [], []
    for _ in range(repeats):
        start = time.perf_counter()
        made = wpt.kernel_op(op_kernel, outputs={"y": "x0"})
        make.append(time.perf_counter() - start)
        start = time.perf_counter()
        custom_ops.register(made, made.signature)
        register.append(time.perf_counter() - start)
    return {"make_op_median_s": statistics.median(make), "register_median_s": statistics.median(register)}


KINDS = ("kernel_op", "@op", "torch reference")


def overhead(n: int, repeats: int, backends: list) -> dict:
    """Forward + backward per call at ``n`` elements, for a kernel_op and an @op: eager (the autograd.Function
    path), the registered operator called directly (what a compiled graph runs), and compiled per backend."""
    losses = {
        "kernel_op eager": lambda *xs: bridged(*xs).sum(),
        "kernel_op registered operator eager": lambda *xs: bridged.registered.forward(*xs).sum(),
        "@op eager": lambda *xs: bridged_function(*xs).sum(),
        "@op registered operator eager": lambda *xs: bridged_function.registered.forward(*xs).sum(),
        "torch reference eager": lambda *xs: reference_op(*xs).sum(),
    }
    for backend in backends:
        for kind in KINDS:
            losses[f"{kind} compiled {backend}"] = torch.compile(
                losses[f"{kind} eager"], fullgraph=True, backend=backend
            )
    xs = {name: inputs(n, "cpu") for name in losses}
    reference = None
    for name, loss in losses.items():
        for _ in range(3):  # compile, then warm up
            for x in xs[name]:
                x.grad = None
            loss(*xs[name]).backward()
        grads = [x.grad for x in xs[name]]
        reference = reference or grads
        for g, r in zip(grads, reference):
            torch.testing.assert_close(g, r)

    def run(name):
        return lambda: losses[name](*xs[name]).backward()

    def reset(name):
        def clear():
            for x in xs[name]:
                x.grad = None

        return clear

    timings = interleaved_medians({k: run(k) for k in losses}, repeats, {k: reset(k) for k in losses})
    us = {k: v["median_s"] * 1e6 for k, v in timings.items()}
    cpu_us = {k: v["cpu_median_s"] * 1e6 for k, v in timings.items()}
    ratios, cpu_ratios = {}, {}
    for kind in KINDS:
        sides = [f"compiled {b}" for b in backends]
        if kind != "torch reference":
            sides.insert(0, "registered operator eager")
        for side in sides:
            ratios[f"{kind} {side} / eager"] = us[f"{kind} {side}"] / us[f"{kind} eager"]
            cpu_ratios[f"{kind} {side} / eager"] = cpu_us[f"{kind} {side}"] / cpu_us[f"{kind} eager"]
    # what the bridge adds under compile beyond what any opaque registered op pays (the reference's): as a
    # ratio difference, and in microseconds (compiled minus eager, the bridged op's minus the reference's)
    beyond_reference, beyond_reference_us, beyond_reference_cpu_us = {}, {}, {}
    for kind in ("kernel_op", "@op"):
        for b in backends:
            name, ref = f"{kind} compiled {b}", f"torch reference compiled {b}"
            beyond_reference[name] = ratios[f"{name} / eager"] - ratios[f"{ref} / eager"]
            for table, times in ((beyond_reference_us, us), (beyond_reference_cpu_us, cpu_us)):
                table[name] = (times[name] - times[f"{kind} eager"]) - (times[ref] - times["torch reference eager"])
    return {
        "elements": n,
        "repeats": repeats,
        "median_us": us,
        "cpu_median_us": cpu_us,
        "ratios": ratios,
        "cpu_ratios": cpu_ratios,
        "ratio_beyond_reference": beyond_reference,
        "extra_us_beyond_reference": beyond_reference_us,
        "extra_cpu_us_beyond_reference": beyond_reference_cpu_us,
        "timings": timings,
    }


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--n", type=int, default=1_000_000)
    parser.add_argument("--repeats", type=int, default=15)
    parser.add_argument("--memory-repeats", type=int, default=3)
    parser.add_argument("--device", default="cpu")
    parser.add_argument("--torch-threads", type=int, default=None, help="torch.set_num_threads (default: PyTorch's)")
    parser.add_argument("--memory-child", choices=list(SIDES), help=argparse.SUPPRESS)
    parser.add_argument("--part", choices=["all", "seed", "overhead"], default="all")
    parser.add_argument("--overhead-n", type=int, default=1000)
    parser.add_argument("--overhead-repeats", type=int, default=200)
    parser.add_argument(
        "--backends", default="eager,aot_eager,inductor", help="torch.compile backends for --part overhead"
    )
    args = parser.parse_args()
    wp.config.quiet = True
    wp.init()
    if args.torch_threads:
        torch.set_num_threads(args.torch_threads)
    if args.memory_child:
        print(json.dumps(measure_memory(args.memory_child, args.n)))
        return
    if args.part in ("all", "overhead"):
        main_overhead(args)
    if args.part in ("all", "seed"):
        main_seed(args)


def main_overhead(args) -> None:
    load_before = os.getloadavg()
    costs = registration_costs()
    result = overhead(args.overhead_n, args.overhead_repeats, [b for b in args.backends.split(",") if b])
    result["load_average_before_after"] = [load_before, os.getloadavg()]
    print(
        f"making a kernel_op: {costs['make_op_median_s'] * 1e3:.2f} ms median, of which registering its two "
        f"operators {costs['register_median_s'] * 1e3:.2f} ms (once per op, never per call)"
    )
    for name, us in result["median_us"].items():
        print(f"{name:>36}: forward+backward median {us:.1f} us at {args.overhead_n} elements")
    for name, ratio in result["ratios"].items():
        target = 1.05 if "registered" in name else 1.0
        print(f"ratio {name}: {ratio:.3f}, CPU time {result['cpu_ratios'][name]:.3f} (target <= {target})")
    print("what the bridge adds under compile beyond what the torch reference (any opaque registered op) pays:")
    for name, extra in result["ratio_beyond_reference"].items():
        print(
            f"{name:>28}: ratio minus the reference's {extra:+.3f}; time added by compiling minus the reference's "
            f"{result['extra_us_beyond_reference'][name]:+.0f} us (CPU time "
            f"{result['extra_cpu_us_beyond_reference'][name]:+.0f} us)"
        )
    print(f"load average (1, 5, 15 min) before {load_before}, after {os.getloadavg()}")
    report(
        f"torch_bridge_overhead-threads{torch.get_num_threads()}",
        {
            "device": "cpu",
            "torch": torch.__version__,
            "torch_threads": torch.get_num_threads(),
            **costs,
            **result,
            "targets": {"registered operator eager / eager": 1.05, "compiled / eager": 1.0},
        },
    )


def main_seed(args) -> None:
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
