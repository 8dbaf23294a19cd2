"""Element-precise read sets for the Tape: an instrumented twin of a kernel marks what each thread reads, and when.

For a kernel whose array argument ``x`` is read or stored through full element indexing (``x[i]``, ``x[i, j]``),
directly or inside user ``@wp.func`` helpers it is passed to (the helpers get instrumented twins too), the twin
takes three extra ``int32`` arrays per such argument that the kernel reads and writes (one, ``read``, for an
argument it only reads; one, ``written``, for an argument it only writes):

* ``written``: set after each statement that stores into ``x[idx]`` (``x[idx] = v``, ``x[idx] += v``,
  ``wp.atomic_*(x, idx, v)``), whatever the value stored: which elements a launch writes does not depend on
  the data (a store of the value already there is seen);
* ``before``: set where ``x[idx]`` is read while ``written[idx]`` is still 0 (the launch's input value); in a
  ``zero_store=True`` kernel that reads ``x`` back, ``x[idx] += v`` is such a read too (its backward replays the
  update through the kernel's replay log, which loads the element);
* ``after``: set where ``x[idx]`` is read after this launch stored into it (the value the launch wrote).

Warp's backward replay re-reads arrays as they are at ``backward()`` time, so a read "after" is replayed right
when the array holds the launch's output, and a read "before" when it holds the launch's input: the Tape's
snapshots restore, per element, the value the launch read, and its checks do not call a read of one's own
write a stale read. Checking and snapshotting Tapes run the twin on device copies of **every** array argument
of the launch (one copy per distinct array, so arguments that alias stay aliased; a ``@wp.struct`` argument as a
copy of it holding scratch copies of its arrays), then the real launch: the twin never touches the user's arrays,
whatever the source analysis says.

An array a struct argument holds is marked as an argument is, under its path (``s.q[i]``: label ``"s.q"``), in the
kernel and in the helpers the struct is passed to (whole, as a part ``s.inner``, as a local bound to it, or made
into another struct ``S(a, s.q)``); so is a local bound once to such an array (``values = s.q``). An element is
also reached through slices and views: ``x[i][j]``, ``x[a:b:c][i]`` (the same subscripts applied to a shadow reach
the same element of it, however Warp slices), and ``row[j]`` through a view bound at the top of the body
(``row = x[w]``, ``window = row[0:1]``; reads through it only where the local is bound there alone).

What an access reads follows what Warp makes of it: the element under a component store or ``+=``
(``x[i].y = v``, ``x[i][k] += v``) is not read (no adjoint reads its value); an element passed to a ``wp.ref[T]``
parameter is read by reference (`BY_REFERENCE`: the launch's own writes are no stale read of it, a later
writer's are, and a snapshot gives it its input back) and counts as written where the callee changed its value
(`_ReadMarker._by_reference`), so a read after the call reads what the callee wrote.

Arguments read any other way (a row ``x[i]`` passed on or bound twice, passed to a builtin or to a helper whose
source cannot be read or that has several overloads, tiles, read in a ``while`` test, a struct a helper returns)
keep the whole-argument read of `access`, as do kernels with indexed or fabric array arguments (those arrays
would be written for real) and kernels whose twin cannot be built; stores the twin cannot index (a builtin, a
view bound inside a branch) are not marked, and the Tape's content comparison finds them. The twin is
forward-only and
built once per kernel, in its own module, or, inside `built_into`, in a module the caller builds (the fuzzer
puts its kernels' twins in the batch's module: one compile instead of one per twin).
"""

from __future__ import annotations

import ast
import collections
import contextlib
import copy
import dataclasses
import hashlib
import linecache
import logging
import math
import sys
import types
import weakref

import numpy as np
import warp

from .. import _compat
from ..access import (
    HELPER_DEPTH,
    METADATA_ATTRIBUTES,
    argument_access,
    called,
    has_custom_adjoint,
    helper_parameter,
    is_truth_test,
    namespace,
    resolve_helper,
    struct_field_access,
)
from ..builtin_facts import augmented_is_atomic, call_name, is_element_atomic
from ..options import effective_zero_store
from .data_flow import marks_depend_on_data

_log = logging.getLogger(__name__)
_PREFIX = "_wzs_"
_FLAGS = ("before", "after", "written")


#: what a ``written`` shadow holds for an element: an accumulation wrote it, or a store did
ACCUMULATED, STORED = 1, 2
#: what an ``after`` shadow holds for an element read after a write of the launch and written again after that read
#: (a read no memory holds after the launch), and for one an accumulation ``x[i] = x[i] + v`` read (its value
#: enters linearly: written again after it, it is no such read)
REREAD, LINEAR = 2, 3
#: what a ``before`` shadow holds for an element read before the launch wrote it only as an argument to a ``wp.ref[T]``
#: parameter: the callee's backward sees it as the launch leaves it (its own launch's writes are no stale read of
#: it, as `access.ArgumentAccess.adjoint_reads_result` says of an array passed only so); a later writer's are
BY_REFERENCE = 2

# What the twin marks of an argument, by how the kernel uses it: reads and writes, reads only, writes only.
READ_WRITE, READ, WRITE = "rw", "r", "w"


def _shadow(label: str, flag: str) -> str:
    """The shadow array of ``label`` (``"x"``, or ``"s.q"`` for an array a struct parameter holds)."""
    return f"{_PREFIX}{flag}_{label.replace('.', '__')}"


def _flags(kind: str) -> tuple:
    """The shadow arrays an argument gets: three, or one (``read`` / ``written``) for a read-only / write-only one."""
    return {READ_WRITE: _FLAGS, READ: ("read",), WRITE: ("written",)}[kind]


@dataclasses.dataclass
class ElementReads:
    """Per element of one argument (its shape): read before this launch wrote it, read after, written.
    ``reads_known`` is False where reads could not be marked (the argument counts as read in whole)."""

    before: np.ndarray
    after: np.ndarray
    written: np.ndarray
    reads_known: bool = True
    #: the written elements a store wrote (not only an accumulation); None: not told apart (all count as stored)
    stored: np.ndarray | None = None
    #: the elements read between two writes of the launch (after one, before another): the value read is in no
    #: memory after the launch, so no snapshot can serve it; None: not told
    reread: np.ndarray | None = None
    #: the elements ``before`` marks only because they were passed to a ``wp.ref[T]`` parameter (`BY_REFERENCE`);
    #: None: not told
    by_reference: np.ndarray | None = None
    _counts: dict = dataclasses.field(default_factory=dict, repr=False, compare=False)

    @property
    def read(self) -> np.ndarray:
        return self.before | self.after

    @property
    def before_by_value(self) -> np.ndarray:
        """The elements read before the launch wrote them other than only by reference (`by_reference`)."""
        return self.before if self.by_reference is None else self.before & ~self.by_reference

    def count(self, which: str) -> int:
        """How many elements are marked ``before`` / ``after`` / ``written`` / ``stored`` (0 where not told)?
        Counted once (marks a later launch with the same key reuses are counted once for all of them)."""
        found = self._counts.get(which)
        if found is None:
            marks = getattr(self, which)
            found = self._counts[which] = 0 if marks is None else int(np.count_nonzero(marks))
        return found

    def any(self, which: str) -> bool:
        """Is any element marked ``which``?"""
        return self.count(which) != 0

    def all(self, which: str) -> bool:
        """Is every element marked ``which``?"""
        marks = getattr(self, which)
        return marks is not None and self.count(which) == marks.size


def _index_of(subscript: ast.Subscript):
    index = subscript.slice
    if isinstance(index, ast.Index):  # Python 3.8
        index = index.value
    return index


def _parts(subscript: ast.Subscript) -> list:
    """The index expressions of one subscript: ``[i, j]`` of ``x[i, j]``, ``[Slice]`` of ``x[a:b]``."""
    index = _index_of(subscript)
    return list(index.elts) if isinstance(index, ast.Tuple) else [index]


@dataclasses.dataclass
class _Chain:
    """An element reached through slices (``x[a:b:c][i]``, a view ``w = x[i][0:1]`` then ``w[j]``): the same
    subscripts, one per entry of ``parts``, applied to a shadow reach the same element of it (Warp's slicing
    decides which, for both)."""

    parts: list


@dataclasses.dataclass
class _View:
    """A local bound at the top of the body to a view of a marked array (``row = x[w]``, ``window = row[0:1]``):
    the subscripts that made it (their index expressions copied into locals of the twin's own at the binding, so
    a later change of ``w`` cannot move a mark), the dimensions it has left, and whether the local is bound only
    there (then reads through it are followed; else only its stores are marked, and the binding reads ``x`` in
    whole)."""

    label: str
    parts: list
    dims: int
    sliced: bool
    once: bool


def _element(parts: list, sliced: bool):
    """The index of the element ``parts`` (a list of subscripts' index lists) reach: one index or a tuple where no
    subscript slices (``x[w, j]`` for ``row = x[w]; row[j]``), else a `_Chain`."""
    if sliced:
        return _Chain(parts)
    flat = [p for part in parts for p in part]
    return flat[0] if len(flat) == 1 else ast.Tuple(elts=flat, ctx=ast.Load())


def _at(name: str, index, ctx=None) -> ast.expr:
    """``name[index]`` (a fresh copy of the index, or of every subscript of a `_Chain`)."""
    ctx = ctx or ast.Load()
    if not isinstance(index, _Chain):
        return ast.Subscript(value=ast.Name(id=name, ctx=ast.Load()), slice=copy.deepcopy(index), ctx=ctx)
    node = ast.Name(id=name, ctx=ast.Load())
    for k, part in enumerate(index.parts):
        part = [copy.deepcopy(p) for p in part]
        node = ast.Subscript(
            value=node,
            slice=part[0] if len(part) == 1 else ast.Tuple(elts=part, ctx=ast.Load()),
            ctx=ctx if k == len(index.parts) - 1 else ast.Load(),
        )
    return node


def _set(name: str, index, value) -> ast.stmt:
    return ast.Assign(targets=[_at(name, index, ast.Store())], value=value, lineno=0)


def _read_mark(label: str, index, kind: str, linear: bool = False) -> ast.stmt:
    """Mark a read of ``x[index]``: ``before`` while the launch has not written the element, else ``after`` (`LINEAR`
    for the read of an accumulation ``x[i] = x[i] + v``, whose value no adjoint reads, unless a read already
    marked it)."""
    if kind == READ:
        return _set(_shadow(label, "read"), index, ast.Constant(value=1))
    written = _at(_shadow(label, "written"), index)
    after = [_set(_shadow(label, "after"), index, ast.Constant(value=1))]
    if linear:
        mark = _at(_shadow(label, "after"), index)
        after = [
            ast.If(
                test=ast.Compare(left=mark, ops=[ast.Eq()], comparators=[ast.Constant(value=0)]),
                body=[_set(_shadow(label, "after"), index, ast.Constant(value=LINEAR))],
                orelse=[],
            )
        ]
    return ast.If(
        test=ast.Compare(left=written, ops=[ast.Eq()], comparators=[ast.Constant(value=0)]),
        body=[_set(_shadow(label, "before"), index, ast.Constant(value=1))],
        orelse=after,
    )


def _accumulation_reads(statement) -> frozenset:
    """Ids of the reads ``x[i]`` that ``x[i] = x[i] + v`` (or ``v + x[i]``, ``x[i] - v``) accumulates into the
    element it stores: their value enters the stored value linearly, so no adjoint reads it."""
    if not (isinstance(statement, ast.Assign) and len(statement.targets) == 1):
        return frozenset()
    target, value = statement.targets[0], statement.value
    if not (isinstance(target, ast.Subscript) and isinstance(value, ast.BinOp)):
        return frozenset()
    operands = [value.left, value.right] if isinstance(value.op, ast.Add) else []
    operands += [value.left] if isinstance(value.op, ast.Sub) else []
    same = ast.dump(target.value), ast.dump(target.slice)
    return frozenset(
        id(o) for o in operands if isinstance(o, ast.Subscript) and (ast.dump(o.value), ast.dump(o.slice)) == same
    )


class _ReadMarker:
    """Rewrites a function body: marks reads before, and stores after, each statement; follows helpers."""

    def __init__(
        self,
        ndims: dict,
        namespace: dict,
        module_names: dict,
        depth: int,
        kinds: dict,
        logged: frozenset = frozenset(),
        custom_adjoint: bool = False,
    ):
        self.ndims = ndims  # label -> ndim of the arguments being instrumented
        self.kinds = kinds  # label -> READ_WRITE, READ (one shadow, every read simply a read) or WRITE
        # labels whose augmented stores (x[i] += v) the backward replays through the replay log of a flagged
        # kernel: the replay loads x[i] (then logs x[i] + v), so the store reads the element too
        self.logged = logged
        # inside a @wp.func whose @wp.func_grad Warp's backward runs instead of its adjoint: no adjoint reads what
        # its reads read, so none is a read between writes (they are marked as reads all the same)
        self.custom_adjoint = custom_adjoint
        self.namespace = namespace  # the function's globals: resolves helper calls
        self.module_names = module_names  # name -> object the twin module must hold (helper twins)
        self.depth = depth
        self.whole: set = set()  # labels read in a way this cannot mark
        self.in_helpers: set = set()  # ids of Name nodes passed on to an instrumented helper
        #: views bound at the top level of the body (``row = x[w]``, ``window = row[0:1]``): name -> `_View`, so
        #: ``row[j] = v`` marks ``x[w, j]`` written whatever the value stored (and ``row[j]``, read, marks a read
        #: where the local is bound only there)
        self.views: dict = {}
        #: locals bound once to an array a struct parameter holds (``values = holder.values``): name -> its label
        self.aliases: dict = {}
        #: ids of the nodes of those bindings (the value bound, the alias): a binding reads no element
        self._bindings: set = set()
        #: ids of element subscripts passed to a ``wp.ref[T]`` parameter, marked after the call (`_by_reference`)
        self._passed_by_reference: set = set()
        #: whether the marks follow values the launch computes (what a callee wrote through a reference): the Tape
        #: then runs the twin at every launch (`data_flow` does not see them)
        self.data_dependent = False
        self._kept: list = []  # the twin's locals holding an element's value before a call given it by reference
        self._top = True
        #: ``@wp.struct`` parameters holding marked arrays, and locals bound once to them: name -> {path: label}
        #: (``s.q[i]`` is an element of label ``"s.q"``); the twin runs on a copy of the struct whose arrays are
        #: scratch copies, so a use this does not follow reaches no real array
        self.structs: dict = {}
        for label in ndims:
            if "." in label:
                base, *path = label.split(".")
                self.structs.setdefault(base, {})[tuple(path)] = label
        self._bound_once: set | None = None  # locals the function binds exactly once (`prepare`)

    def prepare(self, function) -> None:
        """Note the locals ``function`` binds once: only those can stand for a struct (`structs`)."""
        counts: dict = {}
        for node in ast.walk(function):
            if isinstance(node, ast.Name) and isinstance(getattr(node, "ctx", None), ast.Store):
                counts[node.id] = counts.get(node.id, 0) + 1
        self._bound_once = {name for name, count in counts.items() if count == 1}

    def _label(self, node) -> str | None:
        """The marked array ``node`` names: an argument ``x``, or an array a struct holds (``s.q``, ``s.inner.q``)."""
        if isinstance(node, ast.Name):
            return node.id if node.id in self.ndims else self.aliases.get(node.id)
        path = []
        while isinstance(node, ast.Attribute):
            path.append(node.attr)
            node = node.value
        if isinstance(node, ast.Name) and node.id in self.structs and path:
            return self.structs[node.id].get(tuple(reversed(path)))
        return None

    def _held(self, node) -> dict:
        """``{path in the value: label}`` of the marked arrays a struct-valued expression holds: a struct parameter
        (``s``, ``s.inner``) or a struct made from them (``S(a, s.q)``); empty for anything else."""
        path = []
        base = node
        while isinstance(base, ast.Attribute):
            path.append(base.attr)
            base = base.value
        if isinstance(base, ast.Name) and base.id in self.structs:
            prefix = tuple(reversed(path))
            fields = self.structs[base.id]
            return {
                p[len(prefix) :]: label for p, label in fields.items() if p[: len(prefix)] == prefix and p != prefix
            }
        if isinstance(node, ast.Call):
            struct = called(node, self.namespace)
            if _compat.is_struct_type(struct) and not node.keywords:
                names = _compat.struct_field_names(struct)
                held = {}
                for name, arg in zip(names, node.args):
                    label = self._label(arg)
                    if label is not None:
                        held[(name,)] = label
                    held.update({(name, *p): label for p, label in self._held(arg).items()})
                return held
        return {}

    def _helper_call(self, call: ast.Call) -> list:
        """Instrument a call passing marked arrays (or structs holding them) to a user @wp.func; returns the labels
        it could not follow."""
        passed = []  # (argument node, {helper-relative path or None: label})
        for node in list(call.args) + [k.value for k in call.keywords]:
            label = self._label(node)
            if label is not None:
                passed.append((node, {None: label}))
                continue
            held = {p: label for p, label in self._held(node).items() if label in self.kinds}
            if held:
                passed.append((node, held))
        labels = [label for _, held in passed for label in held.values()]
        if not passed:
            return []
        helper = resolve_helper(call, self.namespace) if self.depth < HELPER_DEPTH else None
        if helper is not None and len(_compat.function_overloads(helper)) != 1:
            helper = None  # which overload a call picks is decided by types at build time
        parameters = [helper_parameter(helper, call, node) if helper is not None else None for node, _ in passed]
        if helper is None or None in parameters or len(set(labels)) != len(labels):
            return labels
        spec, order = [], []  # the helper's labels of what it is passed, and the caller's labels in that order
        for parameter, (_, held) in zip(parameters, passed):
            for path, label in held.items():
                inner = parameter if path is None else ".".join((parameter, *path))
                spec.append((inner, self.ndims[label], self.kinds[label], label in self.logged))
                order.append((inner, label))
        made = _helper_twin(
            helper, tuple(spec), self.depth, self.custom_adjoint or has_custom_adjoint(call, self.namespace)
        )
        if made is None:
            return labels
        name, function, whole, data_dependent = made
        self.data_dependent = self.data_dependent or data_dependent
        self.module_names[name] = function
        call.func = ast.Name(id=name, ctx=ast.Load())
        for _, label in order:
            for flag in _flags(self.kinds[label]):
                call.args.append(ast.Name(id=_shadow(label, flag), ctx=ast.Load()))
        for node, _ in passed:
            self.in_helpers.update(id(n) for n in ast.walk(node))
        return [label for inner, label in order if inner in whole]

    def _element_of(self, node, store: bool = False):
        """``(label, index, inner subscripts)`` where the subscript ``node`` reaches one element of a marked array:
        ``x[i, j]``, ``x[i][j]``, ``x[a:b:c][i]``, ``row[j]`` through a view (`views`; for a read, one bound only
        once), with the subscripts inside it that are part of the same access; else None (a row, a slice, a
        component of an element, a view this does not follow)."""
        parts, inner, base = [], [], node
        while isinstance(base, ast.Subscript):
            parts.append(_parts(base))
            inner.append(base)
            base = base.value
        parts.reverse()
        label = self._label(base)
        if label is not None:
            prefix, dims, sliced = [], self.ndims[label], False
        elif isinstance(base, ast.Name) and base.id in self.views and (store or self.views[base.id].once):
            view = self.views[base.id]
            label, prefix, dims, sliced = view.label, view.parts, view.dims, view.sliced
        else:
            return None
        for k, part in enumerate(parts):
            dims -= sum(not isinstance(p, ast.Slice) for p in part)
            sliced = sliced or any(isinstance(p, ast.Slice) for p in part)
            if dims < 0 or (dims == 0 and k < len(parts) - 1):
                return None  # a subscript of the element's value (a component): the element is an inner one
        if dims != 0:
            return None
        return label, _element(prefix + parts, sliced), inner[1:]

    def _read_whole(self, node) -> str | None:
        """The label a subscript ``node`` that reaches no element reads in whole: ``x[w]`` or ``x[a:b]`` of a marked
        array, or a part of a view bound once; None for anything else."""
        base = node.value
        label = self._label(base)
        if label is None and isinstance(base, ast.Name) and base.id in self.views and self.views[base.id].once:
            label = self.views[base.id].label
        return label

    def _stored_through(self, node, parents: dict, statement) -> bool:
        """Is ``node`` (an element ``x[i]``) the base of a component store, ``x[i].y = v``, ``x[i][k] = v`` or an
        atomic ``x[i].y += v``, that reads no value of it? Warp stores (from 1.18 as "slot" stores, before through
        ``address``/``indexref``) or accumulates into the component: its adjoint reads no value of the element,
        and no replay loads it (a flagged kernel's replay log does: a `logged` label keeps the read)."""
        child = node
        while True:
            parent = parents.get(child)
            if not (isinstance(parent, (ast.Attribute, ast.Subscript)) and parent.value is child):
                return False
            if isinstance(getattr(parent, "ctx", None), ast.Store):
                break
            child = parent
        if isinstance(statement, (ast.Assign, ast.AnnAssign)):
            return True
        return isinstance(statement, ast.AugAssign) and augmented_is_atomic(statement.op)

    def _reads(self, nodes, linear: frozenset = frozenset()) -> list:
        marks = []
        skip: set = set(self._passed_by_reference)  # row views an atomic writes through, parts of one access
        for root in nodes:
            parents = {child: node for node in ast.walk(root) for child in ast.iter_child_nodes(node)}
            for node in ast.walk(root):
                if id(node) in skip:
                    continue
                if isinstance(node, ast.Call):
                    atomic = self._element_atomic(node)
                    passed = self._helper_call(node)
                    if atomic is not None:  # its array is written (marked), not read
                        passed = [label for label in passed if label != atomic[0]] + [
                            atomic[0] for a in node.args[1:] if self._label(a) == atomic[0]
                        ]
                        if isinstance(node.args[0], ast.Subscript):
                            skip.add(id(node.args[0]))  # the row view it writes through
                    self.whole.update(passed)
                elif isinstance(node, ast.Subscript) and isinstance(getattr(node, "ctx", None), ast.Store):
                    found = self._element_of(node, store=True)  # a store (`_stores`), through slices or not
                    skip.update(id(n) for n in (found[2] if found is not None else ()))
                elif isinstance(node, ast.Subscript) and id(node) not in self._bindings:
                    found = self._element_of(node)
                    if found is None:
                        label = self._read_whole(node)
                        if label is not None and self.kinds[label] != WRITE:
                            self.whole.add(label)
                        continue
                    label, index, inner = found
                    skip.update(id(n) for n in inner)
                    if self.kinds[label] == WRITE:
                        continue
                    if label not in self.logged and self._stored_through(node, parents, root):
                        continue
                    unread = self.custom_adjoint or id(node) in linear  # no adjoint reads its value
                    marks.append(_read_mark(label, index, self.kinds[label], unread))
        return marks

    def _augmented_reads(self, statement) -> list:
        """A read of ``x[idx]`` before ``x[idx] *= v`` (Warp loads, multiplies, stores), and before ``x[idx] += v``
        of a logged ``x`` (see ``logged``); none before an atomic ``+=`` otherwise."""
        target = statement.target
        found = self._element_of(target) if isinstance(target, ast.Subscript) else None
        if found is None or self.kinds[found[0]] != READ_WRITE:
            return []
        label, index, _ = found
        if label not in self.logged and augmented_is_atomic(statement.op):
            return []
        linear = isinstance(statement.op, (ast.Add, ast.Sub))  # the replay's load of a logged x[i] += v
        return [_read_mark(label, index, READ_WRITE, linear)]

    def _written(self, label: str, index, stored: bool = True) -> list:
        """Mark ``x[index]`` written: 2 for a store, 1 for an accumulation (an atomic) unless a store marked it
        already; an overwrite is about stores only. An element read after an earlier write of the launch has its
        ``after`` mark raised to `REREAD`: that read saw a value no memory holds once the launch is over."""
        if self.kinds[label] == READ:
            return []
        reread = []
        if self.kinds[label] == READ_WRITE:
            after = _at(_shadow(label, "after"), index)
            reread = [
                ast.If(
                    test=ast.Compare(left=after, ops=[ast.Eq()], comparators=[ast.Constant(value=1)]),
                    body=[_set(_shadow(label, "after"), index, ast.Constant(value=REREAD))],
                    orelse=[],
                )
            ]
        if stored:
            return reread + [_set(_shadow(label, "written"), index, ast.Constant(value=STORED))]
        mark = _at(_shadow(label, "written"), index)
        return reread + [
            ast.If(
                test=ast.Compare(left=mark, ops=[ast.Eq()], comparators=[ast.Constant(value=0)]),
                body=[_set(_shadow(label, "written"), index, ast.Constant(value=ACCUMULATED))],
                orelse=[],
            )
        ]

    def _element_atomic(self, node):
        """``(label, index)`` of ``wp.atomic_*(x, i, v)`` (``x, i, j, v`` in 2-D...) on a marked ``x``, or through a
        row view of it (``wp.atomic_add(x[w], j, v)``: the element ``x[w, j]``), else None."""
        if not isinstance(node, ast.Call) or not node.args:
            return None
        if not is_element_atomic(call_name(node)):
            return None
        target, prefix = node.args[0], []
        if isinstance(target, ast.Subscript) and self._label(target.value) is not None:
            index = target.slice
            parts = list(index.elts) if isinstance(index, ast.Tuple) else [index]
            if any(isinstance(p, ast.Slice) for p in parts):
                return None
            target, prefix = target.value, parts
        label = self._label(target)
        if label is None:
            return None
        indices = prefix + list(node.args[1:-1])
        if len(indices) != self.ndims[label] or len(node.args) < 3:
            return None
        return label, indices[0] if len(indices) == 1 else ast.Tuple(elts=indices, ctx=ast.Load())

    def _atomic_reads(self, statement) -> list:
        """``wp.atomic_add(x, i, v)`` of a logged ``x``: a read of ``x[i]`` before the statement (the replay log
        loads the element to follow the update, as for ``x[i] += v``); of any other ``x``, no read."""
        found = (self._element_atomic(node) for node in ast.walk(statement))
        return [_read_mark(label, index, READ_WRITE) for label, index in filter(None, found) if label in self.logged]

    def _atomic_stores(self, statement) -> list:
        """``wp.atomic_add(x, i, v)``: marks ``x[i]`` written after the statement."""
        marks = []
        for node in ast.walk(statement):
            found = self._element_atomic(node)
            if found is not None:
                marks.extend(self._written(*found, stored=False))
        return marks

    def _stores(self, statement) -> list:
        targets = list(statement.targets) if isinstance(statement, ast.Assign) else [statement.target]
        # `x[i] += v` is an atomic accumulation (`builtin_facts.augmented_is_atomic`), not a store over x[i]
        stored = not (isinstance(statement, ast.AugAssign) and augmented_is_atomic(statement.op))
        marks = []
        while targets:
            node = targets.pop()
            if isinstance(node, (ast.Tuple, ast.List)):
                targets.extend(node.elts)
                continue
            # down the target's own chain (`x[i].y`, `x[a:b][i][1]`), not into its indices (which it reads)
            while isinstance(node, (ast.Attribute, ast.Subscript)):
                found = self._element_of(node, store=True) if isinstance(node, ast.Subscript) else None
                if found is not None:
                    marks.extend(self._written(found[0], found[1], stored))
                    break
                node = node.value
        return marks

    def _bind_view(self, statement) -> list:
        """Record a top-level ``row = x[w]`` (``window = row[0:1]``, a view of a view) and copy its indices into
        locals of the twin's own, so a later change of ``w`` cannot move a mark; and ``values = s.q`` (an array
        a struct holds, bound once) as another name of ``s.q``."""
        if isinstance(statement, ast.Assign) and len(statement.targets) == 1:
            target, value = statement.targets[0], statement.value
        elif isinstance(statement, ast.AnnAssign) and statement.value is not None:
            target, value = statement.target, statement.value
        else:
            return []
        if not isinstance(target, ast.Name):
            return []
        name = target.id
        self.views.pop(name, None)  # rebound: no longer the view it was
        once = self._bound_once is not None and name in self._bound_once and name not in self.ndims
        held = self._held(value)
        if held and once:
            self.structs[name] = held  # d = s: later uses of `d` are uses of what `s` holds
            return []
        if once and isinstance(value, ast.Attribute) and name not in self.structs:
            label = self._label(value)
            if label is not None:  # values = holder.values: `values[i]` is an element of "holder.values"
                self.aliases[name] = label
                self._bindings.update((id(value), id(target)))
                return []
        if not self._top or not isinstance(value, ast.Subscript):
            return []
        label = self._label(value.value)
        if label is not None:
            prefix, dims, sliced, once_before = [], self.ndims[label], False, True
        elif isinstance(value.value, ast.Name) and value.value.id in self.views:
            view = self.views[value.value.id]
            label, prefix, dims, sliced, once_before = view.label, view.parts, view.dims, view.sliced, view.once
        else:
            return []
        copies, statements = [], []

        def local(expr, suffix):
            if expr is None or isinstance(expr, ast.Constant):
                return copy.deepcopy(expr)
            statements.append(
                ast.Assign(
                    targets=[ast.Name(id=f"{_PREFIX}view_{name}_{suffix}", ctx=ast.Store())],
                    value=copy.deepcopy(expr),
                    lineno=0,
                )
            )
            return ast.Name(id=f"{_PREFIX}view_{name}_{suffix}", ctx=ast.Load())

        for k, part in enumerate(_parts(value)):
            if isinstance(part, ast.Slice):
                sliced = True
                copies.append(ast.Slice(*(local(getattr(part, f), f"{k}_{f}") for f in ("lower", "upper", "step"))))
            else:
                dims -= 1
                copies.append(local(part, k))
        if dims <= 0:
            return []  # an element's value, not a view
        self.views[name] = _View(label, [*prefix, copies], dims, sliced, once and once_before)
        if once and once_before:
            self._bindings.add(id(value))  # binding a view reads no element
        return statements

    def _by_reference(self, statement) -> tuple:
        """``(before, after)`` the statement for each element ``x[idx]`` (or a component of one, ``x[i].q.w``) it
        passes to a ``wp.ref[T]`` parameter of a comparable ``T`` (`_compat.compared_reference_parameters`): a read
        by reference (`_reference_mark`: a snapshot restores the value it had, as for any read before a write),
        the value before the call kept, and after it the element counts as written where the callee changed it.
        A read that follows the call then reads what the callee wrote, as in ``native(dst[i, 0], x[i]);
        out[i] = dst[i, 0]``. Whether the callee wrote is a fact of this launch's values: such a kernel's twin
        runs at every launch (`data_dependent`)."""
        before, after = [], []
        for call in [n for n in ast.walk(statement) if isinstance(n, ast.Call)]:
            positions = _compat.compared_reference_parameters(called(call, self.namespace))
            for position in sorted(p for p in positions if p < len(call.args)):
                arg = node = call.args[position]
                found = None
                while isinstance(node, (ast.Attribute, ast.Subscript)):
                    found = self._element_of(node) if isinstance(node, ast.Subscript) else None
                    if found is not None:
                        break
                    node = node.value
                if found is None or self.kinds[found[0]] != READ_WRITE or found[0] in self.logged:
                    continue  # not an element this follows: read as any other (before the call)
                label, index, inner = found
                self._passed_by_reference.update(id(n) for n in (node, *inner))
                kept = f"{_PREFIX}ref_{len(self._kept)}"
                self._kept.append(kept)
                before.append(self._reference_mark(label, index))
                before.append(ast.Assign(targets=[ast.Name(id=kept, ctx=ast.Store())], value=copy.deepcopy(arg)))

                def compare(left, op, right):
                    return ast.Compare(left=copy.deepcopy(left), ops=[op], comparators=[copy.deepcopy(right)])

                name = ast.Name(id=kept, ctx=ast.Load())
                # unchanged: equal, or NaN before and after (then any change counts as none: its later reads stay
                # reads before the launch wrote)
                unchanged = ast.BoolOp(
                    op=ast.Or(),
                    values=[
                        compare(arg, ast.Eq(), name),
                        ast.BoolOp(
                            op=ast.And(), values=[compare(arg, ast.NotEq(), arg), compare(name, ast.NotEq(), name)]
                        ),
                    ],
                )
                test = ast.UnaryOp(op=ast.Not(), operand=unchanged)
                after.append(ast.If(test=test, body=self._written(label, index), orelse=[]))
                self.data_dependent = True
        return before, after

    @staticmethod
    def _reference_mark(label: str, index) -> ast.stmt:
        """The read of an element passed to a ``wp.ref[T]`` parameter: `BY_REFERENCE` in ``before`` where the launch
        has not written it (and no other read marked it), else `LINEAR` in ``after`` (its backward sees the element as
        the launch leaves it: a later write of it, of another component perhaps, makes no read between writes)."""

        def unmarked(flag):
            return ast.Compare(left=_at(_shadow(label, flag), index), ops=[ast.Eq()], comparators=[ast.Constant(0)])

        return ast.If(
            test=unmarked("written"),
            body=[ast.If(unmarked("before"), [_set(_shadow(label, "before"), index, ast.Constant(BY_REFERENCE))], [])],
            orelse=[ast.If(unmarked("after"), [_set(_shadow(label, "after"), index, ast.Constant(LINEAR))], [])],
        )

    def body(self, statements) -> list:
        out = []
        top, self._top = self._top, False  # nested bodies (loops, branches) bind no row views
        for statement in statements:
            after = []
            if isinstance(statement, (ast.Assign, ast.AnnAssign)):
                self._top = top
                after_binding = self._bind_view(statement)
                self._top = False
            else:
                after_binding = []
            if isinstance(statement, ast.For):
                out.extend(self._reads([statement.iter]))
                statement.body = self.body(statement.body)
                statement.orelse = self.body(statement.orelse)
            elif isinstance(statement, ast.If):
                out.extend(self._reads([statement.test]))
                statement.body = self.body(statement.body)
                statement.orelse = self.body(statement.orelse)
            elif isinstance(statement, ast.While):
                for node in ast.walk(statement.test):
                    label = self._label(node)
                    if label is None and isinstance(node, ast.Name) and node.id in self.views:
                        label = self.views[node.id].label
                    self.whole.update([label] if label is not None else self._held(node).values())
                statement.body = self.body(statement.body)
            elif isinstance(statement, ast.With):
                out.extend(self._reads([item.context_expr for item in statement.items]))
                statement.body = self.body(statement.body)
            elif isinstance(statement, (ast.Assign, ast.AugAssign, ast.AnnAssign)):
                # `x[i].y = v` loads x[i] in the AST, a read only where its value is used (`_stored_through`)
                before_call, after_call = self._by_reference(statement)
                out.extend(self._reads([statement], _accumulation_reads(statement)))
                if isinstance(statement, ast.AugAssign):
                    out.extend(self._augmented_reads(statement))
                out.extend(self._atomic_reads(statement))
                out.extend(before_call)
                after = after_call + self._stores(statement) + self._atomic_stores(statement)
            else:
                before_call, after_call = self._by_reference(statement)
                out.extend(self._reads([statement]))
                out.extend(self._atomic_reads(statement))
                out.extend(before_call)
                after = after_call + self._atomic_stores(statement)
            out.append(statement)
            out.extend(after_binding)
            out.extend(after)
        self._top = top
        return out

    def used_otherwise(self, function) -> set:
        """Labels that appear other than as ``x[...]``, ``x.shape`` or an argument of an instrumented helper (a
        struct holding them used whole anywhere else: all it holds)."""
        parents = {child: node for node in ast.walk(function) for child in ast.iter_child_nodes(node)}
        out = set()
        for node in ast.walk(function):
            if id(node) in self.in_helpers or isinstance(parents.get(node), ast.Attribute):
                continue  # (an attribute chain is looked at from its outermost node)
            if id(node) in self._bindings:
                continue  # values = holder.values: its uses are looked at
            view = self.views.get(node.id) if isinstance(node, ast.Name) else None
            if view is not None and view.once and not isinstance(getattr(node, "ctx", None), ast.Store):
                parent = parents.get(node)
                if isinstance(parent, ast.Subscript) and parent.value is node:
                    continue  # row[j], row[0:1] (`_reads`)
                if isinstance(parent, ast.Attribute) and parent.attr in METADATA_ATTRIBUTES:
                    continue
                if not is_truth_test(node, parent):
                    out.add(view.label)  # passed on, compared, ...: not followed
                continue
            label = self._label(node)
            if label is None:
                held = self._held(node) if isinstance(node, (ast.Name, ast.Attribute)) else {}
                parent = parents.get(node)
                bound = isinstance(parent, (ast.Assign, ast.AnnAssign)) and parent.value is node
                if held and not is_truth_test(node, parent) and not (bound and self._binds_struct(parent)):
                    out.update(held.values())
                continue
            parent = parents.get(node)
            if isinstance(parent, ast.Subscript) and parent.value is node:
                continue
            if isinstance(parent, ast.Attribute) and parent.attr in METADATA_ATTRIBUTES:
                continue
            if is_truth_test(node, parent):
                continue
            if self._element_atomic(parent) is not None and parent.args[0] is node:
                continue  # wp.atomic_add(x, i, v): a write of x[i] (marked), not a read of x
            out.add(label)
        return out

    def _binds_struct(self, statement) -> bool:
        """Does ``statement`` bind a local that stands for a struct (`structs`; its own uses are looked at)?"""
        target = statement.targets[0] if isinstance(statement, ast.Assign) else statement.target
        return isinstance(target, ast.Name) and target.id in self.structs


def _load_module(source: str, namespace: dict, extra: dict, into=None):
    """Exec ``source`` in a copy of ``namespace``. Warp reads functions' source through ``inspect``, which finds
    it in ``linecache`` under a ``<...>`` name: no file is written, so none can be planted or go stale.
    ``into``: a Python module whose name the code takes (so Warp puts its kernels in that module's build)."""
    digest = hashlib.sha256(source.encode()).hexdigest()[:16]
    name = into.__name__ if into is not None else f"_wzs_twin_{digest}"
    filename = f"<warp_zerostore read twin {digest}>"
    lines = (source + "\n").splitlines(keepends=True)
    linecache.cache[filename] = (len(source) + 1, None, lines, filename)  # mtime None: checkcache keeps it
    module = types.ModuleType(name)
    module.__dict__.update(namespace)
    module.__dict__.update(extra)
    module.__dict__.update({"__name__": name, "__file__": filename, "_wzs_warp": warp})
    if into is None:  # under another module's name, that module keeps its sys.modules entry
        sys.modules[name] = module
    exec(compile(source, filename, "exec"), module.__dict__)  # noqa: S102 - the user's own source, rewritten
    return module


def _struct_fields(kernel) -> list:
    """``[(field label, struct position, path, field type)]`` of the arrays the kernel's struct parameters hold
    (``"s.q"``, nested structs followed); once per kernel."""
    memo = _compat.memo(kernel)
    cached = memo.get("read_twin.fields")
    if cached is None:
        cached = memo["read_twin.fields"] = _find_struct_fields(kernel)
    return cached


def _find_struct_fields(kernel) -> list:
    parameters = _compat.kernel_parameters(kernel)
    types_by_label = {}
    for label, t in parameters:
        if _compat.is_struct_type(t):
            for path, field_type in _compat.struct_array_fields(t):
                types_by_label[".".join((label, *path))] = field_type
    return [
        (label, position, path, types_by_label[label])
        for label, (position, path, _) in struct_field_access(kernel).items()
    ]


def _add_shadow_parameters(function: ast.FunctionDef, ndims: dict, kinds: dict) -> None:
    for label, ndim in ndims.items():
        for flag in _flags(kinds[label]):
            annotation = ast.parse(f"_wzs_warp.array(dtype=_wzs_warp.int32, ndim={ndim})", mode="eval").body
            function.args.args.append(ast.arg(arg=_shadow(label, flag), annotation=annotation))


def _typed_parameters(function: ast.FunctionDef, types: dict, names: dict) -> None:
    """Annotate each parameter with the type Warp built the function with (warp.fem's integrands are made with
    concrete types their source does not spell), held in the twin module under a name of its own."""
    for arg in function.args.args:
        t = types.get(arg.arg)
        if t is not None:
            name = f"{_PREFIX}type_{arg.arg}"
            names[name] = t
            arg.annotation = ast.Name(id=name, ctx=ast.Load())


def _helper_twin(helper, parameters: tuple, depth: int, custom_adjoint: bool = False):
    """``(unique name, @wp.func twin, labels whose reads it cannot mark, whether its marks follow values)`` of a helper (one overload) marking its
    ``parameters`` (``(label, ndim, kind, logged)``: label ``"a"`` for an array parameter, ``"f.p"`` for an array
    its struct parameter ``f`` holds), or None; ``custom_adjoint``: it (or a helper calling it) has a
    ``@wp.func_grad``."""
    twins = _compat.memo(helper).setdefault("read_twin.helper_twins", {})
    key = (parameters, custom_adjoint)
    if key in twins:
        return twins[key]
    made = None
    try:
        overload = _compat.function_overloads(helper)[0]  # the one overload (`_helper_call`)
        tree = ast.Module(body=[copy.deepcopy(_compat.function_tree(overload).body[0])], type_ignores=[])
        function = tree.body[0]
        function.decorator_list = []
        function.returns = None  # Warp infers it; a spelled one may name what the twin module does not hold
        ndims = {p: ndim for p, ndim, _, _ in parameters}
        kinds = {p: kind for p, _, kind, _ in parameters}
        logged = frozenset(p for p, _, _, is_logged in parameters if is_logged)
        names: dict = {}
        _typed_parameters(function, _compat.function_argument_types(overload), names)
        scope = namespace(_compat.function_python(overload))
        marker = _ReadMarker(ndims, scope, names, depth + 1, kinds, logged, custom_adjoint)
        marker.prepare(function)
        function.body = marker.body(function.body)
        whole = marker.whole | marker.used_otherwise(function)  # parameters the caller counts as read in whole
        _add_shadow_parameters(function, ndims, kinds)
        digest = hashlib.sha256(ast.unparse(tree).encode()).hexdigest()[:12]
        function.name = f"{function.name}_wzs_{digest}"
        source = ast.unparse(ast.fix_missing_locations(tree))
        module = _load_module(source, scope, names)
        made = (function.name, warp.func(getattr(module, function.name)), whole, marker.data_dependent)
    except Exception as error:  # noqa: BLE001 - the caller then counts the arrays as read in whole
        _log.info(
            "helper %r: no read twin (%s: %s); its array parameters count as read in whole",
            getattr(helper, "key", helper),
            type(error).__name__,
            error,
        )
        made = None
    twins[key] = made
    return made


def _build(kernel, aliased: bool = False):
    """``aliased``: every array argument read or written gets all three shadows (a launch passing one array under
    several labels shares them between those labels, so a read through one sees a store through another)."""
    access = dict(argument_access(kernel))
    params = _compat.kernel_parameters(kernel)
    if any(not _compat.is_array_type(t) and hasattr(t, "vars") and not _compat.is_struct_type(t) for _, t in params):
        return None  # a struct-like argument whose arrays the twin cannot swap for copies
    if any(_compat.is_array_type(t) and not _compat.is_plain_array(t) for _, t in params):
        return None  # indexed or fabric arrays are not copied: they would be written for real
    fields = _struct_fields(kernel)
    if any(not _compat.is_plain_array(field_type) for *_, field_type in fields):
        return None
    for label, _, _, _ in fields:
        access[label] = struct_field_access(kernel)[label][2]
    kinds = {}
    for label in [label for label, _ in params] + [label for label, *_ in fields]:
        use = access.get(label)
        if use is not None and (use.reads or use.writes):
            kinds[label] = READ_WRITE if aliased or (use.reads and use.writes) else READ if use.reads else WRITE
    ndims = {label: _compat.array_type_ndim(t) for label, t in params if label in kinds}
    ndims.update((label, _compat.array_type_ndim(t)) for label, _, _, t in fields if label in kinds)
    if not ndims:
        return None
    tree = ast.Module(body=[copy.deepcopy(_compat.kernel_tree(kernel).body[0])], type_ignores=[])
    function = tree.body[0]
    function.decorator_list = []
    names: dict = {}
    func = _compat.kernel_function(kernel)
    scope = namespace(func)
    arrays = {label for label, t in params if _compat.is_array_type(t)}
    # reads through a struct's arrays are not followed by `data_flow`: such a kernel's marks count as data dependent
    _compat.memo(kernel)["read_twin.fixed"] = not fields and not marks_depend_on_data(function, arrays, scope)
    # A flagged kernel's backward replays arrays it reads back through its replay log (codegen/replay.py)
    flagged = effective_zero_store(kernel) is True
    logged = frozenset(
        label for label, kind in kinds.items() if flagged and kind == READ_WRITE and access[label].reads_after_store
    )
    marker = _ReadMarker(ndims, scope, names, 0, kinds, logged)
    marker.prepare(function)
    function.body = marker.body(function.body)
    if marker.data_dependent:  # what a callee wrote through a reference decides marks: the twin runs every launch
        _compat.memo(kernel)["read_twin.fixed"] = False
    whole = (marker.whole | marker.used_otherwise(function)) & {label for label in kinds if kinds[label] != WRITE}
    # Every argument gets its shadows (a whole-argument read one is simply not looked at): helpers may take them.
    _add_shadow_parameters(function, ndims, kinds)
    function.name = f"{function.name}_reads{'_aliased' if aliased else ''}"
    source = ast.unparse(ast.fix_missing_locations(tree))
    into = _INTO[-1] if _INTO else None
    module = _load_module(source, scope, names, into)
    twin_kernel = warp.kernel(getattr(module, function.name), enable_backward=False, module=None if into else "unique")
    # a twin marking reads by reference (`BY_REFERENCE`): only its marks are looked at for them
    _compat.memo(twin_kernel)["read_twin.by_reference"] = marker.data_dependent
    return twin_kernel, kinds, whole


_INTO: list = []


@contextlib.contextmanager
def built_into(module):
    """Twins made inside (by `twin`) go into the Warp module of ``module`` (a Python module whose kernels have
    unique names), built with it, instead of one module each: a caller that builds many kernels at once (the
    fuzzer) makes their twins before it loads ``module``, and pays one compile.

    Example::

        with read_twin.built_into(batch_module):
            read_twin.twin(batch_module.my_kernel)
        wp.load_module(batch_module, device="cpu")
    """
    _INTO.append(module)
    try:
        yield
    finally:
        _INTO.pop()


def twin(kernel, aliased: bool = False):
    """``(forward-only twin kernel, {label given shadows: kind}, {labels whose reads it cannot mark})`` or None
    (see the module docstring); ``aliased``: the variant for a launch that passes one array under several labels."""
    twins = _compat.memo(kernel).setdefault("read_twin.twins", {})
    cached = twins.get(aliased)
    mode = effective_zero_store(kernel)  # the twin follows the kernel's mode (its replay log): rebuilt if it changes
    if cached is not None and cached[1] == mode:
        return cached[0]
    try:
        built = _build(kernel, aliased) if aliased else _build(kernel)  # tests patch _build(kernel)
        if built is None:
            _log.debug(
                "kernel %r: no read twin (@wp.struct, indexed or fabric array arguments, or no array argument "
                "it reads or writes); arrays count as read in whole",
                _compat.kernel_key(kernel),
            )
    except Exception as error:  # noqa: BLE001 - a twin is an optimisation: whole-argument reads stay correct
        _log.info(
            "kernel %r: no read twin (%s: %s); its arrays count as read in whole",
            _compat.kernel_key(kernel),
            type(error).__name__,
            error,
        )
        built = None
    twins[aliased] = (built, mode)
    return built


def forget(obj) -> None:
    """Drop what this module made for a kernel (its twins and their runners) or a ``@wp.func`` (its twins): the
    next launch builds them again."""
    memo = _compat.memo(obj)
    for name in [name for name in memo if name.startswith("read_twin.")]:
        del memo[name]


def _pooled(key: tuple, shape: tuple, dtype, device):
    """A scratch array (and its host view on the CPU) reused from launch to launch: the twin's copies of the
    launch's arrays and its shadows; allocating them per launch was most of check mode's cost. The pool keeps the
    most recently used up to `POOL_BYTES` (a runner keeps the ones it was made with while it lives)."""
    global _pool_bytes
    entry = _POOL.get(key)
    if entry is not None:
        _POOL.move_to_end(key)
        return entry
    with _compat.no_active_tape():
        scratch = warp.empty(shape, dtype=dtype, device=device)
    entry = _POOL[key] = (scratch, _compat.host_view(scratch) if scratch.device.is_cpu else None)
    _pool_bytes += _nbytes(scratch)
    while _pool_bytes > POOL_BYTES and len(_POOL) > 1:  # the least recently used go first
        _, (evicted, _) = _POOL.popitem(last=False)
        _pool_bytes -= _nbytes(evicted)
    return entry


def _nbytes(arr) -> int:
    return arr.size * _compat.dtype_size_bytes(arr.dtype)


_POOL: collections.OrderedDict = collections.OrderedDict()  # key -> (scratch array, its host view on the CPU)
_pool_bytes = 0
#: bytes of scratch arrays the pool keeps (least recently used dropped first)
POOL_BYTES = 64 << 20


def _zero(entry) -> None:
    if entry[1] is not None:
        entry[1].fill(0)
    else:
        entry[0].zero_()


def _copy(entry, arr) -> None:
    """The twin's copy of ``arr``: ``entry``'s scratch array gets ``arr``'s values (``arr`` is only read), on the
    device (a recorded array's content never crosses to the host; on the CPU, NumPy on its memory in place)."""
    if entry[1] is not None and arr.device.is_cpu:
        np.copyto(entry[1], _compat.cpu_view(arr))
    else:
        _compat.copy_on_device(entry[0], arr)


def _same(a, b) -> bool:
    if a is b:
        return True
    if isinstance(a, warp.array) or isinstance(b, warp.array) or type(a) is not type(b):
        return False
    try:
        return bool(a == b)
    except Exception:  # noqa: BLE001 - values without a plain equality: set again
        return False


class _Runner:
    """The twin's launch for one kernel, launch shape and pattern of arguments: a ``warp.Launch`` packed once over
    pooled scratch copies (one per distinct array, the arrays ``@wp.struct`` arguments hold included) and shadows;
    a run copies the arrays in, zeroes the shadows, re-packs only the non-array parameters that changed (a struct
    argument as a copy of it holding the scratch arrays, so no real array is reachable), and launches. Arrays over
    ``POOLED_BYTES`` get a temporary copy per run instead (held only while the twin runs)."""

    def __init__(self, kernel, variant, kinds: dict, values: list, launch: dict, device):
        params, self.scalars, self.structs = [], [], []
        # Scratch arrays are shared by all twins: the n-th array of a shape and dtype in a launch gets the n-th
        # scratch array of that shape and dtype (twins run one at a time), so memory does not grow per kernel.
        ordinals: dict = {}

        def scratch(kind: str, shape: tuple, dtype, on):
            key = (kind, shape, dtype, id(on))
            ordinals[key] = ordinals.get(key, -1) + 1
            return _pooled((*key, ordinals[key]), shape, dtype, on)

        #: per distinct array: (a position of it in ``values`` or None, the path into that struct or None, entry)
        self.copies: list = []
        scratch_of: dict = {}  # id of a real array -> its pooled entry (None: a temporary per run)

        def copy_of(arr, position, path):
            if id(arr) not in scratch_of:
                entry = None
                if arr.size * _compat.dtype_size_bytes(arr.dtype) <= POOLED_BYTES:
                    entry = scratch("copy", arr.shape, arr.dtype, arr.device)
                scratch_of[id(arr)] = entry
                self.copies.append((position, path, entry))
            return scratch_of[id(arr)]

        #: positions of array arguments that get a temporary copy per run: every one of them (an array passed under
        #: several parameters, ``inputs=[x], outputs=[x]``, is set at each, so no real array is reachable)
        self.per_run: list = []
        for position, v in enumerate(values):
            if isinstance(v, warp.array):
                entry = copy_of(v, position, None)
                if entry is None:
                    self.per_run.append(position)
                params.append(entry[0] if entry is not None else v)  # a large array: set per run
            elif _compat.is_struct_instance(v):
                for path, arr in _compat.struct_array_paths(v):
                    copy_of(arr, position, path)
                self.structs.append(position)
                params.append(v)  # set per run, as a copy holding the scratch arrays
            else:
                self.scalars.append(position)
                params.append(v)
        self.by_label = _labelled_arrays(kernel, kinds, values)
        self.shadows = {}
        shared: dict = {}  # id of an array passed under several labels -> the shadows they share
        for label, kind in kinds.items():
            arr = self.by_label.get(label)
            shape = arr.shape if isinstance(arr, warp.array) else (0,)
            mine = shared.get(id(arr)) if isinstance(arr, warp.array) and kind == READ_WRITE else None
            if mine is None:
                mine = [scratch("shadow", shape, warp.int32, device) for _ in _flags(kind)]
                if isinstance(arr, warp.array) and kind == READ_WRITE:
                    shared[id(arr)] = mine
            self.shadows[label] = mine
            params.extend(entry[0] for entry in self.shadows[label])
        self.last = list(params)
        dim = launch["dim"]
        self.size = math.prod(dim if isinstance(dim, (tuple, list)) else (dim,))
        with _compat.no_active_tape(), _compat.autograd_array_access_unverified():
            self.command = (
                _compat.prepared_launch(
                    variant, dim, params, device, launch.get("max_blocks", 0), launch.get("block_dim", 256)
                )
                if self.size
                else None
            )

    def run(self, values: list) -> None:
        with _compat.autograd_array_access_unverified():  # the user's arrays are read here by copies, not launches
            self._run(values)

    def _run(self, values: list) -> None:
        for entries in self.shadows.values():
            for entry in entries:
                _zero(entry)
        if not self.size:
            return  # no thread: nothing read or written
        scratch = {}  # id of a real array -> the array the twin sees instead
        for position, path, entry in self.copies:
            arr = values[position] if path is None else _compat.struct_field(values[position], path)
            if entry is not None:
                _copy(entry, arr)
                scratch[id(arr)] = entry[0]
                continue
            with _compat.no_active_tape():
                scratch[id(arr)] = warp.clone(arr, requires_grad=False)  # held by `scratch` while the twin runs
        for position in self.per_run:
            self.command.set_param_at_index(position, scratch[id(values[position])])
            self.last[position] = None
        for position in self.structs:
            self.command.set_param_at_index(position, _compat.struct_copy(values[position], scratch))
        for position in self.scalars:
            value = values[position]
            if not _same(value, self.last[position]):
                self.command.set_param_at_index(position, value)
                self.last[position] = value
        self.command.launch()

    def marks(self, label: str) -> list:
        return [(e[1] if e[1] is not None else e[0].numpy()).astype(bool) for e in self.shadows[label]]

    def stored(self, label: str):
        """The elements a store (not an accumulation) wrote: the ``written`` shadow's last entry holds 2 there."""
        entry = self.shadows[label][-1]
        return (entry[1] if entry[1] is not None else entry[0].numpy()) == STORED

    def by_reference(self, label: str):
        """The elements read before a write only by reference: the ``before`` shadow holds `BY_REFERENCE` there."""
        entry = self.shadows[label][0]
        return (entry[1] if entry[1] is not None else entry[0].numpy()) == BY_REFERENCE

    def reread(self, label: str):
        """The elements read between two writes: the ``after`` shadow (the second of three) holds `REREAD` there."""
        entry = self.shadows[label][1]
        return (entry[1] if entry[1] is not None else entry[0].numpy()) == REREAD


def _labelled_arrays(kernel, kinds: dict, values: list) -> dict:
    """``{label: array}`` of the labels the twin gives shadows: an argument's, or an array a struct argument holds
    (``"s.q"``)."""
    out = {}
    positions = _label_positions(kernel)
    for label in kinds:
        position, path = positions.get(label, (None, None))
        if position is None or position >= len(values):
            continue
        value = values[position]
        out[label] = value if path is None else _compat.struct_field(value, path)
    return out


def _label_positions(kernel) -> dict:
    """``{label: (argument position, path into the struct or None)}`` of the kernel's arrays; once per kernel."""
    memo = _compat.memo(kernel)
    found = memo.get("read_twin.positions")
    if found is None:
        found = {label: (position, None) for position, label in enumerate(_compat.kernel_argument_labels(kernel))}
        found.update((label, (position, path)) for label, position, path, _ in _struct_fields(kernel))
        memo["read_twin.positions"] = found
    return found


#: arrays up to this size get a pooled scratch copy (kept between launches); larger ones a copy per launch
POOLED_BYTES = 16 << 20
#: runners kept per kernel (one per launch shape and pattern of arguments) before starting over
RUNNERS_PER_KERNEL = 64


def _runner(kernel, variant, kinds: dict, values: list, launch: dict) -> _Runner:
    device = launch.get("device")
    if device is None:
        device = next((v.device for v in values if isinstance(v, warp.array)), None)
    device = warp.get_device(device)
    dim = launch["dim"]
    key = (
        id(variant),
        tuple(dim) if isinstance(dim, (tuple, list)) else (dim,),
        id(device),
        launch.get("max_blocks", 0),
        launch.get("block_dim", 256),
        _pattern(values),
    )
    runners = _compat.memo(kernel).setdefault("read_twin.runners", {})  # they go with the kernel
    cached = runners.get(key)
    if cached is None or cached[0] is not variant:
        if len(runners) >= RUNNERS_PER_KERNEL:  # launch shapes that keep changing: start over rather than grow
            runners.clear()
        cached = runners[key] = (variant, _Runner(kernel, variant, kinds, values, launch, device))
    return cached[1]


def _pattern(values: list) -> tuple:
    """What a runner's scratch arrays depend on: each array's shape, dtype and first place among the launch's
    arrays (arguments passed one array stay one array), the arrays a struct argument holds included."""
    first: dict = {}
    out = []
    for v in values:
        if isinstance(v, warp.array):
            out.append((first.setdefault(id(v), len(first)), v.shape, v.dtype))
        elif _compat.is_struct_instance(v):
            out.append(
                tuple(
                    (path, first.setdefault(id(a), len(first)), a.shape, a.dtype)
                    for path, a in _compat.struct_array_paths(v)
                )
            )
        else:
            out.append(None)
    return tuple(out)


def element_reads(kernel, launch: dict) -> dict:
    """``{label: ElementReads}`` for the arguments the twin marks (``launch``: ``launch()``'s arguments by name),
    arrays a struct argument holds under their path (``"s.q"``).

    The twin runs on scratch copies of every array argument (one per distinct array: arguments passed the same
    array stay one array; a struct argument is passed as a copy holding scratch copies of its arrays), so the real
    arrays are never touched, whatever the source analysis says.
    """
    values = list(launch.get("inputs") or []) + list(launch.get("outputs") or [])
    arrays = []
    for v in values:
        if isinstance(v, warp.array):
            arrays.append(id(v))
        elif _compat.is_struct_instance(v):
            arrays.extend(id(a) for _, a in _compat.struct_array_paths(v))
    aliased = len(set(arrays)) < len(arrays)
    made = twin(kernel, aliased=aliased)
    if made is None:
        return {}
    variant, kinds, whole = made
    key = _memo_key(kernel, variant, values, launch)
    if key is not None:
        cached = _MEMO.get(key)
        if cached is not None and cached[0]() is variant:
            return cached[1]
    try:
        runner = _runner(kernel, variant, kinds, values, launch)
        runner.run(values)
    except Exception as error:  # noqa: BLE001 - the twin does not build or launch here: whole-argument reads
        _log.info(
            "kernel %r: its read twin did not run (%s: %s); its arrays count as read in whole from now on",
            _compat.kernel_key(kernel),
            type(error).__name__,
            error,
        )
        _compat.memo(kernel).setdefault("read_twin.twins", {})[aliased] = (None, effective_zero_store(kernel))
        return {}
    out = {}
    for label, kind in kinds.items():
        if not isinstance(runner.by_label.get(label), warp.array):
            continue
        marks = runner.marks(label)
        stored = runner.stored(label) if kind != READ else None
        reread = by_reference = None
        if kind == READ_WRITE:
            before, after, written = marks
            reread = runner.reread(label)
            by_reference = runner.by_reference(label) if _compat.memo(variant).get("read_twin.by_reference") else None
        elif kind == READ:
            before, after, written = marks[0], _none(marks[0].shape), _none(marks[0].shape)
        else:
            written = marks[0]
            before = after = _none(written.shape)
        out[label] = ElementReads(
            before,
            after,
            written,
            reads_known=label not in whole,
            stored=stored,
            reread=reread,
            by_reference=by_reference,
        )
    if key is not None:
        _remember(key, variant, out)
    return out


# -- marks that follow from the launch alone (`data_flow`): reused instead of running the twin again

_MEMO: dict = {}  # launch key -> (weak reference to the twin, {label: ElementReads}, their bytes), read-only
#: bytes of marks remembered before starting over (a scalar argument that changes at every launch, such as a
#: time, never hits: its entries must not pile up)
MEMO_BYTES = 64 << 20
_memo_bytes = 0
_IMMUTABLE = (int, float, bool, str, bytes, type(None), np.generic)


def _memo_key(kernel, variant, values: list, launch: dict) -> tuple | None:
    """What a launch's marks can depend on when its kernel's reads do not follow its data: the launch shape,
    its arrays' shapes, dtypes and aliasing, and its other arguments' values (immutable ones only: a value
    the caller can change in place could hit a stale entry); None: run the twin."""
    dim = launch.get("dim")
    if not _compat.memo(kernel).get("read_twin.fixed") or dim is None:  # its marks depend on its launch only
        return None
    first: dict = {}
    parts = []
    for position, v in enumerate(values):
        if isinstance(v, warp.array):
            parts.append((first.setdefault(id(v), position), v.shape, v.dtype))
        elif isinstance(v, _IMMUTABLE):
            parts.append((type(v), v))
        else:
            return None
    return (id(variant), tuple(dim) if isinstance(dim, (tuple, list)) else (dim,), tuple(parts))


def _remember(key: tuple, variant, out: dict) -> None:
    global _memo_bytes
    size = 0
    for reads in out.values():
        for mask in (reads.before, reads.after, reads.written):
            mask.flags.writeable = False  # shared by every launch that hits this entry
            size += mask.nbytes
    if _memo_bytes + size > MEMO_BYTES:
        _MEMO.clear()
        _memo_bytes = 0
    if size <= MEMO_BYTES:
        # the marks never keep a twin (nor its kernel) alive, and go when it goes (a kernel defined anew each time)
        _MEMO[key] = (weakref.ref(variant, lambda _, key=key: _forget(key)), out, size)
        _memo_bytes += size


def _forget(key: tuple) -> None:
    global _memo_bytes
    entry = _MEMO.pop(key, None)
    if entry is not None:
        _memo_bytes -= entry[2]


def _none(shape: tuple) -> np.ndarray:
    """A read-only all-False mask of ``shape``, shared."""
    mask = _NONE.get(shape)
    if mask is None:
        if len(_NONE) > 256:  # shapes that keep changing: start over rather than grow
            _NONE.clear()
        mask = _NONE[shape] = np.zeros(shape, dtype=bool)
        mask.flags.writeable = False
    return mask


_NONE: dict = {}


def marked_reads(kernel) -> list:
    """The labels whose reads the kernel's twin marks element by element (the others count as read in whole)."""
    made = twin(kernel)
    if made is None:
        return []
    _, kinds, whole = made
    return [label for label, kind in kinds.items() if kind != WRITE and label not in whole]
