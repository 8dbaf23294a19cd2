"""A picture of a checkpointed rollout's schedule: what was stored, recomputed and reversed, and when.

Drawn from ``Summary.timeline`` with matplotlib, an optional dependency (the ``plot`` extra), imported only here.
"""

from __future__ import annotations

from typing import Any

from .summary import Summary

# One colour per kind of work; the first pass and its recomputations differ only in colour.
COLOURS = {"forward": "#1f77b4", "recompute": "#ff7f0e", "reverse": "#d62728", "ram": "#2ca02c", "disk": "#9467bd"}


def plot_schedule(run: Any, filename: str | None = None, *, title: str | None = None) -> Any:
    """Draw a rollout's checkpointing schedule: steps across, schedule time down, snapshots held beside.

    The left panel has the rollout's steps on the x axis and the schedule's step evaluations on the y axis,
    downwards: the first forward pass (blue), recomputations (orange), reversals (red, running back), the
    snapshots stored (green triangles in RAM, purple squares on disk) and read back (open circles). The right
    panel shows how many snapshots were held at each moment. Call it after `tape.backward()` to see the reverse
    sweep too; before, only the forward pass is drawn.

    Args:
        run: The `Rollout` that `rollout()` returned, or its `summary`.
        filename: Where to save the picture (the extension picks the format: `.png`, `.svg`, `.pdf`);
            None saves nothing.
        title: The figure's title; None: the schedule's name and counts.

    Returns:
        The `matplotlib.figure.Figure`.

    Raises:
        ImportError: matplotlib is not installed (`pip install "warp_zerostore[plot]"`).

    Example:
        ```python
        import warp_zerostore as wp
        from warp_zerostore.checkpoint import plot_schedule, rollout

        @wp.kernel(zero_store=True)
        def decay(x: wp.array(dtype=float)):
            x[wp.tid()] = 0.9 * x[wp.tid()]

        x = wp.array([1.0], dtype=float, requires_grad=True)
        tape = wp.Tape()
        with tape:
            run = rollout(lambda s, n: wp.launch(decay, dim=1, inputs=[s[0]]), [x], 20, snapshots=3)
        tape.backward(grads={x: wp.ones(1, dtype=float)})
        figure = plot_schedule(run)
        assert len(figure.axes) == 2
        ```
    """
    try:
        from matplotlib.figure import Figure  # not pyplot: no backend, no global figure state
        from matplotlib.ticker import MaxNLocator
    except ImportError as e:
        raise ImportError('plot_schedule() needs matplotlib: pip install "warp_zerostore[plot]"') from e
    summary = run if isinstance(run, Summary) else run.summary
    figure = Figure(figsize=(9, 5.5), layout="constrained")
    steps_ax, held_ax = figure.subplots(1, 2, sharey=True, width_ratios=[4, 1])
    held = _draw_steps(steps_ax, summary)
    _draw_held(held_ax, held)
    for ax in (steps_ax, held_ax):
        ax.xaxis.set_major_locator(MaxNLocator(integer=True))
    figure.legend(loc="outside lower center", ncols=4, fontsize=8)
    steps_ax.set_title(title if title is not None else _title(summary), loc="left", fontsize=10)
    if filename is not None:
        figure.savefig(filename, dpi=120)
    return figure


def _draw_steps(ax, summary: Summary) -> list:
    """The schedule on ``ax``; returns ``[(time, ram held, disk held)]`` for the second panel."""
    time, held = 0, [(0, 0, 0)]
    drawn: set = set()  # legend entries already made

    def label(name):
        if name in drawn:
            return None
        drawn.add(name)
        return name

    for event in summary.timeline:
        if event.action == "forward":
            kind = "forward" if event.sweep == "forward" else "recompute"
            if event.snapshot:
                marker = "^" if event.storage == "ram" else "s"
                ax.plot(
                    [event.n0],
                    [time],
                    marker,
                    color=COLOURS[event.storage or "ram"],
                    markersize=7,
                    zorder=3,
                    label=label(f"snapshot stored ({event.storage})"),
                )
            span = event.n1 - event.n0
            ax.plot(
                [event.n0, event.n1],
                [time, time + span],
                color=COLOURS[kind],
                linewidth=2,
                label=label("first pass" if kind == "forward" else "recomputation"),
            )
            time += span
        elif event.action == "reverse":
            span = event.n1 - event.n0
            ax.plot(
                [event.n1, event.n0],
                [time, time + span],
                color=COLOURS["reverse"],
                linewidth=2.5,
                label=label("reversal"),
            )
            time += span
        else:
            ax.plot(
                [event.n0],
                [time],
                "o",
                markerfacecolor="none",
                color=COLOURS[event.storage or "ram"],
                markersize=7,
                zorder=3,
                label=label("snapshot read back"),
            )
        held.append((time, event.ram_held, event.disk_held))
    ax.set_xlabel("step")
    ax.set_ylabel("schedule time (step evaluations, reversals included)")
    ax.invert_yaxis()
    ax.grid(alpha=0.3)
    return held


def _draw_held(ax, held: list) -> None:
    times = [t for t, _, _ in held]
    ram = [r for _, r, _ in held]
    total = [r + d for _, r, d in held]
    ax.step(ram, times, where="post", color=COLOURS["ram"], label="snapshots held in RAM")
    if any(t != r for t, r in zip(total, ram)):
        ax.step(total, times, where="post", color=COLOURS["disk"], label="snapshots held, RAM + disk")
    ax.set_xlabel("snapshots held")
    ax.set_xlim(left=0, right=max(total + [1]) + 0.5)
    ax.grid(alpha=0.3)


def _title(summary: Summary) -> str:
    return (
        f"{summary.schedule}: {summary.steps} steps, {summary.steps_run} step evaluations, "
        f"{summary.steps_reversed} reversed, at most {summary.snapshots_held} snapshots"
    )
