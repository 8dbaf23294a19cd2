"""Which array arguments a kernel reads, stores into, or accumulates into: read from its Python source.

Its users: the Tape (`tape/tape.py`, `tape/read_twin.py`, `tape/data_flow.py`: which arguments a launch reads and
writes), the checkpoint executor (`checkpoint/launches.py`: which launches of a step read what another writes;
`checkpoint/zeroed.py`: a gradient the step's backward provably left zero is not zeroed again, through
`fully_stored`), and the PyTorch and JAX bridges (`written`: an input a kernel writes; `fully_stored`: no zero fill
for an output every thread stores). The Tape needs, per launch, the arrays whose values the backward pass re-reads
(reads) and
the kind of each write (a plain store, whose adjoint may need zeroing, or an atomic accumulation, whose
adjoint is exact). Warp's own ``is_read``/``is_write`` marks exist only when the module was built with
``verify_autograd_array_access``; this reads the kernel's AST instead. An array passed to a user ``@wp.func``
is followed into the helper's source (the helper's use of its parameter counts). A local bound to a part of an
array argument (a row ``row = a[w]`` of a 2-D array, whose ``row[j] = v`` stores into ``a``) is an alias: its uses
count as uses of the argument. The arrays a ``@wp.struct`` parameter holds are arguments of their own, labelled by
their path (``"s.q"``); a struct passed whole to a helper is followed into it as an array is, and so are a local
bound to a struct, a struct made from one (``S(a, s.q)``) and what a helper returns. A helper is read as Warp
compiles it (its parsed source after code transformers, as warp.fem's integrands), every overload of it; names
resolve in the function's globals and closure (warp.fem makes kernels inside functions). An array passed to
anything else, bound to another name or used as a view in any other way, counts as read and stored
(conservative: never read-only where the source cannot tell: ``surely_writes`` stays False for such a use, and
the snapshot Tape then asks what the launch changed, `tape.tape`).

Granularity is the whole argument: "reads ``x``" means some element of ``x`` (not which ones).
"""

from __future__ import annotations

import ast
import dataclasses
import logging

from . import _compat
from .builtin_facts import (
    ACCUMULATING,
    ADJOINT_READS_RESULT,
    READING,
    RESULT_IS_READ,
    STORING,
    augmented_is_atomic,
    call_name,
)
from .value_use import ValueUses

_log = logging.getLogger(__name__)

# Array attributes that carry no element values (shared with the read twin, which must agree).
METADATA_ATTRIBUTES = frozenset({"shape", "ndim", "strides", "size", "dtype", "ptr"})
# How deep helpers calling helpers are followed before an argument counts as read and stored.
HELPER_DEPTH = 8
BY_REFERENCE = (
    "passed by reference"  # an element passed to a wp.ref[T] parameter (`ArgumentAccess.adjoint_reads_result`)
)


@dataclasses.dataclass
class ArgumentAccess:
    """How a kernel uses one array argument."""

    reads: bool = False
    stores: bool = False
    accumulates: bool = False
    #: a thread may read an element after storing into the argument or accumulating into it (``a[i] += v``,
    #: ``wp.atomic_add``; a later statement, a later loop iteration, a helper): only then can what a launch read
    #: differ from the array before the launch
    reads_after_store: bool = False
    #: a ``@wp.func`` helper the kernel passes it to stores into it: stock Warp's backward re-runs that store into
    #: memory (a flagged kernel's replay sends it to its log)
    helper_stores: bool = False
    #: the source writes it for certain somewhere (a store, ``+=``, an atomic, a tile store; in a helper too),
    #: as opposed to a use the analysis cannot follow, which only may write it (``stores`` set by caution)
    surely_writes: bool = False
    #: the backward pass may read the value of an element it reads (a use other than a linear one, `value_use`):
    #: where False, a change of the array before ``backward()`` leaves the gradient as it is
    value_read: bool = False
    #: where ``value_read``: the roots (parameters, struct paths ``"s.q"``) whose adjoints read the values loaded
    #: (`value_use.ValueUses.readers`); None: any gradient may (an index, a branch, a helper, a use not followed).
    #: A stale read whose readers' arrays all have no gradient at the launch changes no gradient
    value_readers: frozenset | None = frozenset()
    #: every use is one builtin whose adjoint reads the element as the launch left it (``wp.atomic_min`` alone, or
    #: ``wp.atomic_max`` alone: which value won), or passes elements by reference (``wp.ref[T]``: written in place):
    #: the launch's own writes are what its backward must read
    adjoint_reads_result: bool = False

    @property
    def writes(self) -> bool:
        return self.stores or self.accumulates


def called(call: ast.Call, namespace: dict):
    """The object a call names (``f(...)`` or ``module.f(...)``) in ``namespace``, or None."""
    func = call.func
    path = []
    while isinstance(func, ast.Attribute):
        path.append(func.attr)
        func = func.value
    if not isinstance(func, ast.Name) or func.id not in namespace:
        return None
    obj = namespace[func.id]
    for attr in reversed(path):
        obj = getattr(obj, attr, None)
    return obj


def resolve_helper(call: ast.Call, namespace: dict):
    """The user ``@wp.func`` a call names (``f(...)``, ``module.f(...)``, ``obj.attr.f(...)``), or None."""
    return _compat.user_function(called(call, namespace))


def _builtin_test(namespace: dict):
    """A test whether a call names one of Warp's builtins (`value_use`: a pure function of its arguments)."""
    return lambda call: _compat.is_builtin_function(called(call, namespace))


def has_custom_adjoint(call: ast.Call, namespace: dict) -> bool:
    """Whether the user ``@wp.func`` a call names has a ``@wp.func_grad`` (its own adjoint is never run)."""
    return _compat.has_custom_adjoint(called(call, namespace))


def helper_parameter(helper, call: ast.Call, node) -> str | None:
    """The helper's parameter that receives ``node`` (a positional or keyword argument of ``call``), or None."""
    import inspect  # noqa: PLC0415

    names = list(inspect.signature(_compat.function_python(helper)).parameters)
    for position, arg in enumerate(call.args):
        if arg is node:
            return names[position] if position < len(names) else None
    for keyword in call.keywords:
        if keyword.value is node:
            return keyword.arg
    return None


#: the names a kernel's or helper's source resolves (globals and closure)
namespace = _compat.function_namespace


def _helper_access(helper, parameter: str, depth: int, ndim: int | None = None) -> ArgumentAccess | None:
    """What a helper does with its array parameter ``parameter`` (None: its source cannot be read)."""
    found = _helper_use(helper, parameter, depth, ((None, ndim),))
    return None if found is None else found.access[None]


@dataclasses.dataclass
class _HelperUse:
    """What a helper does with one parameter: an array (path None) or the arrays a ``@wp.struct`` holds (their
    paths below it), and which of them its return value holds (``{path in the value: {parameter paths}}``; path
    ``()``: the value is that array)."""

    access: dict
    returns: dict


def _helper_use(helper, parameter: str, depth: int, fields: tuple) -> _HelperUse | None:
    """`_HelperUse` of the helper's ``parameter`` (``fields``: ``((path, ndim), ...)``), over every overload a call
    may pick; None where a source cannot be read."""
    uses = _compat.memo(helper).setdefault("access.helper_use", {})
    key = (parameter, fields)
    if key in uses:
        return uses[key]
    found = None
    seen: set = set()
    for overload in _compat.function_overloads(helper):  # the call may pick any: what any of them does
        try:
            tree = _compat.function_tree(overload)
        except (OSError, TypeError, SyntaxError) as error:
            _log.info(
                "helper %r: source not readable (%s); the arrays passed to it count as read and written in whole",
                getattr(helper, "key", helper),
                error,
            )
            found = None
            break
        if ast.dump(tree) in seen:
            continue  # overloads of one source (other argument types): the same uses
        seen.add(ast.dump(tree))
        mine = _visit_helper(overload, tree, parameter, depth, fields)
        if found is not None:
            mine.access = {path: _either(found.access[path], mine.access[path]) for path in found.access}
            for path, held in found.returns.items():
                mine.returns[path] = mine.returns.get(path, frozenset()) | held
        found = mine
    uses[key] = found
    return found


def _visit_helper(helper, tree, parameter: str, depth: int, fields: tuple) -> _HelperUse:
    names = namespace(_compat.function_python(helper))
    if len(fields) == 1 and fields[0][0] is None:
        labels = {None: parameter}
        visitor = _Visitor([parameter], names, depth + 1, {parameter: fields[0][1]})
    else:
        labels = {path: ".".join((parameter, *path)) for path, _ in fields}
        ndims = {labels[path]: ndim for path, ndim in fields}
        visitor = _Visitor(list(labels.values()), names, depth + 1, ndims, {parameter: {p: labels[p] for p in labels}})
    visitor.values = ValueUses(tree.body[0], _builtin_test(names))
    visitor.visit(tree.body[0])
    path_of = {label: path for path, label in labels.items()}
    return _HelperUse(
        {path: visitor.access[label] for path, label in labels.items()},
        {path: frozenset(path_of[label] for label in held) for path, held in visitor.returned.items()},
    )


def _either(one: ArgumentAccess, other: ArgumentAccess) -> ArgumentAccess:
    """What a call that runs ``one`` or ``other`` does: any use of either; a sure write only where both write."""
    either = ArgumentAccess(
        **{f.name: getattr(one, f.name) or getattr(other, f.name) for f in dataclasses.fields(ArgumentAccess)}
    )
    either.surely_writes = one.surely_writes and other.surely_writes
    either.adjoint_reads_result = one.adjoint_reads_result and other.adjoint_reads_result
    readers = None if one.value_readers is None or other.value_readers is None else one.value_readers
    either.value_readers = readers if readers is None else readers | other.value_readers
    return either


def is_truth_test(node, parent) -> bool:
    """``if x:``, ``while x:``, ``not x``, ``x and ...``: a test whether an optional array argument is None."""
    if isinstance(parent, (ast.If, ast.While, ast.IfExp)) and parent.test is node:
        return True
    return isinstance(parent, ast.BoolOp) or (isinstance(parent, ast.UnaryOp) and isinstance(parent.op, ast.Not))


class _Visitor(ast.NodeVisitor):
    """Visits a function in evaluation order (an assignment's value before its targets), so that a read seen
    after a store of the same argument is a read that may follow the store at run time."""

    def __init__(self, names, namespace: dict | None = None, depth: int = 0, ndims: dict | None = None, structs=None):
        self.access = {name: ArgumentAccess() for name in names}
        #: ``@wp.struct`` parameter -> {path of an array field: its label ``"s.q"``}; the labels are in ``names``
        self.structs = dict(structs or {})
        self.ndims = dict(ndims or {})  # name -> ndim (None: unknown, as for a helper's parameter)
        self.aliases: dict = {}  # local name -> [(argument label, ndim of the view or None)]
        self.parents: dict = {}
        self.namespace = namespace or {}
        self.depth = depth
        self.loops: list = []  # per enclosing loop: {name: set of "read" / "store" seen in its body}
        self.uses: dict = {}  # label -> the builtins it is passed to first (`ADJOINT_READS_RESULT`), or "other"
        #: the function's value uses (`value_use`), set by whoever visits it; None: every value read is needed
        self.values: ValueUses | None = None
        #: what a helper's return value holds: ``{path in the value: {labels}}`` (path ``()``: the value is an array)
        self.returned: dict = {}

    def generic_visit(self, node):
        for child in ast.iter_child_nodes(node):
            self.parents[child] = node
        super().generic_visit(node)

    def _visit_in_order(self, node, fields):
        for child in ast.iter_child_nodes(node):
            self.parents[child] = node
        for field in fields:
            value = getattr(node, field, None)
            for child in value if isinstance(value, list) else [value]:
                if isinstance(child, ast.AST):
                    self.visit(child)

    def visit_Assign(self, node):  # noqa: N802 - ast API
        self._visit_in_order(node, ("value", "targets"))

    def visit_AnnAssign(self, node):  # noqa: N802 - ast API
        self._visit_in_order(node, ("value", "target", "annotation"))

    def visit_AugAssign(self, node):  # noqa: N802 - ast API
        self._visit_in_order(node, ("value", "target"))

    def _visit_loop(self, node):
        self.loops.append({})
        self.generic_visit(node)
        seen = self.loops.pop()
        for name, kinds in seen.items():
            if kinds >= {"read", "store"}:  # a later iteration reads what an earlier one stored
                self.access[name].reads_after_store = True
            if self.loops:
                self.loops[-1].setdefault(name, set()).update(kinds)

    visit_For = visit_While = _visit_loop  # noqa: N815

    def _note(self, name: str, access: ArgumentAccess, *, read: bool = False, store: bool = False) -> None:
        """``store``: any write, an accumulation included (a later read sees the new value all the same)."""
        if read and access.writes:
            access.reads_after_store = True
        if self.loops:
            kinds = self.loops[-1].setdefault(name, set())
            if read:
                kinds.add("read")
            if store:
                kinds.add("store")

    def _targets(self, node) -> list:
        """``[(argument label, ndim)]`` a name stands for: the argument itself, or the arguments it is an alias of."""
        if node.id in self.access:
            return [(node.id, self.ndims.get(node.id))]
        return self.aliases.get(node.id, [])

    def visit_Attribute(self, node):  # noqa: N802 - ast API
        """``s.q`` of a struct parameter ``s``: a use of its array field ``q`` (labelled ``"s.q"``), as a name is."""
        found = self._struct_path(node)
        if found is None:
            self.generic_visit(node)
            return
        struct, path = found
        fields = self.structs[struct]
        label = fields.get(path)
        if label is not None:
            self._use(node, self.parents.get(node), label, self.ndims.get(label))
            return
        held = {field[len(path) :]: label for field, label in fields.items() if field[: len(path)] == path}
        if held:  # a nested struct holding arrays, used whole (passed to a helper, ...)
            self._struct_use(node, held)
        # otherwise a scalar field, or metadata (``s.q.shape``): no element value

    def _struct_path(self, node) -> tuple | None:
        """``(struct parameter, attribute path)`` of ``s.a.b``, or None where it does not start at one."""
        path = []
        while isinstance(node, ast.Attribute):
            path.append(node.attr)
            node = node.value
        if isinstance(node, ast.Name) and node.id in self.structs:
            return node.id, tuple(reversed(path))
        return None

    def _struct_use(self, node, fields: dict) -> None:
        """A struct holding arrays (``fields``: {path below it: label}) used whole: passed to a ``@wp.func`` helper,
        its arrays are followed into the helper's source as far as arrays are; any other use (bound to a local,
        returned, passed to a builtin or a helper whose source cannot be read) may do anything with them."""
        parent = self.parents.get(node)
        local = self._bound_to(node)
        if local is not None:  # d = domain: later uses of `d` are uses of its arrays
            held = self.structs.setdefault(local, {})
            for path, label in fields.items():
                held.setdefault(path, label)
            return
        if isinstance(parent, ast.Call) and (node in parent.args or node in [k.value for k in parent.keywords]):
            field = self._constructor_field(parent, node)
            if field is not None:  # S(a, s.b): a new struct holding them, followed as the struct it is
                self._struct_use(parent, {(field, *path): label for path, label in fields.items()})
                return
            if self._follow(parent, node, fields):
                return
        elif isinstance(parent, ast.Return):  # the caller follows what the value holds (`_HelperUse.returns`)
            for path, label in fields.items():
                self.returned.setdefault(path, set()).add(label)
            return
        elif is_truth_test(node, parent):
            return
        for label in fields.values():
            _anything(self.access[label])

    def _follow(self, call: ast.Call, node, fields: dict) -> bool:
        """``node`` passed to a user ``@wp.func``: what the helper does with it (``fields``: ``{None: label}`` for an
        array, else ``{path below the struct: label}``), and what its return value holds, followed where it goes;
        False where the helper or its source is not known (or helpers nest deeper than `HELPER_DEPTH`)."""
        helper = resolve_helper(call, self.namespace) if self.depth < HELPER_DEPTH else None
        parameter = helper_parameter(helper, call, node) if helper is not None else None
        if parameter is None:
            return False
        shape = tuple(sorted(((path, self.ndims.get(label)) for path, label in fields.items()), key=repr))
        use = _helper_use(helper, parameter, self.depth, shape)
        if use is None:
            return False
        for path, label in fields.items():
            self._merge(label, use.access[path])
        held = {}
        for path, from_paths in use.returns.items():
            labels = {fields[p] for p in from_paths}
            if len(labels) == 1:
                held[path] = labels.pop()
            else:  # one place in the value, several arrays (returned in different branches): not followed
                for label in labels:
                    _anything(self.access[label])
        if () in held:  # the value is the array itself: its uses are uses of the array
            self._use(call, self.parents.get(call), held[()], self.ndims.get(held[()]))
        elif held:
            self._struct_use(call, held)
        return True

    def _constructor_field(self, call: ast.Call, node) -> str | None:
        """The field ``node`` fills where ``call`` makes a ``@wp.struct`` (``S(a, b)``, ``S(q=a)``), else None."""
        struct = called(call, self.namespace)
        if not _compat.is_struct_type(struct):
            return None
        fields = list(_compat.struct_field_names(struct))
        for position, arg in enumerate(call.args):
            if arg is node:
                return fields[position] if position < len(fields) else None
        return next((k.arg for k in call.keywords if k.value is node), None)

    def visit_If(self, node):  # noqa: N802 - ast API
        """``if True:`` / ``if False:`` (warp.fem writes them): Warp builds only the branch taken."""
        if not (isinstance(node.test, ast.Constant) and isinstance(node.test.value, (bool, int))):
            self.generic_visit(node)
            return
        for child in ast.iter_child_nodes(node):
            self.parents[child] = node
        for statement in node.body if node.test.value else node.orelse:
            self.visit(statement)

    def _merge(self, label: str, inner: ArgumentAccess) -> None:
        """What a ``@wp.func`` helper does with the array it was passed, as a use of ``label``."""
        access = self.access[label]
        self._note(label, access, read=inner.reads, store=inner.writes)
        access.reads |= inner.reads
        access.stores |= inner.stores
        access.accumulates |= inner.accumulates
        access.reads_after_store |= inner.reads_after_store
        access.helper_stores |= inner.writes
        access.surely_writes |= inner.surely_writes
        if inner.value_read:  # the helper's readers are its own names: any gradient, for the caller
            _value_read(access, None)

    def visit_Name(self, node):  # noqa: N802 - ast API
        if node.id in self.structs:  # the struct itself, used whole
            if not isinstance(
                getattr(node, "ctx", None), ast.Store
            ):  # (bound anew: what it is bound to is analysed where it is bound)
                self._struct_use(node, self.structs[node.id])
            return
        targets = self._targets(node)
        if not targets:
            return
        if isinstance(getattr(node, "ctx", None), ast.Store) and node.id not in self.access:
            return  # an alias rebound: what it is bound to is analysed where it is bound
        parent = self.parents.get(node)
        for label, ndim in targets:
            self._use(node, parent, label, ndim)

    def _use(self, node, parent, label: str, ndim) -> None:
        access = self.access[label]
        if not (isinstance(parent, ast.Subscript) and parent.value is node):  # an element's use: `_element`
            by = call_name(parent) if isinstance(parent, ast.Call) and parent.args and parent.args[0] is node else ""
            self.uses.setdefault(label, set()).add(by if by in ADJOINT_READS_RESULT else "other")
        if isinstance(parent, ast.Subscript) and parent.value is node:
            self._element(parent, label, ndim)
        elif isinstance(parent, ast.Attribute) and parent.attr in METADATA_ATTRIBUTES:
            pass
        elif is_truth_test(node, parent):
            pass  # `if x:` / `not x` asks whether an optional array was passed, not its values
        elif isinstance(parent, ast.Call) and self._constructor_field(parent, node) is not None:
            self._struct_use(parent, {(self._constructor_field(parent, node),): label})  # S(a): a struct holding it
        elif isinstance(parent, ast.Call) and (node in parent.args or node in [k.value for k in parent.keywords]):
            if self._follow(parent, node, {None: label}):  # a @wp.func: what it does with its parameter
                pass
            elif not self._builtin_effect(label, access, parent):
                _anything(access)  # another builtin, or a helper whose source cannot be read: anything
        elif isinstance(parent, ast.Return):  # the caller follows the value (`_HelperUse.returns`)
            self.returned.setdefault((), set()).add(label)
        elif isinstance(parent, ast.Expr):
            pass
        else:  # bound to a local, compared, ...: conservative
            _anything(access)

    def _builtin_effect(self, label: str, access: ArgumentAccess, call) -> bool:
        """The effect `builtin_facts` states for an array passed to ``call`` (a read, a store or an accumulation);
        False where the table states none (the caller counts anything)."""
        name = call_name(call)
        if name in ACCUMULATING:
            self._note(label, access, store=True)
            access.accumulates = access.surely_writes = True
        elif name in READING:
            self._note(label, access, read=True)
            access.reads = True
            # a tile load's result is the values it read: its uses decide whether a backward reads them
            if name not in RESULT_IS_READ or self.values is None:
                _value_read(access, None)
            elif self.values.is_needed(call):
                _value_read(access, self.values.readers(call))
        elif name in STORING:
            self._note(label, access, store=True)
            access.stores = access.surely_writes = True
        else:
            return False
        return True

    def _bound_to(self, node) -> str | None:
        """The local name ``node`` is bound to (``name = node``), or None."""
        parent = self.parents.get(node)
        if isinstance(parent, ast.Assign) and parent.value is node and len(parent.targets) == 1:
            target = parent.targets[0]
        elif isinstance(parent, ast.AnnAssign) and parent.value is node:
            target = parent.target
        else:
            return None
        return target.id if isinstance(target, ast.Name) else None

    def _element(self, subscript, label: str, ndim) -> None:
        """``a[...]``, ``a[i][j]``, ``a[i].x``: an element read or stored, or a view (a row, a slice) of ``a``."""
        access = self.access[label]
        node, indices = subscript, 0  # indices: how many the chain applies so far; -1 once a slice is seen
        while True:
            if isinstance(node, ast.Subscript):
                index = node.slice
                parts = index.elts if isinstance(index, ast.Tuple) else [index]
                if any(isinstance(p, ast.Slice) for p in parts):
                    indices = -1
                elif indices >= 0:
                    indices += len(parts)
            parent = self.parents.get(node)
            if not (isinstance(parent, (ast.Subscript, ast.Attribute)) and parent.value is node):
                break
            if isinstance(parent, ast.Attribute) and (ndim is None or indices < 0 or indices < ndim):
                if parent.attr in METADATA_ATTRIBUTES:
                    return  # a[w].shape: no element value
                break
            node = parent
        outer = node
        view = indices < 0 or ndim is None or indices < ndim
        if view and isinstance(outer, ast.Subscript) and not isinstance(getattr(outer, "ctx", None), ast.Store):
            local = self._bound_to(outer)
            if local is not None:  # row = a[w]: later uses of `row` are uses of `a`
                remaining = None if ndim is None or indices < 0 else ndim - indices
                aliases = self.aliases.setdefault(local, [])
                if (label, remaining) not in aliases:
                    aliases.append((label, remaining))
                if ndim is None:  # a helper's parameter of unknown shape: it may be an element's value, a read
                    self._note(label, access, read=True)
                    _value_read(access, None)
                return
            call = self.parents.get(outer)
            if isinstance(call, ast.Call) and call.args and call.args[0] is outer:
                if self._builtin_effect(label, access, call):  # wp.tile_store(a[i], t): the row, as the array
                    self.uses.setdefault(label, set()).add("other")
                    return
            if ndim is not None:  # a view passed on, compared, ...: it may be stored into
                _anything(access)
                return
        call = self.parents.get(outer)
        if isinstance(call, ast.Call) and outer in call.args:
            if call.args.index(outer) in _compat.reference_parameters(called(call, self.namespace)):
                # passed by reference (wp.ref[T]): the callee may read and write the element in place, and its
                # adjoint sees it as the launch left it
                _anything(access)
                self.uses.setdefault(label, set()).add(BY_REFERENCE)
                return
        self.uses.setdefault(label, set()).add("other")
        if isinstance(getattr(outer, "ctx", None), ast.Store):
            augmented = self.parents.get(outer)
            if isinstance(augmented, ast.AugAssign) and not augmented_is_atomic(augmented.op):
                # `a[i] *= v` is a load, then a store: a read of the element (which the store then overwrites)
                self._note(label, access, read=True)
                _value_read(access, None)
                self._note(label, access, store=True)
                access.stores = access.surely_writes = True
            elif isinstance(augmented, ast.AugAssign):
                self._note(label, access, store=True)
                access.accumulates = access.surely_writes = True  # Warp turns `a[i] += v` into an atomic add
            else:
                self._note(label, access, store=True)
                access.stores = access.surely_writes = True
        else:
            self._note(label, access, read=True)
            access.reads = True
            if self.values is None or self.values.is_needed(outer):
                _value_read(access, None if self.values is None else self.values.readers(outer))


def _value_read(access: ArgumentAccess, readers: frozenset | None) -> None:
    """A read whose value the backward reads, by the adjoints of ``readers`` (None: any)."""
    access.reads = access.value_read = True
    access.value_readers = None if readers is None or access.value_readers is None else access.value_readers | readers


def _anything(access: ArgumentAccess) -> None:
    """The source cannot tell what happens to the array: read and stored, possibly in that order."""
    access.stores = access.reads_after_store = True
    _value_read(access, None)


def argument_access(kernel) -> dict:
    """``{argument label: ArgumentAccess}`` for the kernel's array arguments.

    Example:
        ```python
        import warp_zerostore as wp
        from warp_zerostore.access import argument_access

        @wp.kernel
        def step(x: wp.array(dtype=float), v: wp.array(dtype=float), loss: wp.array(dtype=float)):
            i = wp.tid()
            x[i] = x[i] + v[i]
            wp.atomic_add(loss, 0, x[i])

        access = argument_access(step)
        assert access["x"].reads and access["x"].stores and not access["v"].writes
        assert access["loss"].accumulates and not access["loss"].reads
        ```
    """
    return _analysis(kernel)[0]


def struct_field_access(kernel) -> dict:
    """``{field label: (parameter position, path, ArgumentAccess)}`` for the array fields of the kernel's
    ``@wp.struct`` parameters (nested structs followed): ``"s.q"`` for ``s.q``, path ``("q",)``. A struct passed on
    whole (to a helper, bound to a local) makes each of its arrays read and stored, as an array passed on is.

    Example:
        ```python
        import warp_zerostore as wp
        from warp_zerostore.access import struct_field_access

        @wp.struct
        class State:
            q: wp.array(dtype=float)
            k: float

        @wp.kernel
        def damp(s: State):
            i = wp.tid()
            s.q[i] = s.q[i] * s.k

        position, path, access = struct_field_access(damp)["s.q"]
        assert (position, path) == (0, ("q",)) and access.reads and access.stores
        ```
    """
    return _analysis(kernel)[1]


def _analysis(kernel) -> tuple:
    """`argument_access` and `struct_field_access` of a kernel, from one walk of its source."""
    memo = _compat.memo(kernel)
    cached = memo.get("access")
    if cached is not None:
        return cached
    parameters = _compat.kernel_parameters(kernel)
    arrays = [(label, t) for label, t in parameters if _compat.is_array_type(t)]
    ndims = {label: getattr(t, "ndim", None) for label, t in arrays}
    structs, fields = {}, {}
    for position, (label, t) in enumerate(parameters):
        if not _compat.is_struct_type(t):
            continue
        for path, field_type in _compat.struct_array_fields(t):
            name = ".".join((label, *path))
            structs.setdefault(label, {})[path] = name
            fields[name] = (position, path)
            ndims[name] = getattr(field_type, "ndim", None)
    names = [label for label, _ in arrays] + list(fields)
    names_in_scope = namespace(_compat.kernel_function(kernel))
    visitor = _Visitor(names, names_in_scope, 0, ndims, structs)
    tree = _compat.kernel_tree(kernel)
    visitor.values = ValueUses(tree, _builtin_test(names_in_scope))
    visitor.visit(tree)
    for label, kinds in visitor.uses.items():
        visitor.access[label].adjoint_reads_result = len(kinds) == 1 and kinds <= ADJOINT_READS_RESULT | {BY_REFERENCE}
    found = (
        {label: visitor.access[label] for label, _ in arrays},
        {name: (position, path, visitor.access[name]) for name, (position, path) in fields.items()},
    )
    memo["access"] = found
    return found


def _is_tid_call(node) -> bool:
    if not isinstance(node, ast.Call) or node.args or node.keywords:
        return False
    func = node.func
    return (isinstance(func, ast.Attribute) and func.attr == "tid") or (isinstance(func, ast.Name) and func.id == "tid")


def _read_somewhere(function, names: set) -> set:
    """The names of ``names`` the function uses other than as ``a[...] = v`` targets or for metadata (``a.shape``):
    a read anywhere (before or after a store, of any element) could see the zero fill, so it must stay."""
    parents = {child: node for node in ast.walk(function) for child in ast.iter_child_nodes(node)}
    used = set()
    for node in ast.walk(function):
        if not (isinstance(node, ast.Name) and node.id in names):
            continue
        parent = parents.get(node)
        if isinstance(parent, ast.Attribute) and parent.attr in METADATA_ATTRIBUTES:
            continue
        if (
            isinstance(parent, ast.Subscript)
            and parent.value is node
            and isinstance(getattr(parent, "ctx", None), ast.Store)
            and isinstance(parents.get(parent), ast.Assign)
        ):
            continue
        used.add(node.id)
    return used


def fully_stored(kernel) -> dict:
    """``{argument label: ndim}`` for the array arguments the kernel never reads and every thread provably stores
    one whole element of, at its own thread index: a top-level ``a[i] = ...`` (``a[i, j] = ...``) with ``i``
    (``i, j``) bound once by ``wp.tid()``, no ``return`` before it, and ``a`` used nowhere else but as a store
    target or for its metadata. A launch whose dimensions equal such an array's shape writes every element of
    it without reading any (``ndim``: the number of thread indices the store uses).

    Example:
        ```python
        import warp_zerostore as wp
        from warp_zerostore.access import fully_stored

        @wp.kernel
        def scale(x: wp.array(dtype=float), y: wp.array(dtype=float), z: wp.array(dtype=float)):
            i = wp.tid()
            y[i] = 2.0 * x[i]
            if x[i] > 0.0:
                z[i] = x[i]

        assert fully_stored(scale) == {"y": 1}
        ```
    """
    memo = _compat.memo(kernel)
    cached = memo.get("access.fully_stored")
    if cached is not None:
        return cached
    function = _compat.kernel_tree(kernel).body[0]
    names = {label for label, t in _compat.kernel_parameters(kernel) if _compat.is_array_type(t)}
    names -= _read_somewhere(function, names)
    rebound = {}  # name -> how many statements bind it
    for statement in ast.walk(function):
        if isinstance(statement, ast.Name) and isinstance(getattr(statement, "ctx", None), ast.Store):
            rebound[statement.id] = rebound.get(statement.id, 0) + 1
    found: dict = {}
    tid: tuple | None = None
    for statement in function.body:
        if any(isinstance(sub, ast.Return) for sub in ast.walk(statement)):
            break  # a thread may leave before any later store
        if isinstance(statement, ast.Assign) and len(statement.targets) == 1 and _is_tid_call(statement.value):
            target = statement.targets[0]
            elements = target.elts if isinstance(target, ast.Tuple) else [target]
            if all(isinstance(e, ast.Name) for e in elements) and tid is None:
                tid = tuple(e.id for e in elements)
            continue
        if tid is None or not (isinstance(statement, ast.Assign) and len(statement.targets) == 1):
            continue
        target = statement.targets[0]
        if not (isinstance(target, ast.Subscript) and isinstance(target.value, ast.Name)):
            continue
        index = target.slice.elts if isinstance(target.slice, ast.Tuple) else [target.slice]
        name = target.value.id
        if (
            name in names
            and [getattr(e, "id", None) for e in index] == list(tid)
            and all(rebound.get(t) == 1 for t in tid)
            and rebound.get(name) is None
        ):
            found.setdefault(name, len(tid))
    memo["access.fully_stored"] = found
    return found


def written(kernel, parameters) -> list:
    """``[(parameter, surely)]`` for each of ``parameters`` (names) the kernel may write: ``surely`` where its
    source writes it for certain, False where a use the analysis cannot follow only may. The bridges refuse or
    warn with it when a kernel would write what their callers pass as an input.

    Example:
        ```python
        import warp_zerostore as wp
        from warp_zerostore.access import written

        @wp.kernel
        def bump(x: wp.array(dtype=float)):
            x[wp.tid()] += 1.0

        assert written(bump, ["x"]) == [("x", True)]
        ```
    """
    access = argument_access(kernel)
    return [(name, access[name].surely_writes) for name in parameters if name in access and access[name].writes]
