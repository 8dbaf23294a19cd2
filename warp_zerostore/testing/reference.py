"""An independent reference: launch programs run forward and backward in NumPy float64, nothing else.

It imports no Warp and no warp_zerostore code, so a test comparing it with a Tape compares two
implementations. Each op of a program needs a `Rule`: its NumPy forward and vector-Jacobian
product, elementwise over the launch window. The reverse pass saves what each launch read, so it gives
the true gradient even where Warp's replay would not (see ``Program.hazards``).

Store semantics: ``zero=True`` reads the gradient of the stored-to element, then zeroes it (the value
that was overwritten influences nothing through this element); ``zero=False`` reads it and keeps it
(Warp <= 1.12).

A program is anything with ``.launches`` (each with ``.op.name``, ``.bind`` mapping kernel parameters to
array names, ``.start`` and ``.count``) and ``.data`` (initial values by array name, first axis = elements).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Mapping

import numpy as np


@dataclass(frozen=True)
class Rule:
    """NumPy semantics of one elementwise kernel.

    The reverse pass adds the adjoints in reverse order of ``reads``, as the kernel's own backward does.

    Attributes:
        reads: The parameters it loads, in the order it loads them.
        write: The one it stores to.
        forward: ``forward(*read values) -> stored value``.
        vjp: ``vjp(g, *read values) -> one adjoint per read``.

    Example:
        ```python
        from warp_zerostore.testing.reference import Rule

        axpy = Rule(reads=("y", "x"), write="y", forward=lambda y, x: y + 3.0 * x, vjp=lambda g, y, x: (g, 3.0 * g))
        ```
    """

    reads: tuple
    write: str
    forward: Callable
    vjp: Callable


def forward(program, rules: Mapping[str, Rule], values: Mapping[str, np.ndarray] | None = None) -> dict:
    """Final values of every array after running ``program`` on ``values`` (default: ``program.data``).

    Args:
        program: A `warp_zerostore.testing.Program` (or anything with its ``launches`` and ``data``).
        rules: ``{op name: Rule}``.
        values: ``{array name: float64 NumPy array}`` to start from; None: ``program.data``.

    Returns:
        ``{array name: float64 NumPy array}``: the final values.

    Example:
        ```python
        from types import SimpleNamespace as NS
        import numpy as np
        from warp_zerostore.testing.reference import Rule, forward

        double = Rule(reads=("x",), write="y", forward=lambda x: 2.0 * x, vjp=lambda g, x: (2.0 * g,))
        program = NS(launches=[NS(op=NS(name="double"), bind={"x": "x", "y": "y"}, start=1, count=1)],
                     data={"x": np.ones(2), "y": np.zeros(2)})
        assert forward(program, {"double": double})["y"].tolist() == [0.0, 2.0]
        ```
    """
    return _run(program, rules, values)[0]


def backward(
    program,
    rules: Mapping[str, Rule],
    seeds: Mapping[str, np.ndarray],
    zero: bool,
    values: Mapping[str, np.ndarray] | None = None,
) -> dict:
    """Gradient of ``sum(seeds[k] * final[k])`` with respect to every array's initial value.

    Args:
        program: A `warp_zerostore.testing.Program` (or anything with its ``launches`` and ``data``).
        rules: ``{op name: Rule}``.
        seeds: ``{array name: float64 NumPy array}``: the cotangents of the final values.
        zero: True: zero semantics (a store's adjoint zeroes the gradient it consumes); False: accumulate.
        values: ``{array name: float64 NumPy array}`` to start from; None: ``program.data``.

    Returns:
        ``{array name: float64 NumPy array}``: the gradients of the initial values.

    Example:
        ```python
        from types import SimpleNamespace as NS
        import numpy as np
        from warp_zerostore.testing.reference import Rule, backward

        double = Rule(reads=("x",), write="y", forward=lambda x: 2.0 * x, vjp=lambda g, x: (2.0 * g,))
        launch = NS(op=NS(name="double"), bind={"x": "x", "y": "y"}, start=0, count=2)
        program = NS(launches=[launch], data={"x": np.ones(2), "y": np.zeros(2)})
        grads = backward(program, {"double": double}, seeds={"y": np.ones(2)}, zero=True)
        assert grads["x"].tolist() == [2.0, 2.0] and grads["y"].tolist() == [0.0, 0.0]
        ```
    """
    state, saved = _run(program, rules, values)
    adj = {k: np.zeros_like(v) for k, v in state.items()}
    for k, s in seeds.items():
        adj[k] += np.asarray(s, dtype=np.float64)
    for launch, read_values in zip(reversed(program.launches), reversed(saved)):
        rule = rules[launch.op.name]
        w = slice(launch.start, launch.start + launch.count)
        dst = launch.bind[rule.write]
        g = adj[dst][w].copy()
        if zero:
            adj[dst][w] = 0.0
        adjoints = rule.vjp(g, *read_values)
        for param, a in reversed(list(zip(rule.reads, adjoints))):
            adj[launch.bind[param]][w] += a
    return adj


def discarded(program, rules: Mapping[str, Rule]) -> dict:
    """Where zero and accumulate semantics may give different gradients: a boolean mask per array.

    An element is marked when a store's overwritten gradient (kept by accumulate semantics, zeroed by
    zero semantics) is left in it or flows into it through the reads of earlier launches. Elsewhere the
    two semantics compute the same numbers in the same order.

    Args:
        program: A `warp_zerostore.testing.Program` (or anything with its ``launches`` and ``data``).
        rules: ``{op name: Rule}``.

    Returns:
        ``{array name: bool NumPy array}`` over the first axis.

    Example:
        ```python
        from types import SimpleNamespace as NS
        import numpy as np
        from warp_zerostore.testing.reference import Rule, discarded

        double = Rule(reads=("x",), write="y", forward=lambda x: 2.0 * x, vjp=lambda g, x: (2.0 * g,))
        first = NS(op=NS(name="double"), bind={"x": "x", "y": "y"}, start=0, count=1)
        again = NS(op=NS(name="double"), bind={"x": "z", "y": "y"}, start=0, count=1)
        program = NS(launches=[first, again], data={"x": np.ones(2), "y": np.zeros(2), "z": np.ones(2)})
        mask = discarded(program, {"double": double})
        assert mask["x"].tolist() == [True, False] and not mask["z"].any()
        ```
    """
    marks = {k: np.zeros(np.shape(v)[0], dtype=bool) for k, v in program.data.items()}
    for launch in reversed(program.launches):
        rule = rules[launch.op.name]
        w = slice(launch.start, launch.start + launch.count)
        dst = launch.bind[rule.write]
        carried = marks[dst][w].copy()
        marks[dst][w] = True
        for param in rule.reads:
            marks[launch.bind[param]][w] |= carried
    return {
        k: np.broadcast_to(m.reshape((-1,) + (1,) * (np.ndim(program.data[k]) - 1)), np.shape(program.data[k])).copy()
        for k, m in marks.items()
    }


def _run(program, rules, values):
    state = {k: np.array(v, dtype=np.float64) for k, v in (program.data if values is None else values).items()}
    saved = []
    for launch in program.launches:
        rule = rules.get(launch.op.name)
        if rule is None:
            raise KeyError(f"reference: no Rule for op '{launch.op.name}'; rules cover {sorted(rules)}.")
        w = slice(launch.start, launch.start + launch.count)
        read_values = tuple(state[launch.bind[p]][w].copy() for p in rule.reads)
        state[launch.bind[rule.write]][w] = rule.forward(*read_values)
        saved.append(read_values)
    return state, saved
