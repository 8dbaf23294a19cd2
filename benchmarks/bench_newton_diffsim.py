"""Check mode on Newton's six diffsim examples and a Featherstone step: what it reports, whether each report is
true, and what it costs over a plain recording.

Per program: its forward + backward (``Example.forward_backward``; Featherstone: one step of the two-hinge chain
of ``tests/helpers/newton_chain.py`` and its backward) without graph capture,

* **census**: recorded once on ``warp_zerostore.Tape(check="warn")`` (through ``warp.Tape``, as ``python -m
  warp_zerostore check`` runs it): the hazards, real and not, each named;
* **judgement** of each real report: the program run on a plain Tape and on ``Tape(snapshot=True)`` (which gives
  every launch back the values it read), after a pass at other parameter values (an optimiser's previous step:
  what a buffer read before it is written then holds), then (a) the gradient of the example's parameter on both and
  against central differences of the forward on three of its entries, (b) the gradient of the array the report
  says is read stale. A report is true when the plain Tape's gradient of that array differs from the snapshot's
  (the replay read other values), false when both gradients agree on a program whose parameter gradient is right;
* **cost**: plain ``warp.Tape()`` against the checking Tape, medians of interleaved runs (both sides in the same
  run, after an untimed warm-up of each, a full garbage collection before each), wall and thread CPU time, and the
  extra time per recorded launch.

Lengths: the examples' own, except ``bear`` (``--bear-steps`` frames of 80 substeps, default 2, against 300: a
check run of the full length takes minutes on a CPU). ``bear`` needs ``usd-core`` (``pxr``); an example whose
imports fail is skipped and says why. Needs the ``[newton]`` extra.

Usage: python benchmarks/bench_newton_diffsim.py [--repeats 3] [--only ball drone ...] [--no-judge]
"""

from __future__ import annotations

import argparse
import gc
import importlib
import os
import sys
import warnings

import numpy as np
from common import interleaved_medians, report

import warp_zerostore as wp
from warp_zerostore import _compat, config
from warp_zerostore.tape import tape as tape_safety

EXAMPLES = ("ball", "bear", "cloth", "drone", "soft_body", "spring_cage")
ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def _parameter(name: str, ex):
    """The array each example optimises."""
    return {
        "ball": lambda: ex.states[0].particle_qd,
        "bear": lambda: ex.weights,
        "cloth": lambda: ex.states[0].particle_qd,
        "drone": lambda: ex.rollouts.trajectories,
        "soft_body": lambda: ex.material_params,
        "spring_cage": lambda: ex.model.spring_rest_length,
    }[name]()


def _loss(name: str, ex) -> float:
    """The loss the example's backward seeds (drone: the sum of the rollout costs)."""
    values = ex.rollout_costs if name == "drone" else ex.loss
    return float(values.numpy().astype(np.float64).sum())


class Program:
    """One example without graph capture: ``run(tape)`` records its forward on ``tape`` and runs the backward."""

    def __init__(self, name: str, bear_steps: int):
        import newton.viewer  # noqa: PLC0415

        self.name = name
        module = importlib.import_module(f"newton.examples.diffsim.example_diffsim_{name}")

        def no_capture(example):  # the examples then run forward_backward() eagerly
            example.graph = example.forward_graph = example.backward_graph = None

        module.Example.capture = no_capture
        argv = ["--viewer", "null"] + (["--sim-steps", str(bear_steps)] if name == "bear" else [])
        args = module.Example.create_parser().parse_known_args(argv)[0]
        self.example = module.Example(newton.viewer.ViewerNull(num_frames=1), args)

    def run(self, tape) -> object:
        ex = self.example
        ex.tape = tape
        with tape:
            if self.name == "bear":
                ex.sim_time = 0.0
                for frame in range(ex.sim_steps):
                    ex.forward(frame)
            else:
                ex.forward()
        if self.name == "drone":
            ex.rollout_costs.grad.fill_(1.0)
            tape.backward()
        else:
            tape.backward(ex.loss)
        return tape

    def forward(self) -> float:
        """The loss of one forward pass, without a Tape."""
        self._zero_outputs()
        ex = self.example
        if self.name == "bear":
            ex.sim_time = 0.0
            for frame in range(ex.sim_steps):
                ex.forward(frame)
        else:
            ex.forward()
        return _loss(self.name, ex)

    def reset(self, tape) -> None:
        """Zero what a run accumulated: gradients, and the loss terms some examples accumulate."""
        tape.zero()
        self._zero_outputs()

    def _zero_outputs(self) -> None:
        ex = self.example
        for attribute in ("loss", "com", "pos_error"):
            value = getattr(ex, attribute, None)
            if value is not None:
                value.zero_()
        for com in getattr(ex, "coms", []):
            com.zero_()


class Chain:
    """One Featherstone step of the two-hinge chain with an external wrench (tests/helpers/newton_chain.py)."""

    name = "featherstone_chain"

    def __init__(self):
        sys.path.insert(0, os.path.join(ROOT, "tests"))
        import newton  # noqa: PLC0415
        from helpers import newton_chain  # noqa: PLC0415

        self.chain = newton_chain
        self.model = newton_chain.chain_model("cpu")
        self.solver = newton.solvers.SolverFeatherstone(self.model)

    def run(self, tape) -> object:
        self.chain.chain_gradient(self.model, self.solver, [0.3, -0.4], tape)
        return tape

    def reset(self, tape) -> None:
        tape.zero()


def _checked(program, make_tape=None):
    """``program.run`` on a checking Tape made where the program makes ``warp.Tape()`` (as the check command)."""
    saved = config.check
    config.check = "warn"
    try:
        with _compat.tape_class_replaced(tape_safety.Tape), warnings.catch_warnings():
            warnings.simplefilter("ignore", wp.OverwriteWarning)
            return program.run(make_tape() if make_tape else wp.Tape(check="warn"))
    finally:
        config.check = saved


def census(program) -> dict:
    tape = _checked(program)
    launches = _compat.tape_launch_count(tape)
    program.reset(tape)
    real = [h for h in tape.hazards if h.real]
    print(f"  {program.name}: {launches} launches, {len(tape.hazards)} hazard(s), {len(real)} real")
    for hazard in real:
        print(f"    {hazard.message()[:300]}")
    return {
        "launches": launches,
        "hazards": len(tape.hazards),
        "real": len(real),
        "reports": [
            {
                "kind": h.kind,
                "real": h.real,
                "writer": None if h.writer is None else [h.writer.kernel, h.writer.argument, h.writer.launch],
                "reader": None if h.reader is None else [h.reader.kernel, h.reader.argument, h.reader.launch],
                "earlier": None if h.earlier is None else [h.earlier.kernel, h.earlier.argument, h.earlier.launch],
            }
            for h in tape.hazards
        ],
        "_tape": tape,
    }


def _read_array(tape, site):
    """The array a reader site names, from the Tape's recorded arguments."""
    entry = _compat.tape_entries(tape)[site.launch]
    labels = dict(_compat.recorded_arguments(entry))
    return labels[site.argument.split(", ")[0]]


def judge(program: Program, reports: list) -> list:
    """Each real report: its array's gradient on a plain and a snapshot Tape; the parameter's on both and against
    central differences. The runs follow a pass at other parameter values, as in a training loop."""
    import warp  # noqa: PLC0415

    parameter = _parameter(program.name, program.example)
    centre = parameter.numpy().copy()
    shifted = centre + 0.01 * max(float(np.abs(centre).max()), 1.0)

    def previous_step():
        parameter.assign(shifted)
        program.forward()
        parameter.assign(centre)

    out = []
    runs = {}
    arrays = None
    for side, make in (("plain", warp.Tape), ("snapshot", lambda: wp.Tape(snapshot=True))):
        previous_step()
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", wp.OverwriteWarning)
            tape = program.run(make())
        if arrays is None:  # from the plain Tape, whose entries are the launches (a snapshot Tape adds its restores)
            arrays = [_read_array(tape, h.reader) for h in reports if h.reader is not None]
        runs[side] = (tape, parameter.grad.numpy().copy())
        runs[side] += ([a.grad.numpy().copy() if a.grad is not None else None for a in arrays],)
        program.reset(tape)
        for a in arrays:
            if a.grad is not None:
                a.grad.zero_()
    flat = centre.reshape(-1)
    picks = [0, flat.size // 2, flat.size - 1]
    fd = []
    for index in picks:
        eps = 1e-3 * max(1.0, abs(float(flat[index])))
        sides = []
        for sign in (1.0, -1.0):
            x = flat.copy()
            x[index] += sign * eps
            parameter.assign(shifted)
            program.forward()
            parameter.assign(x.reshape(centre.shape))
            sides.append(program.forward())
        fd.append((sides[0] - sides[1]) / (2 * eps))
    parameter.assign(centre)
    plain_grad, snap_grad = runs["plain"][1].reshape(-1), runs["snapshot"][1].reshape(-1)
    scale = max(np.abs(plain_grad).max(), 1e-30)
    for number, hazard in enumerate(h for h in reports if h.reader is not None):
        a, b = runs["plain"][2][number], runs["snapshot"][2][number]
        differs = None if a is None else float(np.abs(a - b).max() / max(np.abs(b).max(), 1e-30))
        verdict = {
            "report": f"{hazard.kind}: {hazard.writer.kernel}.{hazard.writer.argument} over "
            f"{hazard.reader.kernel}.{hazard.reader.argument}",
            "read_array_grad_plain_vs_snapshot_rel": differs,
            "parameter_grad_plain_vs_snapshot_rel": float(np.abs(plain_grad - snap_grad).max() / scale),
            "parameter_fd": [float(v) for v in fd],
            "parameter_plain": [float(plain_grad[i]) for i in picks],
            "parameter_snapshot": [float(snap_grad[i]) for i in picks],
            "true": bool(differs),
        }
        print(
            f"    judged: {verdict['report']}: the read array's gradient, plain vs snapshot, differs by "
            f"{differs:.3g} (relative); the parameter's by {verdict['parameter_grad_plain_vs_snapshot_rel']:.3g}; "
            f"central differences {np.round(fd, 4).tolist()} vs plain {np.round(verdict['parameter_plain'], 4).tolist()}"
            f" -> {'true report' if verdict['true'] else 'FALSE ALARM'}"
        )
        out.append(verdict)
    return out


def cost(program, repeats: int, launches: int) -> dict:
    import warp  # noqa: PLC0415

    def plain():
        program.reset(program.run(warp.Tape()))

    def check():
        program.reset(_checked(program))

    plain()
    check()  # warm-up: builds, read twins
    # A full garbage collection before each timed run: a check run leaves many objects for the next run's collector
    # (on soft_body a plain run after a check run spent 0.1-1.1 s collecting, by chance of the collector's counts).
    collect = {"plain": gc.collect, "check": gc.collect}
    timings = interleaved_medians({"plain": plain, "check": check}, repeats, setup=collect)
    out = {"timings": timings}
    for clock in ("median_s", "cpu_median_s"):
        c, p = timings["check"][clock], timings["plain"][clock]
        out[clock.replace("median_s", "ratio")] = c / p
        out[clock.replace("median_s", "extra_ms_per_launch")] = (c - p) / launches * 1e3
        print(
            f"  {'wall' if clock == 'median_s' else 'cpu '}: check {c * 1e3:9.1f} ms, plain {p * 1e3:8.1f} ms, "
            f"ratio {c / p:5.2f}x, extra {(c - p) / launches * 1e3:.3f} ms per launch"
        )
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--only", nargs="+", choices=(*EXAMPLES, "featherstone"), default=None)
    parser.add_argument("--bear-steps", type=int, default=2)
    parser.add_argument("--no-judge", action="store_true", help="skip the gradient runs that judge each report")
    args = parser.parse_args()
    try:
        import newton  # noqa: F401, PLC0415
    except ImportError:
        print("newton is not installed (pip install -e '.[newton]'): nothing to measure")
        return
    wp.config.quiet = True
    wp.init()
    payload = {"repeats": args.repeats, "bear_steps": args.bear_steps, "package": os.path.dirname(wp.__file__)}
    for name in args.only or (*EXAMPLES, "featherstone"):
        print(f"{name}:")
        try:
            program = Chain() if name == "featherstone" else Program(name, args.bear_steps)
        except ImportError as error:
            print(f"  skipped: {error}")
            payload[name] = {"skipped": str(error)}
            continue
        found = census(program)
        tape = found.pop("_tape")
        real = [h for h in tape.hazards if h.real]
        if real and not args.no_judge and isinstance(program, Program):
            found["judged"] = judge(program, real)
        found["cost"] = cost(program, args.repeats, found["launches"])
        payload[name] = found
    report("newton_diffsim", payload)


if __name__ == "__main__":
    main()
