"""``rollout()``: run T steps of a Warp simulation and record them on the active Tape as one entry."""

from __future__ import annotations

from typing import Any, Callable, Sequence

import warp

from .. import _compat, config
from ..tape import Tape as _CheckingTape
from .executor import Executor
from .schedules import ScheduleName, make_schedule
from .state import CheckpointError, StateLayout
from .summary import Progress, Summary


class Rollout:
    """The result of `rollout`: the final state, the cost summary, and the reverse sweep.

    `rollout` makes it; the Tape the rollout was recorded on calls `backward` for you.

    Attributes:
        state: The object holding the final state (``state`` in place; ``state`` or ``out`` double-buffered, by
            the parity of the number of steps).
        summary: The `Summary` of what the rollout cost, updated as its sweeps run.
        steps: The number of steps run.

    Args:
        executor: The schedule's executor (internal).
        summary: Its `Summary`.
    """

    def __init__(self, executor: Executor, summary: Summary):
        self._executor = executor
        self.summary = summary
        steps = executor.steps
        self.state = executor.holder(steps)
        self.steps = steps

    def backward(self) -> None:
        """Run the reverse sweep: the adjoint of the final state is taken from the ``.grad`` of its arrays; the
        gradients of the initial state and of ``params`` accumulate into theirs. Frees the snapshots.

        Raises:
            CheckpointError: The rollout was reversed already (its snapshots are gone).
        """
        self._executor.reverse_sweep()

    def close(self) -> None:
        """Free the snapshots (RAM, and the disk folder) without a backward pass; the rollout cannot be reversed
        after."""
        self._executor.close()

    def __repr__(self) -> str:
        return f"Rollout({self.summary})"


def _check_enclosing(tape) -> None:
    if isinstance(tape, _CheckingTape) and (tape.check != "off" or tape.snapshot):
        raise CheckpointError(
            f"rollout() is being recorded on a Tape with check={tape.check!r}, snapshot={tape.snapshot}: the rollout "
            "enters that Tape as one entry, and its launches (forward, recomputation, per-step reversal) run outside "
            "it, so that Tape could neither check nor snapshot them, and its snapshots would miss what the rollout "
            "overwrites. Combine them this way: record the rollout on a Tape without checks or snapshots "
            "(wp.Tape()), and pass check='warn'/'error' to rollout() to check each step on the local Tape it is "
            "reversed on (in-place steps are snapshotted there already)"
        )


def rollout(
    step: Callable[..., Any],
    state: Any,
    steps: int | None,
    *,
    snapshots: int = 10,
    params: Sequence[warp.array] = (),
    out: Any = None,
    schedule: ScheduleName = "binomial",
    disk_snapshots: int = 0,
    directory: str | None = None,
    period: int | None = None,
    until: Callable[[Any, int], bool] | None = None,
    fields: Sequence[str] | None = None,
    snapshot_step: bool | None = None,
    writes_input: bool = True,
    check: config.CheckLevel = "off",
    progress: bool | None = None,
) -> Rollout:
    """Run ``steps`` steps and record them on the active ``wp.Tape`` as one entry, holding at most ``snapshots``
    copies of the state; ``tape.backward()`` recomputes what it did not keep (Revolve's minimum) and gives the
    gradients of the initial state and of ``params``, equal to those of a Tape that kept every step.

    Each step is reversed on a local Tape of that one step: a ``warp_zerostore.Tape(snapshot=True)`` where the
    step needs one (see ``snapshot_step``). Kernels that overwrite what they read need ``zero_store=True`` on
    warp-lang < 1.13, as on any Tape. Gradients of arrays the step reads are accumulated only for ``params``;
    other arrays it touches (temporaries, scratch) get zeroed gradients.

    Args:
        step: ``step(state, n)`` advances ``state`` in place by step ``n``: it may launch any number of kernels,
            read per-step inputs indexed by ``n`` and read ``params``. With ``out=``: ``step(state_in, state_out,
            n)`` reads one buffer and writes the other.
        state: The state: a list of ``wp.array``, or an object whose ``wp.array`` attributes are the state (a
            Newton ``State``; ``fields`` picks some). Every state array needs ``requires_grad=True``.
        steps: How many steps; None for an online rollout that ``until`` ends (``schedule="two_level"`` or
            ``"store_all"``).
        snapshots: The most copies of the state held in RAM at once (at least 1); ``snapshots >= steps``
            stores every state.
        params: Arrays the steps read whose gradients accumulate over all steps (each with
            ``requires_grad=True``; per-step inputs belong here too).
        out: A second state object of the same layout: the rollout is then double-buffered, the two swapping
            each step (the final state is in ``state`` or ``out`` by the parity of ``steps``).
        schedule: ``"binomial"`` (Revolve, snapshots in RAM, the default); ``"multistage"`` (``snapshots`` in
            RAM plus ``disk_snapshots`` on disk); ``"two_level"`` (online: a snapshot on disk every ``period``
            steps, binomial with ``snapshots`` in RAM within a period); ``"store_all"`` (keeps every step: the
            reference). See `SCHEDULES`.
        disk_snapshots: Snapshots kept as ``.npy`` files in ``directory`` (``schedule="multistage"`` only).
        directory: The folder for snapshots on disk (a private subfolder is made in it and removed after).
        period: Steps between disk snapshots of ``schedule="two_level"``.
        until: ``until(state, n) -> bool`` ends an online rollout (``steps=None``) after the step that makes
            it true.
        fields: The attribute names of a state object that are the state; None: all its ``wp.array``
            attributes.
        snapshot_step: Whether each reversed step is recorded on a snapshotting Tape. None (the default):
            always in place; double-buffered, a step in which a launch overwrites what it or an earlier launch
            read, found from the recorded launches, the forward sweep's first step's included (a step that needs
            one only after earlier steps did not, and that overwrites its own input state, raises
            `CheckpointError`). True: every step; False: none (a plain Tape).
        writes_input: False (double-buffered only) promises that the step never writes the state arrays of
            ``state_in``: snapshots are then read in place and written by the step itself rather than copied
            (faster). The promise is checked: step 0's input is compared before and after it runs, and each
            reversed step's launches are read for writes into its input.
        check: ``"off"``, ``"warn"`` or ``"error"``: report what each step's local Tape does not make right
            (a stale read its snapshot restores is not reported).
        progress: Show tqdm bars for the forward and reverse sweeps: None (the default) when stderr is a
            terminal, or as ``warp_zerostore.config.progress`` says; True always; False never.

    Returns:
        A `Rollout`: the final state (``.state``), the counts (``.summary``, a `Summary`) and the reverse
        sweep the Tape calls.

    Raises:
        CheckpointError: Arguments that do not fit together (each message names the argument and says what to
            do), a Tape with checks or snapshots around the rollout, or a broken ``writes_input=False``
            promise.
        ImportError: checkpoint-schedules is not installed (``pip install "warp_zerostore[checkpoint]"``).

    Example:
        ```python
        import numpy as np
        import warp_zerostore as wp
        from warp_zerostore.checkpoint import rollout

        @wp.kernel(zero_store=True)
        def decay(x: wp.array(dtype=float), k: wp.array(dtype=float)):
            i = wp.tid()
            x[i] = x[i] - 0.1 * k[0] * x[i] * x[i]

        x = wp.array([1.0, 2.0], dtype=float, requires_grad=True)
        k = wp.array([0.5], dtype=float, requires_grad=True)
        tape = wp.Tape()
        with tape:
            run = rollout(lambda s, n: wp.launch(decay, dim=2, inputs=[s[0], k]), [x], 100, snapshots=5, params=[k])
        tape.backward(grads={x: wp.ones(2, dtype=float)})  # loss = sum of the final x
        assert run.summary.steps_run == 416 and np.all(x.grad.numpy() > 0) and k.grad.numpy()[0] < 0
        ```
    """
    if steps is None and until is None:
        raise CheckpointError("rollout(): give steps=N, or until=callable(state, n) for an online rollout")
    if steps is not None and (int(steps) != steps or steps < 1):
        raise CheckpointError(f"rollout(steps={steps!r}): the number of steps must be an integer >= 1")
    if int(snapshots) != snapshots or snapshots < 1:
        raise CheckpointError(
            f"rollout(snapshots={snapshots!r}): at least one snapshot is needed (the initial state is overwritten "
            "by the first step); snapshots >= steps stores every state"
        )
    if disk_snapshots < 0 or (disk_snapshots and schedule != "multistage"):
        raise CheckpointError("rollout(disk_snapshots=...) is for schedule='multistage' (a count >= 0)")
    if schedule == "multistage" and disk_snapshots and directory is None:
        raise CheckpointError(
            "rollout(schedule='multistage', disk_snapshots=...) needs directory=... for the .npy files"
        )
    if schedule == "two_level" and directory is None:
        raise CheckpointError("rollout(schedule='two_level') keeps its periodic snapshots on disk: give directory=...")
    config.validate_check(check, "rollout(check=...)")
    if not writes_input and out is None:
        raise CheckpointError(
            "rollout(writes_input=False) is a promise for double-buffered steps (out=...): an in-place step "
            "writes its input state by definition"
        )

    layout = StateLayout(state, fields)
    buffers = [state]
    if out is not None:
        layout.matches(StateLayout(out, fields, what="out"), "out")
        if any(a is b for a in layout.arrays(state) for b in layout.arrays(out)):
            raise CheckpointError("rollout(out=...) must not share arrays with state (double buffering needs two)")
        buffers.append(out)
    param_list = list(params)
    for i, p in enumerate(param_list):
        if not isinstance(p, warp.array) or not p.requires_grad:
            raise CheckpointError(
                f"rollout(): params[{i}] must be a wp.array with requires_grad=True (its gradient accumulates over "
                "the steps)"
            )

    enclosing = _compat.active_tape()
    if enclosing is not None:
        _check_enclosing(enclosing)

    # snapshots >= steps needs no special case: Revolve then stores every state but the last.
    cp_schedule = make_schedule(schedule, steps, int(snapshots), int(disk_snapshots), period)
    summary = Summary(schedule=schedule, steps=steps, state_bytes=layout.nbytes)
    options = {
        "snapshot_step": (True if out is None else None) if snapshot_step is None else bool(snapshot_step),
        "check": check,
        "directory": directory,
        "writes_input": bool(writes_input),
    }
    executor = Executor(
        step, buffers, layout, param_list, cp_schedule, steps, until, summary, Progress(progress, steps), options
    )
    executor.forward_sweep()
    result = Rollout(executor, summary)
    if enclosing is not None:
        enclosing.record_func(backward=result.backward, arrays=executor.state_arrays() + param_list)
    return result
