"""What observation costs the snapshot Tape per launch: a launch the source analysis says only *may* write an array
(`access`: a use it cannot follow) has its bytes compared with the snapshot's copy after it (`tape/observe.py`),
which decides whether it gets a restore.

Per array size it prints the compare alone (``observe.unchanged``) and a whole recorded launch on
``Tape(snapshot=True)`` of a kernel reading the array through a local (may write: compared) against the same
kernel reading it directly (read only: no snapshot, no compare), medians of interleaved runs in the same process,
and writes ``benchmarks/results/observe-warp<version>[-cuda0].json``. On a GPU (``--device cuda:0``) the compare
is one kernel over 32-bit words and a 4-byte read back.

    python benchmarks/bench_observe.py [--device cpu] [--repeats 31] [--sizes 1000 100000 1000000]
"""

from __future__ import annotations

import argparse
import pathlib
import sys

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))

from common import interleaved_medians, report  # noqa: E402

import warp_zerostore as wp  # noqa: E402
from warp_zerostore.tape.observe import unchanged  # noqa: E402


@wp.kernel
def square_through_a_local(a: wp.array(dtype=float), y: wp.array(dtype=float)):
    i = wp.tid()
    b = a
    y[i] = b[i] * b[i]


@wp.kernel
def square_directly(a: wp.array(dtype=float), y: wp.array(dtype=float)):
    i = wp.tid()
    y[i] = a[i] * a[i]


def measure(n: int, device: str, repeats: int) -> dict:
    """One size: the compare alone, and a recorded launch reading through a local against one reading directly."""
    a = wp.array([float(i % 7) for i in range(n)], dtype=float, device=device, requires_grad=True)
    y = wp.zeros(n, dtype=float, device=device, requires_grad=True)
    saved = wp.clone(a)

    def launch(kernel):
        def run():
            tape = wp.Tape(snapshot=True)
            with tape:
                wp.launch(kernel, dim=n, inputs=[a, y], device=device)
            wp.synchronize_device(device)

        return run

    def compare():
        unchanged(saved, a)
        wp.synchronize_device(device)

    runs = {
        "compare": compare,
        "may_write_launch": launch(square_through_a_local),
        "read_only_launch": launch(square_directly),
    }
    for run in runs.values():
        run()  # build, warm up
    found = interleaved_medians(runs, repeats)
    row = {
        "n": n,
        "bytes": 4 * n,
        "compare_us": found["compare"]["median_s"] * 1e6,
        "may_write_launch_us": found["may_write_launch"]["median_s"] * 1e6,
        "read_only_launch_us": found["read_only_launch"]["median_s"] * 1e6,
    }
    row["ratio"] = row["may_write_launch_us"] / row["read_only_launch_us"]
    return row


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--device", default="cpu")
    parser.add_argument("--repeats", type=int, default=31)
    parser.add_argument("--sizes", type=int, nargs="+", default=[1000, 100_000, 1_000_000])
    args = parser.parse_args()
    wp.config.quiet = True
    wp.init()
    rows = []
    for n in args.sizes:
        row = measure(n, args.device, args.repeats)
        rows.append(row)
        print(
            f"n={n:>9}: compare {row['compare_us']:9.1f} us; snapshot launch, may write {row['may_write_launch_us']:9.1f}"
            f" us vs read only {row['read_only_launch_us']:9.1f} us (ratio {row['ratio']:.2f}; the may-write launch"
            " also takes the snapshot's device copy)"
        )
    report("observe", {"device": args.device, "repeats": args.repeats, "rows": rows})


if __name__ == "__main__":
    main()
