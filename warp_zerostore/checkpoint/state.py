"""What the state of a rollout is: named Warp arrays read from a list or from an object's attributes."""

from __future__ import annotations

import copy
import dataclasses

import warp


class CheckpointError(ValueError):
    """A rollout that cannot be checkpointed as given: the message names the argument and says what to do."""


@dataclasses.dataclass(frozen=True)
class Field:
    """One array of the state: how to find it (list index or attribute name), and the shape and dtype it keeps."""

    key: object
    label: str
    shape: tuple
    dtype: object

    @property
    def nbytes(self) -> int:
        size = 1
        for n in self.shape:
            size *= n
        return size * warp.types.type_size_in_bytes(self.dtype)


class StateLayout:
    """The arrays that make up a state, found the same way in every buffer of the rollout.

    ``state`` is a list/tuple of ``wp.array`` or an object whose ``wp.array`` attributes are the state (a Newton
    ``State``; private ``_names`` are skipped); ``fields`` picks some attributes of an object by name. Arrays are looked up on each use, so a
    step may rebind an attribute to a new array of the same shape and dtype.
    """

    def __init__(self, state, fields=None, what: str = "state"):
        self.is_sequence = isinstance(state, (list, tuple))
        if self.is_sequence:
            if fields is not None:
                raise CheckpointError(f"rollout(fields=...) selects attributes of a state object; {what} is a list")
            keys = list(range(len(state)))
            labels = [f"{what}[{i}]" for i in keys]
        else:
            if fields is None:
                keys = [
                    name
                    for name, value in vars(state).items()
                    if isinstance(value, warp.array) and not name.startswith("_")
                ]
            else:
                keys = list(fields)
            labels = [f"{what}.{name}" for name in keys]
        if not keys:
            raise CheckpointError(
                f"rollout(): {what} holds no wp.array; pass a list of arrays or an object whose wp.array "
                "attributes are the state"
            )
        found = []
        for key, label in zip(keys, labels):
            arr = state[key] if self.is_sequence else getattr(state, key, None)
            if not isinstance(arr, warp.array):
                raise CheckpointError(f"rollout(): {label} is {type(arr).__name__}, not a wp.array")
            if not arr.requires_grad:
                raise CheckpointError(
                    f"rollout(): {label} has requires_grad=False; the rollout carries the gradient of every state "
                    "array back to the initial state. Create it with requires_grad=True (Newton: "
                    "model.state(requires_grad=True)), or leave it out with fields=[...]"
                )
            if not arr.is_contiguous:
                raise CheckpointError(f"rollout(): {label} is not contiguous; pass a contiguous array (wp.clone)")
            found.append(Field(key, label, tuple(arr.shape), arr.dtype))
        self.fields = tuple(found)
        self._checked: dict = {}  # id(state object) -> its arrays when last checked

    def arrays(self, state) -> list:
        if self.is_sequence:
            return [state[f.key] for f in self.fields]
        return [getattr(state, f.key) for f in self.fields]

    def view(self, state, arrays):
        """A state object like ``state`` whose state arrays are ``arrays`` (a list copy, or a shallow copy of the
        object with those attributes rebound); ``state`` itself is left as it is."""
        if self.is_sequence:
            items = list(state)
            for field, arr in zip(self.fields, arrays):
                items[field.key] = arr
            return type(state)(items) if isinstance(state, tuple) else items
        other = copy.copy(state)
        for field, arr in zip(self.fields, arrays):
            setattr(other, field.key, arr)
        return other

    @property
    def nbytes(self) -> int:
        return sum(f.nbytes for f in self.fields)

    def check(self, state, what: str, after: str) -> bool:
        """Raise if an array of ``state`` lost the shape or dtype it started with (``after``: what changed it).
        Returns False when ``state`` holds the very arrays it held when last checked."""
        arrays = self.arrays(state)
        last = self._checked.get(id(state))
        if last is not None and all(a is b and a.requires_grad for a, b in zip(arrays, last)):
            return False  # the very arrays checked last time (a wp.array keeps its shape and dtype)
        for field, arr in zip(self.fields, arrays):
            label = field.label.replace("state", what, 1) if what != "state" else field.label
            if not isinstance(arr, warp.array):
                raise CheckpointError(
                    f"{after} replaced {label} with {type(arr).__name__}; a step must keep it a wp.array"
                )
            if tuple(arr.shape) != field.shape or arr.dtype != field.dtype:
                raise CheckpointError(
                    f"{after} changed {label} from shape {field.shape}, dtype {warp.types.type_repr(field.dtype)} to "
                    f"shape {tuple(arr.shape)}, dtype {warp.types.type_repr(arr.dtype)}; a checkpointed step must "
                    "keep every state array's shape and dtype (snapshots are restored into it)"
                )
            if not arr.requires_grad:
                raise CheckpointError(f"{after} left {label} with requires_grad=False; keep gradients on the state")
        self._checked[id(state)] = arrays
        return True

    def matches(self, other: StateLayout, what: str) -> None:
        """Raise unless the second buffer of a double-buffered rollout has the same arrays as the first."""
        mine = [(f.shape, f.dtype) for f in self.fields]
        theirs = [(f.shape, f.dtype) for f in other.fields]
        if len(mine) != len(theirs) or any(a != b for a, b in zip(mine, theirs)):
            raise CheckpointError(
                f"rollout(): {what} must have the same arrays (shapes, dtypes) as state; got "
                f"{[f.label for f in other.fields]} vs {[f.label for f in self.fields]}"
            )
