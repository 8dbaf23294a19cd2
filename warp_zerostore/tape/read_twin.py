"""Element-precise read sets for the Tape's checks: an instrumented twin of a kernel marks what it reads.

For a kernel whose array argument ``x`` is read only through full element indexing (``x[i]``, ``x[i, j]``),
the twin takes an extra ``int32`` array per such argument and, before each statement that reads ``x[idx]``,
stores 1 at ``idx`` in it. Checking Tapes run the twin on device copies of the launch's arrays (so the real
arrays change once), then the real launch. Arguments read any other way (a row ``x[i]`` of a 2-D array, passed
to a function, tiles, read in a ``while`` test) keep the whole-argument read of :mod:`.kernel_access`, as do
kernels with ``@wp.struct``, indexed or fabric array arguments (those arrays would be written for real) and kernels whose twin
cannot be built. The twin is forward-only and built once per kernel, in its own module.
"""

from __future__ import annotations

import ast
import hashlib
import os
import sys
import tempfile
import types

import warp

from .. import _compat
from .access import argument_access

_PREFIX = "_wzs_read_"
_CACHE: dict = {}


class _ReadMarker(ast.NodeTransformer):
    """Inserts ``_wzs_read_x[idx] = 1`` before each statement that reads ``x[idx]``."""

    def __init__(self, ndims: dict):
        self.ndims = ndims  # label -> ndim of arguments that can be instrumented
        self.whole: set = set()  # labels read in a way this cannot mark

    def _reads(self, nodes) -> list:
        marks = []
        for root in nodes:
            for node in ast.walk(root):
                if (
                    isinstance(node, ast.Subscript)
                    and isinstance(node.value, ast.Name)
                    and node.value.id in self.ndims
                    and isinstance(node.ctx, ast.Load)
                ):
                    index = node.slice
                    if isinstance(index, ast.Index):  # Python 3.8
                        index = index.value
                    count = len(index.elts) if isinstance(index, ast.Tuple) else 1
                    if count != self.ndims[node.value.id] or isinstance(index, ast.Slice):
                        self.whole.add(node.value.id)
                        continue
                    target = ast.Subscript(
                        value=ast.Name(id=_PREFIX + node.value.id, ctx=ast.Load()), slice=index, ctx=ast.Store()
                    )
                    marks.append(ast.Assign(targets=[target], value=ast.Constant(value=1), lineno=0))
        return marks

    def _body(self, statements) -> list:
        out = []
        for statement in statements:
            if isinstance(statement, (ast.For,)):
                out.extend(self._reads([statement.iter]))
                statement.body = self._body(statement.body)
                statement.orelse = self._body(statement.orelse)
            elif isinstance(statement, ast.If):
                out.extend(self._reads([statement.test]))
                statement.body = self._body(statement.body)
                statement.orelse = self._body(statement.orelse)
            elif isinstance(statement, ast.While):
                for node in ast.walk(statement.test):
                    if isinstance(node, ast.Name) and node.id in self.ndims:
                        self.whole.add(node.id)
                statement.body = self._body(statement.body)
            elif isinstance(statement, ast.With):
                out.extend(self._reads([item.context_expr for item in statement.items]))
                statement.body = self._body(statement.body)
            else:
                out.extend(self._reads([statement]))
            out.append(statement)
        return out


def _used_otherwise(function, names) -> set:
    """Arguments that appear other than as ``x[...]`` or ``x.shape`` (passed to a function, bound to a name)."""
    parents = {child: node for node in ast.walk(function) for child in ast.iter_child_nodes(node)}
    out = set()
    for node in ast.walk(function):
        if isinstance(node, ast.Name) and node.id in names:
            parent = parents.get(node)
            if isinstance(parent, ast.Subscript) and parent.value is node:
                continue
            if isinstance(parent, ast.Attribute) and parent.attr in ("shape", "ndim", "strides", "size"):
                continue
            out.add(node.id)
    return out


def _build(kernel):
    access = argument_access(kernel)
    params = _compat.kernel_parameters(kernel)
    if any(not _compat.is_array_type(t) and hasattr(t, "vars") for _, t in params):
        return None  # @wp.struct arguments: their arrays would be written for real
    if any(_compat.is_array_type(t) and not _compat.is_plain_array_type(t) for _, t in params):
        return None  # indexed or fabric arrays are not copied: the same
    ndims = {label: _compat.array_type_ndim(t) for label, t in params if label in access and access[label].reads}
    if not ndims:
        return None
    tree = ast.parse(_compat.kernel_source(kernel))
    function = tree.body[0]
    function.decorator_list = []
    marker = _ReadMarker(ndims)
    marker.whole |= _used_otherwise(function, ndims)
    function.body = marker._body(function.body)
    marked = {label: n for label, n in ndims.items() if label not in marker.whole}
    if not marked:
        return None
    for label, ndim in marked.items():
        annotation = ast.parse(f"_wzs_warp.array(dtype=_wzs_warp.int32, ndim={ndim})", mode="eval").body
        function.args.args.append(ast.arg(arg=_PREFIX + label, annotation=annotation))
    function.name = f"{function.name}_reads"
    source = ast.unparse(ast.fix_missing_locations(tree))
    digest = hashlib.sha256(source.encode()).hexdigest()[:16]
    name = f"_wzs_reads_{digest}"
    directory = os.path.join(tempfile.gettempdir(), "warp_zerostore_read_twins")
    os.makedirs(directory, exist_ok=True)
    path = os.path.join(directory, f"{name}.py")
    if not os.path.exists(path):
        with open(path, "w", encoding="utf-8") as f:
            f.write(source + "\n")
    func = _compat.kernel_function(kernel)
    module = types.ModuleType(name)
    module.__dict__.update(func.__globals__)
    if func.__closure__:
        module.__dict__.update(zip(func.__code__.co_freevars, (c.cell_contents for c in func.__closure__)))
    module.__dict__.update({"__name__": name, "__file__": path, "_wzs_warp": warp})
    sys.modules[name] = module
    exec(compile(source, path, "exec"), module.__dict__)  # noqa: S102 - the kernel's own source, rewritten
    twin = warp.kernel(getattr(module, function.name), enable_backward=False, module="unique")
    return twin, list(marked)


def twin(kernel):
    """``(forward-only twin kernel, [labels it marks])`` or None (see the module docstring)."""
    cached = _CACHE.get(id(kernel))
    if cached is not None and cached[0] is kernel:
        return cached[1]
    try:
        built = _build(kernel)
    except Exception:  # noqa: BLE001 - a twin is an optimisation: whole-argument reads stay correct
        built = None
    _CACHE[id(kernel)] = (kernel, built)
    return built


def element_reads(kernel, launch: dict, copy) -> dict:
    """``{label: bool array}`` of the elements the launch reads, for the arguments the twin marks.

    ``launch`` is ``launch()``'s arguments by name; ``copy(arr)`` makes a device copy. Runs the twin on copies.
    """
    made = twin(kernel)
    if made is None:
        return {}
    variant, labels = made
    values = list(launch.get("inputs") or []) + list(launch.get("outputs") or [])
    names = _compat.kernel_argument_labels(kernel)
    by_label = dict(zip(names, values))
    copies = [copy(v) if isinstance(v, warp.array) else v for v in values]
    device = launch.get("device")
    shadows = {}
    for label in labels:
        arr = by_label[label]
        shadows[label] = warp.zeros(arr.shape, dtype=warp.int32, device=arr.device)
    try:
        with _compat.no_active_tape():
            _compat.launch_original(
                variant,
                dim=launch["dim"],
                inputs=copies + [shadows[label] for label in labels],
                device=device,
                max_blocks=launch.get("max_blocks", 0),
                block_dim=launch.get("block_dim", 256),
            )
    except Exception:  # noqa: BLE001 - the twin does not build or launch here: whole-argument reads
        _CACHE[id(kernel)] = (kernel, None)
        return {}
    return {label: shadows[label].numpy() != 0 for label in labels}
