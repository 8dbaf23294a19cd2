"""What the kernel fuzzer's tests share: a small data point for the references by hand, and a one-build campaign
that must find nothing unknown."""

import numpy as np

import warp_zerostore as wp
from warp_zerostore.testing.fuzz import campaign, printer
from warp_zerostore.testing.fuzz.nodes import Const, Program

INPUTS = {
    "x": np.array([0.5, -0.25, 0.75, 1.0]),
    "xv": np.zeros((4, 3)),
    "y": np.array([0.1, 0.2, 0.3, 0.4]),
    "acc": np.zeros(2),
}
COT = {"y": np.array([1.0, 2.0, 3.0, 4.0]), "acc": np.zeros(2)}


def small_campaign(features, tmp_path, seed=19):
    """One build of 12 kernels drawn with ``features`` (seed 19 unless told), nothing shrunk."""
    return campaign.run(
        minutes=60, seed=seed, features=features, batch_size=12, max_batches=1, shrink_rounds=0, out=str(tmp_path)
    )


def assert_nothing_unknown(summary, kernels: int) -> None:
    """All ``kernels`` were checked, every failure is a known Warp issue or one warned at build time, and none
    is worse than stock (a package path wrong where stock on a plain Tape is right), warned or not."""
    assert summary.kernels == kernels
    unknown = summary.new + [f for f in summary.worse if f not in summary.new]
    assert not unknown, "\n\n".join(
        f"{f.variant} on the {f.tape} Tape, {f.kind}, {f.status} ({', '.join(f.constructs)}) on Warp "
        f"{wp.config.version}:\n" + printer.source(f.failure.case.program, f.failure.case.thresholds)
        for f in unknown
    )


#: The loop features (a campaign over the control-flow constructs starts from them).
LOOPS = {"float32", "stores", "augstores", "locals", "smooth", "static_loops", "runtime_loops", "while_loops"}
#: The helper features (a campaign over helpers and structs starts from them).
HELPERS = {"float32", "float64", "helpers", "locals", "stores", "smooth"}


def loop_program(body, loop_count=3):
    """A float64 kernel program of ``body`` with one local ``a0 = 0`` (and a loop count for loops)."""
    return Program("float64", (("a0", Const(0.0)),), (), (), body, loop_count=loop_count)
