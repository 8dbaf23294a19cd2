"""Launch programs: sequences of kernel launches over named arrays, with the reads and writes of each.

An `Op` describes one of your kernels: which array parameters it reads, which it stores to, and
which reads its backward pass does not need the value of (``linear``: ``x`` in ``2 * x`` or ``x + y``).
A `Program` is a list of `Launch` es of ops over a pool of named arrays, with their initial
data; call it on Warp arrays (``program(**program.arrays())``) to launch it, on a Tape or not.
`warp_zerostore.testing.programs` draws programs; `warp_zerostore.testing.reference`
interprets them in NumPy.

The model is elementwise: thread ``i`` of a launch touches element ``offset + i`` (along the first axis)
of every array it is given. An op without ``offset`` covers whole arrays.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Any, Mapping, Sequence

import numpy as np
import warp

from .. import _compat


@dataclass(frozen=True)
class Op:
    """One of your kernels, with what each launch of it reads and writes.

    Attributes:
        kernel: The ``wp.Kernel``.
        reads: Array parameters it loads.
        writes: Array parameters it stores to (``a[i] = v``).
        linear: The reads whose value its backward pass does not need (a program may overwrite them later).
        offset: An int parameter that shifts the launch window along the first axis (the window is then drawn;
            without it a launch covers whole arrays).
        args: Values (or hypothesis strategies) for every other parameter.
        name: How programs print it and how a reference finds its rule; None: the kernel's key.

    Raises:
        ValueError: A parameter is not described, or is described as what it is not (the message says which).

    Example:
        ```python
        import warp_zerostore as wp
        from warp_zerostore.testing import Op

        @wp.kernel(zero_store=True)
        def axpy(x: wp.array(dtype=float), y: wp.array(dtype=float), alpha: float, off: int):
            i = wp.tid() + off
            y[i] = y[i] + alpha * x[i]

        op = Op(axpy, reads=("x", "y"), writes=("y",), linear=("x", "y"), offset="off", args={"alpha": 3.0})
        ```
    """

    kernel: Any
    reads: Sequence[str] = ()
    writes: Sequence[str] = ()
    linear: Sequence[str] = ()
    offset: str | None = None
    args: Mapping[str, Any] = field(default_factory=dict)
    name: str | None = None

    def __post_init__(self):
        for attr in ("reads", "writes", "linear"):
            value = getattr(self, attr)
            object.__setattr__(self, attr, (value,) if isinstance(value, str) else tuple(value))
        if self.name is None:
            object.__setattr__(self, "name", _compat.kernel_key(self.kernel))
        where = f"Op(kernel '{_compat.kernel_key(self.kernel)}', {_compat.kernel_source_location(self.kernel)})"
        params = dict(_compat.kernel_parameters(self.kernel))
        arrays = {p: t for p, t in params.items() if _compat.is_array_type(t)}
        for attr in ("reads", "writes"):
            for p in getattr(self, attr):
                if p not in arrays:
                    raise ValueError(
                        f"{where}: {attr} names '{p}', which is not an array parameter of the kernel "
                        f"(array parameters: {', '.join(arrays) or 'none'})."
                    )
        if not self.writes:
            raise ValueError(f"{where}: writes is empty; name the array parameters the kernel stores to.")
        for p in self.linear:
            if p not in self.reads:
                raise ValueError(f"{where}: linear names '{p}', which is not in reads {self.reads}; add it to reads.")
        if self.offset is not None and (self.offset not in params or self.offset in arrays):
            raise ValueError(f"{where}: offset names '{self.offset}', which is not an int parameter of the kernel.")
        covered = set(self.reads) | set(self.writes) | set(self.args) | {self.offset}
        for p in params:
            if p not in covered:
                if p in arrays:
                    what = "an array parameter: add it to reads or writes"
                else:
                    what = f"give it a value: args={{'{p}': ...}}"
                raise ValueError(f"{where}: parameter '{p}' is not described; it is {what}.")
        ndims = {_compat.array_type_ndim(t) for p, t in arrays.items() if p in covered}
        if len(ndims) > 1:
            raise ValueError(f"{where}: its array parameters have different ndim {sorted(ndims)}; programs need one.")
        object.__setattr__(self, "parameters", tuple(params))
        dtypes = {p: _compat.array_type_dtype(t) for p, t in arrays.items() if p in covered}
        object.__setattr__(self, "array_dtypes", dtypes)
        object.__setattr__(self, "ndim", ndims.pop() if ndims else 1)

    @property
    def needs(self) -> tuple:
        """The reads whose value the backward pass needs (``reads`` less ``linear``)."""
        return tuple(p for p in self.reads if p not in self.linear)


@dataclass(frozen=True)
class Launch:
    """One launch of ``op``: its array parameters bound to array names, on elements ``[start, start + count)``.

    Attributes:
        op: The `Op` launched.
        bind: ``{array parameter: array name}``.
        start: The first element (along the first axis) of the launch window.
        count: Threads along the first axis.
        args: Values of the op's other parameters for this launch.
    """

    op: Op
    bind: Mapping[str, str]
    start: int
    count: int
    args: Mapping[str, Any] = field(default_factory=dict)

    @property
    def window(self) -> slice:
        """The elements the launch touches along the first axis: ``slice(start, start + count)``."""
        return slice(self.start, self.start + self.count)

    def __repr__(self) -> str:
        parts = [f"{p}={self.bind[p]}" for p in self.op.parameters if p in self.bind]
        parts += [f"{p}={v!r}" for p, v in self.args.items()]
        if self.op.offset is not None:
            parts.append(f"{self.op.offset}={self.start}")
        return f"{self.op.name}({', '.join(parts)}) on [{self.start}:{self.start + self.count}]"

    def _repr_pretty_(self, printer, cycle) -> None:
        _pretty_listing(self, printer)


@dataclass(frozen=True, repr=False)
class Program:
    """Launches over named arrays of one shape, with the arrays' initial data (float64, as stored).

    Call it with Warp arrays by name to launch it; `arrays` makes fresh ones from ``data``.

    Attributes:
        shape: The shape of every array.
        dtypes: ``{array name: Warp dtype}``.
        launches: The `Launch` es, in order.
        data: ``{array name: float64 NumPy array}``: the initial values.

    Example:
        Programs are usually drawn by `warp_zerostore.testing.programs`:

        ```python
        import numpy as np
        import warp_zerostore as wp
        from warp_zerostore.testing import Launch, Op, Program, check_gradients

        @wp.kernel(zero_store=True)
        def scale(src: wp.array(dtype=float), dst: wp.array(dtype=float)):
            i = wp.tid()
            dst[i] = 2.0 * src[i]

        op = Op(scale, reads="src", writes="dst", linear="src")
        program = Program(
            shape=(2,),
            dtypes={"x": wp.float32, "y": wp.float32},
            launches=(Launch(op, {"src": "x", "dst": "y"}, 0, 2), Launch(op, {"src": "y", "dst": "x"}, 0, 2)),
            data={"x": np.array([1.0, 2.0]), "y": np.zeros(2)},
        )
        check_gradients(program, program.arrays())  # x is overwritten by 4 x: its gradient must be 4, not 5
        ```
    """

    shape: tuple
    dtypes: Mapping[str, Any]
    launches: tuple
    data: Mapping[str, np.ndarray]

    __name__ = "program"
    __qualname__ = "program"

    def __call__(self, **arrays):
        """Launch every launch in order on ``arrays`` (Warp arrays by name); returns None."""
        missing = [name for name in self.dtypes if name not in arrays]
        if missing:
            raise TypeError(f"program: missing arrays {missing}; call it as program(**program.arrays()).")
        device = arrays[next(iter(self.dtypes))].device
        for launch in self.launches:
            values = []
            for p in launch.op.parameters:
                if p in launch.bind:
                    values.append(arrays[launch.bind[p]])
                elif p == launch.op.offset:
                    values.append(launch.start)
                else:
                    values.append(launch.args[p])
            warp.launch(launch.op.kernel, dim=(launch.count,) + tuple(self.shape[1:]), inputs=values, device=device)

    def arrays(self, device="cpu", requires_grad: bool = True) -> dict:
        """Fresh Warp arrays holding the initial data, by name.

        Args:
            device: The Warp device to allocate them on.
            requires_grad: Whether they carry gradients.

        Returns:
            ``{array name: wp.array}``.
        """
        out = {}
        for name, dtype in self.dtypes.items():
            data = self.data[name].astype(_compat.numpy_scalar(dtype))
            out[name] = warp.array(data, dtype=dtype, device=device, requires_grad=requires_grad)
        return out

    @property
    def written(self) -> tuple:
        """Names of the arrays some launch stores to, in order of first write."""
        names = []
        for launch in self.launches:
            for p in launch.op.writes:
                if launch.bind[p] not in names:
                    names.append(launch.bind[p])
        return tuple(names)

    def hazards(self) -> list:
        """Why Warp's backward pass would replay against overwritten values, one line per case (empty: none).

        A launch that reads a value its backward pass needs (a read not marked ``linear``) must see the
        same value at backward time; a later launch, or the launch itself, storing to it changes that.

        Returns:
            One line per hazard, naming the launches and the array.
        """
        found = []
        for k, launch in enumerate(self.launches):
            for p in launch.op.needs:
                name = launch.bind[p]
                for j in range(k, len(self.launches)):
                    later = self.launches[j]
                    stores = [q for q in later.op.writes if later.bind[q] == name]
                    if stores and _overlap(launch.window, later.window):
                        who = "itself" if j == k else f"launch {j} ({later!r})"
                        found.append(
                            f"launch {k} ({launch!r}) reads {name} as '{p}' and its backward pass needs that value, "
                            f"but {who} stores to {name}"
                        )
        return found

    def with_kernels(self, kernels: Mapping[str, Any]) -> Program:
        """The same program with each op's kernel replaced by ``kernels[op.name]`` (e.g. another zero_store mode).

        Args:
            kernels: ``{op name: wp.Kernel}``, one per op of the program.

        Returns:
            The new `Program`.

        Raises:
            KeyError: An op has no kernel in ``kernels``.
        """
        ops = {}
        launches = []
        for launch in self.launches:
            op = launch.op
            if op.name not in kernels:
                names = sorted({other.op.name for other in self.launches})
                raise KeyError(f"with_kernels: no kernel for op '{op.name}'; give one per op name {names}.")
            if id(op) not in ops:
                ops[id(op)] = replace(op, kernel=kernels[op.name])
            launches.append(replace(launch, op=ops[id(op)]))
        return replace(self, launches=tuple(launches))

    def __repr__(self) -> str:
        dtypes = ", ".join(f"{n}: {_compat.type_repr(t)}" for n, t in self.dtypes.items())
        lines = [f"Program(shape={tuple(self.shape)}, arrays {{{dtypes}}}, launches:"]
        lines += [f"  {k}: {launch!r}" for k, launch in enumerate(self.launches)]
        lines += [f"  data {name} = {self.data[name].tolist()!r}" for name in self.dtypes]
        return "\n".join(lines) + ")"

    def _repr_pretty_(self, printer, cycle) -> None:
        # hypothesis (and IPython) pretty-print dataclasses field by field unless told otherwise: a falsifying
        # example must print as the launch listing
        _pretty_listing(self, printer)


def _pretty_listing(obj, printer) -> None:
    """``obj``'s repr through a hypothesis/IPython pretty printer, one line per line."""
    for k, line in enumerate(repr(obj).splitlines()):
        if k:
            printer.break_()
        printer.text(line)


def _overlap(a: slice, b: slice) -> bool:
    return max(a.start, b.start) < min(a.stop, b.stop)
