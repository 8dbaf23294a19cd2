"""hypothesis strategies: Warp dtypes, shapes, arrays, and launch programs made of your own kernels.

Strategies draw data, never kernels: build kernels once, at module level, and draw what to run them on.
"""

from __future__ import annotations

from typing import Any, Mapping, Sequence

import numpy as np
import warp
from hypothesis import assume, note
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from .. import _compat
from .program import Launch, Op, Program

KINDS = ("scalar", "vector", "matrix", "quaternion", "transform")
DEFAULT_BOUNDS = (-2.0, 2.0)

_KIND_TYPES = {
    "scalar": (warp.float32,),
    "vector": (warp.vec2, warp.vec3, warp.vec4),
    "matrix": (warp.mat22, warp.mat33, warp.mat44),
    "quaternion": (warp.quat,),
    "transform": (warp.transform,),
}


def dtypes(
    scalar_types: Sequence = (warp.float16, warp.float32, warp.float64), kinds: Sequence[str] = KINDS
) -> st.SearchStrategy:
    """Warp float dtypes: scalars, vectors (2-4), matrices (2x2-4x4), quaternions, transforms.

    Args:
        scalar_types: The scalars to draw over: a non-empty subset of ``wp.float16``, ``wp.float32``,
            ``wp.float64``.
        kinds: A non-empty subset of ``"scalar"``, ``"vector"``, ``"matrix"``, ``"quaternion"``, ``"transform"``.

    Returns:
        A hypothesis strategy of Warp dtypes.

    Raises:
        ValueError: An unknown kind or scalar type, or an empty choice.

    Example:
        ```python
        import warp_zerostore as wp
        from warp_zerostore.testing import dtypes

        vec_or_mat32 = dtypes(scalar_types=[wp.float32], kinds=["vector", "matrix"])
        ```
    """
    unknown = [k for k in kinds if k not in KINDS]
    if unknown or not kinds:
        raise ValueError(f"dtypes: kinds must be a non-empty subset of {KINDS}, got {list(kinds)}.")
    bad = [s for s in scalar_types if s not in (warp.float16, warp.float32, warp.float64)]
    if bad or not scalar_types:
        raise ValueError(
            "dtypes: scalar_types must be a non-empty subset of (wp.float16, wp.float32, wp.float64), "
            f"got {list(scalar_types)}."
        )
    choices = []
    for kind in kinds:
        for template in _KIND_TYPES[kind]:
            for scalar in scalar_types:
                choices.append(template if scalar is warp.float32 else _compat.with_scalar_type(template, scalar))
    return st.sampled_from(choices)


def shapes(*, min_dims: int = 1, max_dims: int = 4, min_side: int = 1, max_side: int = 4) -> st.SearchStrategy:
    """Array shapes of ``min_dims`` to ``max_dims`` (Warp allows 1-4) dimensions, each ``min_side`` to ``max_side``.

    Args:
        min_dims: The fewest dimensions (at least 1).
        max_dims: The most dimensions (at most 4).
        min_side: The smallest side (at least 1).
        max_side: The largest side.

    Returns:
        A hypothesis strategy of shape tuples.

    Raises:
        ValueError: The bounds are out of order or outside Warp's 1-4 dimensions.

    Example:
        ```python
        from warp_zerostore.testing import shapes

        matrices_of_rows = shapes(min_dims=2, max_dims=2, max_side=3)
        ```
    """
    if not 1 <= min_dims <= max_dims <= 4:
        raise ValueError(
            f"shapes: need 1 <= min_dims <= max_dims <= 4 (Warp arrays have 1 to 4 dimensions), "
            f"got {min_dims}, {max_dims}."
        )
    if not 1 <= min_side <= max_side:
        raise ValueError(f"shapes: need 1 <= min_side <= max_side, got {min_side}, {max_side}.")
    return st.lists(st.integers(min_side, max_side), min_size=min_dims, max_size=max_dims).map(tuple)


def _element_strategy(dtype, elements) -> st.SearchStrategy:
    if isinstance(elements, st.SearchStrategy):
        return elements
    low, high = DEFAULT_BOUNDS if elements is None else elements
    width = 8 * np.dtype(_compat.numpy_scalar(dtype)).itemsize
    return st.floats(low, high, width=width, allow_nan=False, allow_infinity=False, allow_subnormal=False)


def array_data(dtype, shape, elements=None) -> st.SearchStrategy:
    """NumPy float64 data for a Warp array of ``dtype`` and ``shape``, rounded to ``dtype`` (values as stored).

    The NumPy shape is ``shape`` followed by the element's shape (``(3,)`` for vec3).

    Args:
        dtype: The Warp dtype.
        shape: The Warp array's shape.
        elements: A ``(low, high)`` pair (None: ``(-2, 2)``) or a hypothesis strategy of floats.

    Returns:
        A hypothesis strategy of float64 NumPy arrays.

    Example:
        ```python
        import warp_zerostore as wp
        from warp_zerostore.testing import array_data

        data = array_data(wp.vec3, (4,), elements=(-1.0, 1.0))  # arrays of shape (4, 3)
        ```
    """
    full = tuple(shape) + _compat.element_shape(dtype)
    np_scalar = _compat.numpy_scalar(dtype)
    return hnp.arrays(np.float64, full, elements=_element_strategy(dtype, elements)).map(
        lambda a: a.astype(np_scalar).astype(np.float64)
    )


@st.composite
def arrays(draw, dtype, shape, *, elements=None, requires_grad: bool = True, device="cpu"):
    """Warp arrays, made for each example on ``device``; ``dtype`` and ``shape`` may be strategies.

    Args:
        dtype: A Warp dtype, or a strategy of them (`dtypes`).
        shape: A shape, or a strategy of them (`shapes`).
        elements: As in `array_data`.
        requires_grad: Whether the arrays carry gradients.
        device: The Warp device to allocate them on.

    Returns:
        A hypothesis strategy of ``wp.array``.

    Example:
        ```python
        import warp_zerostore as wp
        from hypothesis import given
        from warp_zerostore.testing import arrays, dtypes, shapes

        @given(arrays(dtypes(kinds=["vector"]), shapes(max_dims=2)))
        def test_drawn(a):
            assert a.requires_grad and a.ndim <= 2
        ```
    """
    dtype = draw(dtype) if isinstance(dtype, st.SearchStrategy) else dtype
    shape = draw(shape) if isinstance(shape, st.SearchStrategy) else tuple(shape)
    data = draw(array_data(dtype, shape, elements))
    note(f"array of {_compat.type_repr(dtype)}, shape {shape}: {data.tolist()!r}")
    return warp.array(data.astype(_compat.numpy_scalar(dtype)), dtype=dtype, device=device, requires_grad=requires_grad)


def programs(
    ops: Sequence[Op],
    arrays: Mapping[str, Any],
    *,
    shape=None,
    elements=None,
    min_launches: int = 1,
    max_launches: int = 6,
    replay_safe: bool = True,
) -> st.SearchStrategy:
    """Launch programs made of ``ops`` over the named ``arrays`` (name -> Warp dtype), with initial data.

    Each launch draws an op, binds its array parameters to arrays of a matching dtype (a generic
    kernel's ``Any`` parameters all get one dtype), a window (ops with an ``offset``) and values for
    strategies in ``args``. Windows overlap and arrays get overwritten. With ``replay_safe`` (default),
    no launch stores to a value an earlier launch's backward pass needs (see `Program.hazards`):
    Warp replays kernels against arrays as they are at backward time, so such programs have wrong
    gradients in any store mode.

    Args:
        ops: The `Op` s to launch.
        arrays: ``{array name: Warp dtype}``: the pool of arrays.
        shape: A tuple or a strategy of them; None: ``ndim`` of the ops, sides 1-5.
        elements: The initial data's values, as in `array_data`.
        min_launches: The fewest launches in a program.
        max_launches: The most launches in a program.
        replay_safe: Leave out launches that store to a value an earlier launch's backward pass needs.

    Returns:
        A hypothesis strategy of `Program` s.

    Raises:
        ValueError: No ops, or ops and arrays that cannot make a program (the message says why).

    Example:
        ```python
        import warp_zerostore as wp
        from hypothesis import given
        from warp_zerostore.testing import Op, check_gradients, programs

        @wp.kernel(zero_store=True)
        def scale(src: wp.array(dtype=float), dst: wp.array(dtype=float), off: int):
            i = wp.tid() + off
            dst[i] = 2.0 * src[i]

        ops = [Op(scale, reads="src", writes="dst", linear="src", offset="off")]

        @given(programs(ops, {"x": wp.float32, "y": wp.float32, "z": wp.float32}))
        def test_scale_programs(program):
            check_gradients(program, program.arrays())
        ```
    """
    ops = list(ops)
    if not ops:
        raise ValueError("programs: ops is empty; give at least one Op.")
    if not arrays:
        raise ValueError("programs: arrays is empty; give names and dtypes, e.g. {'x': wp.float32, 'y': wp.float32}.")
    if not 0 < min_launches <= max_launches:
        raise ValueError(f"programs: need 0 < min_launches <= max_launches, got {min_launches}, {max_launches}.")
    ndims = {op.ndim for op in ops}
    if len(ndims) > 1:
        raise ValueError(f"programs: ops have arrays of different ndim {sorted(ndims)}; draw one program per ndim.")
    ndim = ndims.pop()
    pool = dict(arrays)
    for op in ops:
        for p, template in op.array_dtypes.items():
            if not any(_compat.dtype_matches(t, template) for t in pool.values()):
                raise ValueError(
                    f"programs: no array in {list(pool)} matches parameter '{p}' of op '{op.name}' "
                    f"(dtype {_compat.type_repr(template)}); add one of that dtype."
                )
        if replay_safe:
            for p in op.needs:
                if p in op.writes:
                    raise ValueError(
                        f"programs: op '{op.name}' reads '{p}' (not linear) and stores to it, so its backward pass "
                        f"always replays against the stored value. Mark '{p}' linear if its backward does not "
                        "need the value, or pass replay_safe=False."
                    )
    if shape is None:
        shape = shapes(min_dims=ndim, max_dims=ndim, max_side=5 if ndim == 1 else 3)
    return _programs(ops, pool, shape, elements, min_launches, max_launches, replay_safe, ndim)


@st.composite
def _programs(draw, ops, pool, shape, elements, min_launches, max_launches, replay_safe, ndim):
    shape = draw(shape) if isinstance(shape, st.SearchStrategy) else tuple(shape)
    if len(shape) != ndim:
        raise ValueError(f"programs: shape {shape} has {len(shape)} dimensions; the ops' arrays have {ndim}.")
    n = shape[0]
    needed = {name: np.zeros(n, dtype=bool) for name in pool}  # elements an earlier backward pass reads
    launches = []
    for _ in range(draw(st.integers(min_launches, max_launches))):
        launch = _draw_launch(draw, draw(st.sampled_from(ops)), pool, n, needed if replay_safe else None)
        if launch is None:
            break
        launches.append(launch)
        for p in launch.op.needs:
            needed[launch.bind[p]][launch.window] = True
    assume(len(launches) >= min_launches)
    data = {name: draw(array_data(dtype, shape, elements)) for name, dtype in pool.items()}
    return Program(shape=shape, dtypes=pool, launches=tuple(launches), data=data)


def _draw_launch(draw, op, pool, n, needed):
    """One launch of ``op``, or None when no array can take its stores without a replay hazard."""
    if op.offset is not None:
        start = draw(st.integers(0, n - 1))
        count = draw(st.integers(1, n - start))
    else:
        start, count = 0, n
    window = slice(start, start + count)
    generic = [p for p, t in op.array_dtypes.items() if _compat.is_generic(t)]
    group = None
    if generic:
        dtypes_in_pool = dict.fromkeys(pool.values())
        fits = [t for t in dtypes_in_pool if all(_compat.dtype_matches(t, op.array_dtypes[p]) for p in generic)]
        if not fits:
            return None
        group = draw(st.sampled_from(fits))
    bind = {}
    order = [p for p in op.array_dtypes if p not in op.writes] + [p for p in op.array_dtypes if p in op.writes]
    for p in order:
        template = op.array_dtypes[p]
        candidates = [
            a
            for a, t in pool.items()
            if _compat.dtype_matches(t, template) and (p not in generic or _compat.types_equal(t, group))
        ]
        if needed is not None and p in op.writes:
            taken = {bind[r] for r in op.needs if r in bind}
            candidates = [a for a in candidates if a not in taken and not needed[a][window].any()]
        if not candidates:
            return None
        bind[p] = draw(st.sampled_from(candidates))
    args = {p: draw(v) if isinstance(v, st.SearchStrategy) else v for p, v in op.args.items()}
    return Launch(op=op, bind=bind, start=start, count=count, args=args)
