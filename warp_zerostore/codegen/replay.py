"""The replay log: a ``zero_store=True`` kernel's backward pass reads what its forward pass read.

Warp's backward kernel first replays the forward body with its stores left out (``skip_replay``), so a load of
an element the thread stored earlier in the launch reads memory as it is at backward time, and a ``@wp.func``
helper called in the replay runs its forward code, stores included, into array memory. This module rewrites
the generated C++ of flagged (``True``) kernels, after Warp generated it and before the store-adjoint swap:

* **Kernel backward.** Arrays the kernel reads back (a load after a store of the same argument, directly, in
  a helper or through a view) get a per-thread log (``wp::zs::replay_log`` in ``native/warp_zerostore.h``):
  their replayed stores push the value, their loads overlay the log on memory, and each store's adjoint
  rewinds the log to the mark taken before the store, so every reverse statement sees the forward's state.
* **Helpers.** Every helper with array parameters gets a log variant (``h__zs_log`` / ``adj_h__zs_log``)
  whose stores go to the log, never to memory; the replay calls it instead of the helper whenever the helper
  stores or receives a read-back array.
* **Refused exactness.** A value carried through memory across iterations of a runtime-bound loop cannot be
  replayed (Warp's backward re-runs each iteration with the values from before the loop): reported as a
  `ReplayIssue`, which the hooks turn into a `ReplayWarning` naming the kernel, the argument and
  the source lines.

A kernel that never reads back what it stores and calls no storing helper keeps Warp's text byte for byte.
"""

from __future__ import annotations

import dataclasses
import re

LOG = "zs_log"
SUFFIX = "__zs_log"
_LOG_TYPE = "ZsLog"  # helper variants are templates on the kernel's log type, so they inline with it
_LOG_PARAM = f"{_LOG_TYPE}& {LOG}"


#: What memory holds when a flagged kernel's backward runs: what the forward left (a plain or check Tape, the
#: torch bridge, a hand-launched adjoint), or what the launch read (the snapshot Tape, which restores it).
POST, PRE = "post", "pre"


class ReplayWarning(UserWarning):
    """A flagged kernel whose backward pass cannot replay what its forward pass read (see docs/semantics.md)."""


@dataclasses.dataclass(frozen=True)
class ReplayIssue:
    function: str
    argument: str
    store_line: int
    loop_line: int
    read_line: int

    builtin: str = ""  # set for a write the replay does not follow (no loop)
    reader: str = ""  # set for a read the replay does not feed (a tile load after a store)

    def message(self, kernel: str, location: str) -> str:
        where = kernel if self.function == "" else f"{kernel}, in helper '{self.function}'"
        carried = (
            f" (in the next iteration of the runtime-bound loop at line {self.loop_line})" if self.loop_line else ""
        )
        if self.reader:
            return (
                f"{where} ({location}): argument '{self.argument}' is written at line {self.store_line} and read "
                f"again by wp.{self.reader} at line {self.read_line}{carried}. The backward replay does not give a tile load "
                "the values written earlier in the launch, so the gradient through that read is not exact. Load "
                "the tile before writing the array, or keep the values in a tile variable."
            )
        if self.builtin:
            remedy = (
                "Keep the written tile in a variable and use it instead of reading the array again."
                if self.builtin.startswith("tile_")
                else "Write the element with a plain store (a[i] = ..., a[i] += ...), or read the value from a "
                "local variable."
            )
            return (
                f"{where} ({location}): argument '{self.argument}' is written by wp.{self.builtin} at line "
                f"{self.store_line} and read again at line {self.read_line}{carried}. The backward replay does not follow "
                f"that write, so the gradient through the later read is not exact. {remedy}"
            )
        return (
            f"{where} ({location}): argument '{self.argument}' is stored at line {self.store_line} inside a "
            f"runtime-bound loop (line {self.loop_line}) and read again at line {self.read_line}. Warp's backward "
            "re-runs each iteration with the values from before the loop, so this gradient is not exact. Give "
            "the loop a constant bound (wp.static / a constant range is unrolled), or carry the value in a local "
            "variable instead of the array."
        )


@dataclasses.dataclass
class Helper:
    """What the replay needs to know of one ``@wp.func`` helper, from its generated forward code."""

    name: str
    arrays: set  # positions of array parameters
    stores: set  # positions of array parameters it (or a helper it calls) stores into
    loads: set  # positions of array parameters it (or a helper it calls) loads from
    bound: int  # log entries its replay may push
    slot_types: list
    issues: list = dataclasses.field(default_factory=list)  # its own and those of the helpers it calls


# ------------------------------------------------------------------------------------------------------------
# Parsing the generated text


_DEF = re.compile(r"^(?![\s/#])(?:.*\s)?(\w+)\($")  # a definition starts unindented: `... name(`
_PARAM = re.compile(r"^\s*(?P<type>.+?)\s*(?P<ref>&?)\s*(?P<var>(?:var|adj)_\w+)\s*[,)]?\s*$")
_DECL = re.compile(r"^\s*(?P<type>[\w:<>, ]+?)\s+(?P<var>var_\w+)(?:\s*=.*)?;$")
_ADDR = re.compile(r"^(var_\w+) = wp::address\((var_\w+), ")
_VIEW = re.compile(r"^(var_\w+) = wp::view\((var_\w+)[,)]")
_INDEXREF = re.compile(r"^(// )?(var_\w+) = wp::indexref\((var_\w+), ")
_LOAD = re.compile(r"^(var_\w+) = wp::load\((var_\w+)\);$")
_STORE = re.compile(r"^(// )?wp::array_store\((.*)\);$")
_REF_STORE = re.compile(r"^(// )?wp::store\((.*)\);$")
_ATOMIC = re.compile(r"^(// )?(var_\w+) = wp::atomic_(\w+)\((var_\w+), (.*)\);$")
#: a component store as Warp 1.14-1.17 emit it, as a plain assignment (which their replay runs into memory)
_INDEX_ASSIGN = re.compile(r"^(// )?(wp::index\((var_\w+), [^;]*\)\[[^;]*\]) = (var_\w+);$")
#: atomics the replay log follows for the thread's own view of the element: the new value from the old one
_ATOMIC_UPDATE = {
    "add": "wp::add({old}, {v})",
    "sub": "wp::sub({old}, {v})",
    "min": "wp::min({old}, {v})",
    "max": "wp::max({old}, {v})",
    "exch": "{v}",
}
#: other writes into an array element (component atomics, tiles): not followed; a later read is reported
_OTHER_WRITE = re.compile(
    r"^(?:// )?(?:var_\w+ = )?wp::(array_atomic_\w+|tile_store\w*|tile_atomic_\w+)(?:<[^()]*>)?\((var_\w+)\b"
)
#: tile loads (Warp 1.19 prints template arguments): the log is not overlaid on them; a write before is reported
_TILE_LOAD = re.compile(r"^(?:var_\w+ = )?wp::(tile_load\w*)(?:<[^()]*>)?\((var_\w+)\b")
_CALL = re.compile(r"^(?:(var_\w+) = )?(\w+)\((.*)\);$")
_ADJ_STORE = re.compile(
    r"^(?:wp::adj_array_store|wp::adj_array_store_slot|wp::zs::adj_component_store|wp::adj_atomic_\w+)"
    r"\((\(\*)?(var_\w+)\)?, (.*)\);$"
)
_SLOT_ADJ = re.compile(r"^(?:wp::adj_array_store_slot|wp::zs::adj_component_store)\(")
_SOURCE_LINE = re.compile(r"^// (?!adj: ).*<L (\d+)>\s*$")
_LOOP_START = re.compile(r"^start_(for|while)_(\d+):;$")
_LOOP_END = re.compile(r"^end_(for|while)_(\d+):;$")


def split_args(text: str) -> list:
    """Top-level comma-separated arguments of a call's argument text."""
    args, depth, current = [], 0, ""
    for ch in text:
        if ch in "([{<" and not (ch == "<" and current.rstrip().endswith("<")):
            depth += 1
        elif ch in ")]}>":
            depth -= 1
        if ch == "," and depth == 0:
            args.append(current.strip())
            current = ""
        else:
            current += ch
    if current.strip():
        args.append(current.strip())
    return args


@dataclasses.dataclass
class Function:
    name: str
    lines: list  # the whole definition, first line to closing brace
    params: list  # (type, var) in order
    body: int  # index in lines of the opening brace


def functions_in(text: str) -> list:
    """(start, end, Function) for each function definition in ``text`` (line indices, end exclusive)."""
    lines = text.split("\n")
    found = []
    i = 0
    while i < len(lines):
        m = _DEF.match(lines[i])
        if not m:
            i += 1
            continue
        j = i + 1
        while j < len(lines) and lines[j].strip() != "{":
            j += 1
        k = j + 1
        while k < len(lines) and lines[k] != "}":
            k += 1
        if k >= len(lines):
            break
        params = []
        for raw in lines[i + 1 : j]:
            p = _PARAM.match(raw)
            if p:
                params.append((p.group("type").strip(), p.group("var")))
        found.append((i, k + 1, Function(m.group(1), lines[i : k + 1], params, j - i)))
        i = k + 1
    return found


def _declared_types(fn: Function) -> dict:
    types = {var: t for t, var in fn.params}
    for line in fn.lines[fn.body + 1 :]:
        m = _DECL.match(line)
        if m and not m.group("type").startswith(("return", "goto")):
            types.setdefault(m.group("var"), m.group("type").strip())
    return types


def _is_array(type_text: str) -> bool:
    return type_text.replace("const ", "").strip().startswith("wp::array_t<")


# ------------------------------------------------------------------------------------------------------------
# One pass over a function body: which root array each pointer comes from, where stores and loads are


@dataclasses.dataclass
class _Store:
    index: int  # line index in fn.lines
    root: str
    value: str
    args: list  # the store's arguments (array_store) or [pointer, value] (wp::store)
    kind: str  # "array" | "ref" | "atomic"
    commented: bool
    loop: tuple | None  # (label, loop's first source line) when inside a runtime-bound loop
    line: int
    op: str = ""  # the atomic's operation


@dataclasses.dataclass
class _Scan:
    roots: dict
    stores: list
    loads: list  # (index, root, loop, line)
    calls: list  # (index, helper, args, output, roots stored, roots loaded, loop)
    loops: dict  # label -> (first line, last line, start index, end index)
    others: list = dataclasses.field(default_factory=list)  # (index, root, line, builtin): writes not followed
    tile_loads: list = dataclasses.field(default_factory=list)  # (index, root, line, builtin): reads not overlaid


def _scan(fn: Function, helpers: dict) -> _Scan:
    roots = {var: var for t, var in fn.params if _is_array(t)}
    for line in fn.lines[fn.body + 1 :]:
        m = re.match(r"^\s*(wp::array_t<.*>) (var_\w+) = ", line)
        if m:
            roots[m.group(2)] = m.group(2)
    scan = _Scan(roots, [], [], [], {})
    loop_stack: list = []
    source_line = 0
    open_loops: dict = {}
    for idx in range(fn.body + 1, len(fn.lines) - 1):
        text = fn.lines[idx].strip()
        m = _SOURCE_LINE.match(text)
        if m:
            source_line = int(m.group(1))
            for label in loop_stack:
                first, last = open_loops[label]
                open_loops[label] = (min(first, source_line), max(last, source_line))
            continue
        m = _LOOP_START.match(text)
        if m:
            label = f"{m.group(1)}_{m.group(2)}"
            loop_stack.append(label)
            open_loops[label] = (10**9, 0)
            scan.loops[label] = (None, None, idx, None)
            continue
        m = _LOOP_END.match(text)
        if m:
            label = f"{m.group(1)}_{m.group(2)}"
            if label in open_loops:
                first, last = open_loops[label]
                scan.loops[label] = (first, last, scan.loops[label][2], idx)
            if label in loop_stack:
                loop_stack.remove(label)
            continue
        loop = loop_stack[-1] if loop_stack else None
        m = _ADDR.match(text) or _VIEW.match(text)
        if m:
            if m.group(2) in roots:
                roots[m.group(1)] = roots[m.group(2)]
            continue
        m = _INDEXREF.match(text)
        if m:
            if m.group(3) in roots:
                roots[m.group(2)] = roots[m.group(3)]
            continue
        m = _LOAD.match(text)
        if m:
            if m.group(2) in roots:
                scan.loads.append((idx, roots[m.group(2)], loop, source_line))
            continue
        m = _STORE.match(text)
        if m:
            args = split_args(m.group(2))
            if args and args[0] in roots:
                scan.stores.append(
                    _Store(idx, roots[args[0]], args[-1], args, "array", bool(m.group(1)), loop, source_line)
                )
            continue
        m = _REF_STORE.match(text)
        if m:
            args = split_args(m.group(2))
            if len(args) == 2:
                target = args[0]
                root = roots.get(target)
                inner = re.match(r"^&\(wp::index\((var_\w+), ", target)
                if root is None and inner:
                    root = roots.get(inner.group(1))
                if root is not None:
                    scan.stores.append(_Store(idx, root, args[1], args, "ref", bool(m.group(1)), loop, source_line))
            continue
        m = _INDEX_ASSIGN.match(text)
        if m:
            if m.group(3) in roots:
                target = f"&({m.group(2)})"
                scan.stores.append(
                    _Store(
                        idx,
                        roots[m.group(3)],
                        m.group(4),
                        [target, m.group(4)],
                        "ref",
                        bool(m.group(1)),
                        loop,
                        source_line,
                    )
                )
            continue
        m = _ATOMIC.match(text)
        if m:
            if m.group(4) in roots:
                args = [m.group(4), *split_args(m.group(5))]
                store = _Store(idx, roots[m.group(4)], args[-1], args, "atomic", bool(m.group(1)), loop, source_line)
                store.op = m.group(3)
                scan.stores.append(store)
            continue
        m = _OTHER_WRITE.match(text)
        if m:
            if m.group(2) in roots:
                scan.others.append((idx, roots[m.group(2)], source_line, m.group(1)))
            continue
        m = _TILE_LOAD.match(text)
        if m:
            if m.group(2) in roots:
                scan.tile_loads.append((idx, roots[m.group(2)], source_line, m.group(1)))
            continue
        m = _CALL.match(text)
        if m and m.group(2) in helpers:
            helper = helpers[m.group(2)]
            args = split_args(m.group(3))
            stored = {roots[args[p]] for p in helper.stores if p < len(args) and args[p] in roots}
            loaded = {roots[args[p]] for p in helper.loads if p < len(args) and args[p] in roots}
            scan.calls.append((idx, helper, args, m.group(1), stored, loaded, loop, source_line))
    # loops still open at the end (none in well-formed code) are ignored
    return scan


_BOUNDARY = re.compile(r"[{}]|:;$|^goto |^return\b|^if \(|^else\b")


def _forwarded(fn: Function, scan: _Scan) -> dict:
    """Store-to-load forwarding: {load line index: stored value} for loads of exactly the element the same
    straight-line block stored last (same array variable, same index variables, nothing that may write that
    array in between). Those loads need no log: the forward read the stored value."""
    stores_at = {s.index: s for s in scan.stores}
    others_at = {o[0]: o[1] for o in scan.others}
    loads_at = {i for i, _, _, _ in scan.loads}
    calls_at = {c[0]: c for c in scan.calls}
    address: dict = {}
    available: dict = {}  # root -> (array and index arguments, value)
    out = {}
    for idx in range(fn.body + 1, len(fn.lines) - 1):
        text = fn.lines[idx].strip()
        if idx in others_at:
            available.pop(others_at[idx], None)
            continue
        if not text or (text.startswith("//") and idx not in stores_at):
            continue
        if _BOUNDARY.search(text):
            available.clear()
            continue
        m = _ADDR.match(text)
        if m:
            address[m.group(1)] = split_args(text[text.index("(") + 1 : text.rindex(")")])
            continue
        store = stores_at.get(idx)
        if store is not None:
            if store.kind == "array":
                available[store.root] = (store.args[:-1], store.value)
            else:
                available.pop(store.root, None)
            continue
        if idx in calls_at:
            for root in calls_at[idx][4]:
                available.pop(root, None)
            continue
        if idx in loads_at:
            m = _LOAD.match(text)
            root = scan.roots.get(m.group(2))
            hit = available.get(root)
            if hit is not None and address.get(m.group(2)) == hit[0]:
                out[idx] = hit[1]
    return out


def _followed_loads(fn: Function, scan: _Scan) -> set:
    """Load line indices (and helper calls that load) of the forward replay that a later store to the same array
    (in the kernel or in a helper it calls) definitely follows: later in the same straight-line block, nothing
    conditional, no loop label, no jump in between. Only a load so followed can have read, in the forward, a
    value that memory no longer holds once the forward has finished; every other load reads memory, as stock
    Warp's does. A followed load reads the log,
    which gives the thread's own earlier store of the element where there is one and memory where there is not,
    so a later store to another element costs nothing."""
    stores_at = {s.index for s in scan.stores}
    roots_at = {s.index: s.root for s in scan.stores}
    loads_at = {i: r for i, r, _, _ in scan.loads}
    calls_at = {c[0]: c for c in scan.calls}
    end = next((k for k in range(fn.body + 1, len(fn.lines)) if fn.lines[k].strip() == "// reverse"), len(fn.lines) - 1)
    pending: set = set()  # roots a store of which definitely comes later in the block
    out = set()
    for idx in range(end - 1, fn.body, -1):
        text = fn.lines[idx].strip()
        if idx in stores_at:
            pending.add(roots_at[idx])
            continue
        if not text or text.startswith("//"):
            continue
        if _BOUNDARY.search(text):
            pending.clear()
            continue
        if idx in loads_at and loads_at[idx] in pending:
            out.add(idx)
        elif idx in calls_at:
            if pending & calls_at[idx][5]:
                out.add(idx)
            pending |= calls_at[idx][4]  # a helper's store is a later store of that array for what comes before
    # After a helper stored an array, stock Warp's replay has re-run that store into memory and reads it back; the
    # log holds the same value (the helper's variant pushes it), so every later load of that array reads the log.
    helper_stored: set = set()
    for idx in range(fn.body + 1, end):
        if idx in loads_at and loads_at[idx] in helper_stored:
            out.add(idx)
        elif idx in calls_at:
            if helper_stored & calls_at[idx][5]:
                out.add(idx)
            helper_stored |= calls_at[idx][4]
    return out


def _read_back(scan: _Scan, forwarded: dict, replayed: set | None = None) -> set:
    """Roots loaded after a store of the same root (in the text's order, which is the forward's order), other
    than by a forwarded load; with ``replayed``, only the loads (and helper calls) in it count."""
    events = [(s.index, "store", s.root) for s in scan.stores]
    events += [
        (i, "load", r) for i, r, _, _ in scan.loads if i not in forwarded and (replayed is None or i in replayed)
    ]
    for idx, _, _, _, stored, loaded, _, _ in scan.calls:
        if replayed is None or idx in replayed:
            events += [(idx, "load", r) for r in loaded]
        events += [(idx + 0.5, "store", r) for r in stored]
    stored_so_far: set = set()
    out = set()
    for _, kind, root in sorted(events, key=lambda e: e[0]):
        if kind == "store":
            stored_so_far.add(root)
        elif root in stored_so_far:
            out.add(root)
    return out


def _unfollowed_issues(scan: _Scan, function: str) -> list:
    """Writes the log does not follow (component atomics, tiles) that a later load of the same array may see,
    and tile loads (which the log does not feed) of an array written earlier in the launch. "Later" includes a
    load earlier in the body of a runtime-bound loop that holds both: it reads the write of the last iteration."""
    issues = []
    loads = list(scan.loads) + [(c[0], r, c[6], c[7]) for c in scan.calls for r in c[5]]
    loads += [(idx, r, None, line) for idx, r, line, _ in scan.tile_loads]
    for o_idx, root, o_line, builtin in scan.others:
        seen = _after(scan, o_idx, [(idx, line) for idx, r, _, line in loads if r == root])
        if seen:
            line, loop = min(seen)
            issues.append(ReplayIssue(function, root[len("var_") :], o_line, loop, line, builtin))
    writes = [(s.index, s.root, s.line) for s in scan.stores]
    writes += [(c[0], r, c[7]) for c in scan.calls for r in c[4]]
    for t_idx, root, t_line, reader in scan.tile_loads:
        seen = [(line, loop) for idx, r, line in writes if r == root for _, loop in _after(scan, idx, [(t_idx, 0)])]
        if seen:
            line, loop = min(line for line, _ in seen), max(loop for _, loop in seen)
            issues.append(ReplayIssue(function, root[len("var_") :], line, loop, t_line, reader=reader))
    return issues


def _after(scan: _Scan, write: int, reads: list) -> list:
    """(line, loop line) of each of ``reads`` ((index, line) pairs) that may see the write at index ``write``: one
    after it, or one anywhere in the body of a runtime-bound loop holding both (the next iteration's)."""
    found = []
    for idx, line in reads:
        loop = _shared_loop(scan, write, idx) if idx != write else 0
        if idx > write or loop:
            found.append((line, loop))
    return found


def _shared_loop(scan: _Scan, a: int, b: int) -> int:
    """The first source line of a runtime-bound loop whose body holds both line indices ``a`` and ``b``; 0 if
    none does."""
    for first, _, start, end in scan.loops.values():
        if first is not None and end is not None and start < a < end and start < b < end:
            return first - 1
    return 0


def _loop_issues(scan: _Scan, function: str) -> list:
    """Values carried through memory across iterations of a runtime-bound loop, or out of it."""
    issues = []
    stores = [(s.index, s.root, s.loop, s.line) for s in scan.stores]
    stores += [(c[0], r, c[6], c[7]) for c in scan.calls for r in c[4]]
    loads = list(scan.loads) + [(c[0], r, c[6], c[7]) for c in scan.calls for r in c[5]]
    seen = set()
    for s_idx, root, label, s_line in stores:
        if label is None or label not in scan.loops or scan.loops[label][0] is None:
            continue
        first, last, start, end = scan.loops[label]
        for l_idx, l_root, _, l_line in loads:
            if l_root != root:
                continue
            carried = start < l_idx < s_idx  # read earlier in the body than the store: from the last iteration
            after = l_line > last and not (start < l_idx < end)
            if (carried or after) and (root, label) not in seen:
                seen.add((root, label))
                issues.append(ReplayIssue(function, root[len("var_") :], s_line, first - 1, l_line))
    return issues


# ------------------------------------------------------------------------------------------------------------
# Rewriting


def _with_log_arg(args: list) -> str:
    return ", ".join([*args, LOG])


class _Rewriter:
    """Rewrites one function body; ``logged`` are the roots whose stores and loads go through the log."""

    def __init__(
        self,
        fn: Function,
        scan: _Scan,
        module: ModuleReplay,
        logged: set,
        replay_calls: set,
        forwarded: dict,
        replayed: set | None = None,
    ):
        self.fn, self.scan, self.helpers, self.adjoints = fn, scan, module.helpers, module.adjoint_variants
        self.logged, self.replay_calls, self.forwarded = logged, replay_calls, forwarded
        self.replayed = replayed  # loads that read the log; None: every load of a logged array
        self.marks: list = []

    def _mark(self) -> str:
        name = f"zs_m{len(self.marks)}"
        self.marks.append(name)
        return name

    def run(self, in_forward_function: bool) -> list:
        fn, scan = self.fn, self.scan
        lines = list(fn.lines)
        indent = lambda s: s[: len(s) - len(s.lstrip())]  # noqa: E731
        stores_at = {s.index: s for s in scan.stores}
        loads_at = {
            i for i, r, _, _ in scan.loads if r in self.logged and (self.replayed is None or i in self.replayed)
        }
        open_stores: list = []  # (store, mark) in push order
        open_calls: list = []  # (helper name, args, mark)
        for idx in range(fn.body + 1, len(lines) - 1):
            raw = lines[idx]
            text = raw.strip()
            pad = indent(raw)
            if idx in self.forwarded:
                m = _LOAD.match(text)
                lines[idx] = f"{pad}{m.group(1)} = {self.forwarded[idx]};  // replay: the value this thread stored"
                continue
            if idx in loads_at:
                m = _LOAD.match(text)
                lines[idx] = f"{pad}{m.group(1)} = wp::zs::replay_load({LOG}, {m.group(2)});"
                continue
            m = _INDEXREF.match(text)
            if m and m.group(1) and self.scan.roots.get(m.group(3)) in self.logged:
                lines[idx] = pad + text[len("// ") :]
                continue
            store = stores_at.get(idx)
            if store is not None and store.root in self.logged:
                replaced = self._store(store, in_forward_function, open_stores)
                if replaced is not None:
                    lines[idx] = pad + replaced
                continue
            m = _ADJ_STORE.match(text)
            if m and not in_forward_function:
                root = self.scan.roots.get(m.group(2))
                rest = split_args(m.group(3))
                for k in range(len(open_stores) - 1, -1, -1):
                    store, mark = open_stores[k]
                    if store.root != root:
                        continue
                    if _SLOT_ADJ.match(text):
                        ok = store.kind == "ref" and len(rest) >= 2 and rest[1] == "adj_" + store.value[len("var_") :]
                    else:
                        ok = store.kind != "ref" and [m.group(2), *rest][: len(store.args)] == store.args
                    if ok:
                        lines[idx] = f"{pad}wp::zs::replay_rewind({LOG}, {mark}); {text}"
                        del open_stores[k]
                        break
                continue
            m = _CALL.match(text)
            if m and m.group(2) in self.helpers and m.group(2) in self.replay_calls:
                name, args = m.group(2), split_args(m.group(3))
                out = f"{m.group(1)} = " if m.group(1) else ""
                call = f"{out}{name}{SUFFIX}({_with_log_arg(args)});"
                if not in_forward_function:  # an adjoint rewinds to the call's mark
                    mark = self._mark()
                    lines[idx] = f"{pad}{mark} = wp::zs::replay_mark({LOG}); {call}"
                    open_calls.append((name, args, mark))
                else:
                    lines[idx] = pad + call
                continue
            m = re.match(r"^adj_(\w+)\((.*)\);$", text)
            if m and m.group(1) in self.helpers and not in_forward_function:
                name, args = m.group(1), split_args(m.group(2))
                for k in range(len(open_calls) - 1, -1, -1):
                    c_name, c_args, mark = open_calls[k]
                    if c_name == name and args[: len(c_args)] == c_args:
                        call = f"adj_{name}{SUFFIX}({_with_log_arg(args)});" if name in self.adjoints else text
                        lines[idx] = f"{pad}wp::zs::replay_rewind({LOG}, {mark}); {call}"
                        del open_calls[k]
                        break
        if self.marks:
            lines.insert(fn.body + 1, "    int " + ", ".join(f"{m} = 0" for m in self.marks) + ";")
        return lines

    def _store(self, store: _Store, in_forward_function: bool, open_stores: list) -> str | None:
        """The replay of one store (or atomic) of a logged array: pushed to the log, never to memory."""
        text = self.fn.lines[store.index].strip()
        if in_forward_function and store.loop is not None:
            if store.kind == "atomic":  # the old value, without the write
                target = f"wp::address({', '.join(store.args[:-1])})"
                old = text.removeprefix("// ").split(" = ", 1)[0]
                return f"{old} = wp::zs::replay_load({LOG}, {target});  // replay: not logged in a runtime loop"
            return f"// {text.removeprefix('// ')}  (replay: not logged in a runtime loop)"
        if store.kind == "ref":
            target, value = store.args[0], store.value
        else:
            target = f"wp::address({', '.join(store.args[:-1])})"
            value = store.value
        prefix = ""
        if store.kind == "atomic":
            update = _ATOMIC_UPDATE.get(store.op)
            if update is None:  # integer bit operations and compare-and-swap: not differentiable, not followed
                return None
            old = text.removeprefix("// ").split(" = ", 1)[0]
            prefix = f"{old} = wp::zs::replay_load({LOG}, {target}); "
            value = update.format(old=old, v=store.value)
        mark = None if in_forward_function else self._mark()
        # POST: an atomic follows only an element the thread logged before (its old value is then known)
        push_call = "replay_update" if store.kind == "atomic" and self.replayed is not None else "replay_store"
        push = f"{prefix}wp::zs::{push_call}({LOG}, {target}, {value});"
        if mark is None:
            return push
        open_stores.append((store, mark))
        return f"{mark} = wp::zs::replay_mark({LOG}); {push}"


def _helper_needs_log_call(helper: Helper, args: list, roots: dict, logged: set) -> bool:
    if helper.stores:
        return True
    return any(p < len(args) and roots.get(args[p]) in logged for p in helper.loads)


def _bound_and_types(scan: _Scan, logged: set, calls: set, types: dict) -> tuple:
    bound = sum(1 for s in scan.stores if s.root in logged)
    slot_types = [types[s.value] for s in scan.stores if s.root in logged and s.value in types]
    for c in scan.calls:  # each call site: the helper's pushes (its adjoint replays after a rewind)
        if c[1].name in calls:
            bound += c[1].bound
            slot_types += c[1].slot_types
    return bound, slot_types


class ModuleReplay:
    """The replay rewrite of one flagged module's code generation: helpers first, then kernels."""

    def __init__(self):
        self.helpers: dict[str, Helper] = {}
        self.adjoint_variants: set = set()  # helpers whose generated adjoint has a log variant
        self.issues: dict = {}  # kernel key -> [ReplayIssue], for each flagged kernel rewritten
        self.differs: dict = {}  # kernel key -> whether its PRE and POST backwards differ

    # -- helpers -------------------------------------------------------------------------------------------

    def helper_piece(self, text: str) -> str:
        """``text`` (one or more generated helper functions) followed by their log variants."""
        variants = []
        for _, _, fn in functions_in(text):
            if fn.name.startswith("adj_") and fn.name[len("adj_") :] in self.helpers:
                # A generated adjoint replays then reverses; a user's @wp.func_grad (no reverse section) is
                # the user's own code, run as written (its stores are real): it keeps Warp's call.
                if any(line.strip() == "// reverse" for line in fn.lines):
                    variants.append(self._variant(fn, in_forward_function=False))
                    self.adjoint_variants.add(fn.name[len("adj_") :])
            elif not fn.name.startswith("adj_") and self._register(fn) is not None:
                variants.append(self._variant(fn, in_forward_function=True))
        if not variants:
            return text
        return text + "\n" + "\n\n".join("\n".join(v) for v in variants) + "\n"

    def _register(self, fn: Function) -> Helper | None:
        arrays = {k for k, (t, _) in enumerate(fn.params) if _is_array(t)}
        if not arrays:
            return None
        scan = _scan(fn, self.helpers)
        position = {var: k for k, (_, var) in enumerate(fn.params)}
        stores = {position[s.root] for s in scan.stores if s.root in position}
        loads = {position[r] for _, r, _, _ in scan.loads if r in position}
        for c in scan.calls:
            stores |= {position[r] for r in c[4] if r in position}
            loads |= {position[r] for r in c[5] if r in position}
        logged = set(scan.roots.values())
        calls = {c[1].name for c in scan.calls}
        bound, slot_types = _bound_and_types(scan, logged, calls, _declared_types(fn))
        issues = _loop_issues(scan, fn.name) + _unfollowed_issues(scan, fn.name)
        issues += [i for c in scan.calls for i in c[1].issues]
        info = Helper(fn.name, arrays, stores, loads, bound, slot_types, list(dict.fromkeys(issues)))
        self.helpers[fn.name] = info
        return info

    def _signature(self, fn: Function, name: str) -> list:
        lines = list(fn.lines)
        lines[0] = lines[0].replace(f"{fn.name}(", f"{name}(", 1)
        if lines[0].startswith("static "):
            lines[0] = "static WP_ZS_INLINE " + lines[0][len("static ") :].replace("inline ", "", 1)
        close = fn.body - 1
        lines[close] = lines[close].rstrip()
        assert lines[close].endswith(")"), lines[close]
        lines[close] = lines[close][:-1] + (",\n    " if fn.params else "") + _LOG_PARAM + ")"
        return [f"template <typename {_LOG_TYPE}>", *lines]

    def _variant(self, fn: Function, in_forward_function: bool) -> list:
        """``h__zs_log`` (or ``adj_h__zs_log``): every store of an array goes to the log, every load reads it."""
        scan = _scan(fn, self.helpers)
        calls = {c[1].name for c in scan.calls}
        rewriter = _Rewriter(fn, scan, self, set(scan.roots.values()), calls, _forwarded(fn, scan))
        body = rewriter.run(in_forward_function)
        return self._signature(Function(fn.name, body, fn.params, fn.body), fn.name + SUFFIX)

    # -- kernels -------------------------------------------------------------------------------------------

    def kernel(self, text: str, kernel_key: str, memory: str = POST) -> str:
        """The kernel's generated text with its backward function rewritten for ``memory`` (`POST` or `PRE`);
        issues collected for the kernel, and whether the two memories' backwards differ (`differs`)."""
        post = self._kernel_for(text, kernel_key, POST)
        pre = self._kernel_for(text, kernel_key, PRE)
        self.differs[kernel_key] = post != pre
        return pre if memory == PRE else post

    def _kernel_for(self, text: str, kernel_key: str, memory: str) -> str:
        pieces = functions_in(text)
        lines = text.split("\n")
        for start, end, fn in reversed(pieces):
            if not fn.name.endswith("_kernel_backward"):
                continue
            scan = _scan(fn, self.helpers)
            # PRE: memory holds what the launch read (the snapshot Tape restored it): every load of an array
            # written earlier in the launch reads the log. POST: memory holds what the forward left (a plain
            # Tape): only a load that a later store to the same element follows reads what the forward stored.
            replayed = None if memory == PRE else _followed_loads(fn, scan)
            forwarded = _forwarded(fn, scan)
            if replayed is not None:
                forwarded = {i: v for i, v in forwarded.items() if i in replayed}
            logged = _read_back(scan, forwarded, replayed)
            calls = {c[1].name for c in scan.calls if _helper_needs_log_call(c[1], c[2], scan.roots, logged)}
            found = _loop_issues(scan, "") + _unfollowed_issues(scan, "")
            found += [i for c in scan.calls for i in c[1].issues]
            self.issues[kernel_key] = list(dict.fromkeys(found))
            if not logged and not calls and not forwarded:
                continue
            body = _Rewriter(fn, scan, self, logged, calls, forwarded, replayed).run(False)
            if not logged and not calls:  # forwarded loads only: no log
                lines[start:end] = body
                continue
            bound, slot_types = _bound_and_types(scan, logged, calls, _declared_types(fn))
            slot = ", ".join(dict.fromkeys(slot_types)) or "char"
            decl = f"    wp::zs::replay_log<{max(bound, 1)}, wp::zs::slot_bytes<{slot}>()> {LOG};"
            primal = next((k for k, line in enumerate(body) if line.strip() == "// primal vars"), fn.body + 1)
            body.insert(max(primal - 1, fn.body + 1), decl)
            lines[start:end] = body
        return "\n".join(lines)
