"""The replay log: a ``zero_store=True`` kernel's backward pass reads what its forward pass read.

Warp's backward kernel first replays the forward body with its stores left out (``skip_replay``), so a load of
an element the thread stored earlier in the launch reads memory as it is at backward time, and a ``@wp.func``
helper called in the replay runs its forward code, stores included, into array memory. This module rewrites
the generated C++ of flagged (``True``) kernels, after Warp generated it and before the store-adjoint swap.

**What memory holds** when the backward runs decides what each load must read, so a flagged kernel that reads
back what it stores gets two backwards, built only where they differ:

* `POST`, the kernel's own: memory as the forward left it (a plain or check Tape, the PyTorch bridge, a
  hand-launched adjoint);
* `PRE`, a twin kernel's (`warp_zerostore.codegen.pre_twin`): memory as the launch read it, for the arrays it
  reads back (the snapshot Tape restores them; the JAX and PyTorch ``in_out`` modes hand in the pre-op values).

**Why a load in the replay reads the value it does** (`Decisions`, made per function by `decide`):

==========================================================  =====================  =====================
the load, in the forward's order                            POST                   PRE
==========================================================  =====================  =====================
of an array the thread has not written earlier              memory                 memory
of exactly the element its block stored last (`forwarded`)  the stored value *    the stored value
that a later store to the array definitely follows          the log                the log
  (same straight-line block; `followed`)
of an array a helper stored earlier                         the log                the log
any other load of an array written earlier                  memory                 the log
==========================================================  =====================  =====================

\\* on POST only where a later store follows it (else memory already holds that value). "The log" is the
per-thread ``wp::zs::replay_log`` (``native/warp_zerostore.h``): the replay pushes each store of a read-back array
there instead of into memory, and a load overlays the entries that cover its element on memory, so it gives the
thread's own earlier store where there is one, and memory where there is not. Each store's adjoint rewinds the
log to the mark taken before the store, so every reverse statement sees the forward's state. A helper with array
parameters gets a log variant (``h__zs_log`` / ``adj_h__zs_log``) whose stores go to the log, never to memory;
the replay calls it whenever the helper stores or receives a read-back array. A user's ``@wp.func_grad`` keeps
Warp's call.

**What the replay cannot make exact** is reported per memory (`ReplayIssue`; `Report.issues`), and the Tape or
bridge that runs the backward warns about the issues of the memory it runs it against
(`warp_zerostore.codegen.replay_records`): a value carried through memory across iterations of a runtime-bound
loop (Warp's backward re-runs each iteration with the values from before the loop), and a write the log does not
follow (`builtin_facts`: component atomics, tiles) read again, or a tile load (which never reads the log) of an
array written earlier, where the read needs more than memory holds.

A kernel that never reads back what it stores and calls no storing helper keeps Warp's text byte for byte.
"""

from __future__ import annotations

import dataclasses
import re

from .. import builtin_facts
from .store_rewrite import LOG_SUFFIX, STORE_FORMS

LOG = "zs_log"
SUFFIX = LOG_SUFFIX  # a helper's log variant: h__zs_log, adj_h__zs_log
_LOG_TYPE = "ZsLog"  # helper variants are templates on the kernel's log type, so they inline with it
_LOG_PARAM = f"{_LOG_TYPE}& {LOG}"
_BASE = "ZsBase"  # ... on the first slot of the range their call takes
_BELOW = "ZsBelow"  # ... and on the slots their caller's loads could see before the call


#: What memory holds when a flagged kernel's backward runs: what the forward left (a plain or check Tape, the
#: torch bridge, a hand-launched adjoint), or what the launch read (the snapshot Tape, which restores it).
POST, PRE = "post", "pre"
MEMORIES = (POST, PRE)


class ReplayWarning(UserWarning):
    """A flagged kernel whose backward pass cannot replay what its forward pass read (see docs/semantics.md)."""


@dataclasses.dataclass(frozen=True)
class ReplayIssue:
    """One read a backward cannot replay exactly: of ``argument``, written at ``store_line``, read at
    ``read_line`` (source lines); in a helper when ``function`` is set."""

    function: str
    argument: str
    store_line: int
    loop_line: int  # the runtime-bound loop that carries the value (0: none)
    read_line: int

    builtin: str = ""  # set for a write the replay does not follow (no loop)
    reader: str = ""  # set for a read the replay does not feed (a tile load after a store)
    statement: str = ""  # set for a statement of no form the replay knows (the generated C++)

    def message(self, kernel: str, location: str) -> str:
        where = kernel if self.function == "" else f"{kernel}, in helper '{self.function}'"
        carried = (
            f" (in the next iteration of the runtime-bound loop at line {self.loop_line})" if self.loop_line else ""
        )
        if self.statement:
            return (
                f"{where} ({location}): argument '{self.argument}' is used at line {self.read_line} by a statement "
                f"of Warp's generated code that the replay does not know (`{self.statement}`), and read or written "
                "elsewhere in the launch; what it does to the array is not replayed, so the gradient through the "
                "array may not be exact. Please report it with your Warp version."
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
    # per slot of its range, the type of the whole element it holds (None: a part, or not known)
    slot_kinds: list = dataclasses.field(default_factory=list)
    # memory -> [ReplayIssue]: its own and those of the helpers it calls, per the memory of the kernel's backward
    issues: dict = dataclasses.field(default_factory=dict)


# ------------------------------------------------------------------------------------------------------------
# The generated text: the statements the replay recognises, one pattern each


_DEF = re.compile(r"^(?![\s/#])(?:.*\s)?(\w+)\($")  # a definition starts unindented: `... name(`
_PARAM = re.compile(r"^\s*(?P<type>.+?)\s*(?P<ref>&?)\s*(?P<var>(?:var|adj)_\w+)\s*[,)]?\s*$")
_DECL = re.compile(r"^\s*(?P<type>[\w:<>, ]+?)\s+(?P<var>var_\w+)(?:\s*=.*)?;$")
_ARRAY_LOCAL = re.compile(r"^\s*(wp::array_t<.*>) (var_\w+) = ")
_ARRAY_TYPE = re.compile(r"^(?:const )?wp::array_t<(.+)>\s*&?$")
#: pointers into an array: ``p = wp::address(a, i)``, a view ``v = wp::view(a, i)``, a component ``wp::indexref``
#: a pointer into an array: ``wp::address(a, i)``; Warp 1.19's slot stores' ``&(wp::index(a, i))``; a field of a
#: struct element, ``&(((*wp::address(a, i))).f)``, or of a struct in one, ``&((((*wp::address(a, i))).s).f)``
_ADDR = re.compile(r"^(var_\w+) = (?:wp::address\(|&\(+\*?wp::(?:index|address)\()(var_\w+), ")
_VIEW = re.compile(r"^(var_\w+) = wp::view\((var_\w+)[,)]")
_INDEXREF = re.compile(r"^(// )?(var_\w+) = wp::indexref\((var_\w+), ")
#: reads and writes of an element (a leading ``// `` is a store Warp's replay skips)
_LOAD = re.compile(r"^(var_\w+) = wp::load\((var_\w+)\);$")
_STORE = re.compile(r"^(// )?wp::array_store\((.*)\);$")
_REF_STORE = re.compile(r"^(// )?wp::store\((.*)\);$")
_ATOMIC = re.compile(r"^(// )?(var_\w+) = wp::atomic_(\w+)\((var_\w+), (.*)\);$")
#: a component store as Warp 1.14-1.17 emit it, as a plain assignment (which their replay runs into memory)
_INDEX_ASSIGN = re.compile(r"^(// )?(wp::index\((var_\w+), [^;]*\)\[[^;]*\]) = (var_\w+);$")
#: writes into an array element the log does not follow (`builtin_facts`: tiles; and Warp 1.18+'s component
#: atomics, ``wp::array_atomic_*``, which no builtin name stands for): a later read is reported
_UNFOLLOWED_TILE_WRITES = sorted(
    n for n, b in builtin_facts.TABLE.items() if b.replay == "not followed" and n.startswith("tile_")
)
_OTHER_WRITE = re.compile(
    rf"^(?:// )?(?:var_\w+ = )?wp::(array_atomic_\w+|{'|'.join(_UNFOLLOWED_TILE_WRITES)})(?:<[^()]*>)?\((var_\w+)\b"
)
#: tile loads (Warp 1.19 prints template arguments): the log is not overlaid on them; a write before is reported
_TILE_READS = sorted(n for n, b in builtin_facts.TABLE.items() if b.replay == "not overlaid")
_TILE_LOAD = re.compile(rf"^(?:var_\w+ = )?wp::({'|'.join(_TILE_READS)})(?:<[^()]*>)?\((var_\w+)\b")
_CALL = re.compile(r"^(?:(var_\w+) = )?(\w+)\((.*)\);$")
#: Statements that name an array and neither write its memory nor read an element's value, which the replay leaves
#: as they are: each named. Where a form has a group ``array``, only the arrays named in it are used read-only (an
#: array elsewhere in the statement is not). Any other statement that names an array the function reads or writes
#: elsewhere and matches none of the forms above is an unknown form (`ReplayIssue.statement`): the replay fails
#: closed. (Measured over the test suite's and Warp's gradient tests' flagged kernels, tests/test_codegen_safety.py.)
READ_ONLY_FORMS: dict = {
    "an argument unpacked": re.compile(r"^(?:[\w:<>, ]+\s+)?var_\w+ = (?:_wp_args|\*?\(?_wp_args)\W.*;$"),
    "a declaration": re.compile(r"^(?:const )?[\w:<>, ]+[\s*&]+var_\w+(?: = \{\})?;$"),
    "an adjoint (it writes gradients, never the array)": re.compile(r"^(?:wp::(?:zs::)?)?adj_\w+\(.*\);$"),
    "a deterministic-mode adjoint (Warp 1.19)": re.compile(
        r"^WP_DET_SCATTER_OR_FALLBACK\(det_ctx, det_scatter_\w+, .*\);$"
    ),
    "the array's shape": re.compile(r"^var_\w+ = &\((?P<array>var_\w+)\.shape\);$"),
    "the array's length": re.compile(r"^var_\w+ = wp::len\((?P<array>var_\w+)\);$"),
    "the array tested for null (`if a:`)": re.compile(r"^if \(!?(?P<array>var_\w+)\) \{$"),
    "the array tested for null (`not a`)": re.compile(r"^var_\w+ = wp::unot\((?P<array>var_\w+)\);$"),
    "the array as a condition (`wp.where(a, ...)`)": re.compile(r"^var_\w+ = wp::where\((?P<array>var_\w+), "),
    "a copy of the array (a local array variable)": re.compile(r"^var_\w+ = (?:wp::copy\()?var_\w+\)?;$"),
}
_ASSIGN = re.compile(r"^(var_\w+) = ")
_ADJ_CALL = re.compile(r"^adj_(\w+)\((.*)\);$")
#: the adjoints of the stores the log follows (`store_rewrite.STORE_FORMS`) and of element atomics
_LOGGED_ADJOINTS = [re.escape(f.adjoint) for f in STORE_FORMS if f.logged]
_ADJ_STORE = re.compile(rf"^(?:{'|'.join(_LOGGED_ADJOINTS)}|wp::adj_atomic_\w+)\((\(\*)?(var_\w+)\)?, (.*)\);$")
_SLOT_ADJ = re.compile(rf"^(?:{'|'.join(re.escape(f.adjoint) for f in STORE_FORMS if f.slot)})\(")
_SOURCE_LINE = re.compile(r"^// (?!adj: ).*<L (\d+)>\s*$")
_LOOP_START = re.compile(r"^start_(for|while)_(\d+):;$")
_LOOP_END = re.compile(r"^end_(for|while)_(\d+):;$")
#: what ends a straight-line block: a brace, a label, a jump, a branch
_BOUNDARY = re.compile(r"[{}]|:;$|^goto |^return\b|^if \(|^else\b")
_VARIABLE = re.compile(r"\bvar_\w+\b")

#: the element atomics the log follows (`builtin_facts.REPLAY_FOLLOWED_ATOMICS`), each as the thread's new view
#: of the element from its old one
_ATOMIC_UPDATE = {
    "add": "wp::add({old}, {v})",
    "sub": "wp::sub({old}, {v})",
    "min": "wp::min({old}, {v})",
    "max": "wp::max({old}, {v})",
    "exch": "{v}",
}
assert {f"atomic_{op}" for op in _ATOMIC_UPDATE} == builtin_facts.REPLAY_FOLLOWED_ATOMICS


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
# One function body, read once: which root array each pointer comes from, and every read and write of one


@dataclasses.dataclass(frozen=True)
class Access:
    """One read or write of an array (``root``: the array variable it reaches) at line index ``index`` of the
    function, source line ``line``, inside the runtime-bound loop ``loop`` (a label) or None."""

    index: int
    root: str
    loop: str | None
    line: int
    element: tuple | None = None  # (array variable, index variables...) where the text says which element


@dataclasses.dataclass
class Store:
    """A store into an element: ``array`` (``wp::array_store``), ``ref`` (``wp::store`` through a pointer, or a
    component assignment) or ``atomic`` (``wp::atomic_<op>``)."""

    index: int  # line index in fn.lines
    root: str
    value: str
    args: list  # the store's arguments (array_store) or [pointer, value] (wp::store)
    kind: str  # "array" | "ref" | "atomic"
    commented: bool
    loop: str | None
    line: int
    op: str = ""  # the atomic's operation

    @property
    def access(self) -> Access:
        element = tuple(self.args[:-1]) if self.kind != "ref" else None
        return Access(self.index, self.root, self.loop, self.line, element)


@dataclasses.dataclass(frozen=True)
class Call:
    """A call of a `Helper` with array arguments; ``stores`` and ``loads``: the roots it writes and reads."""

    index: int
    helper: Helper
    args: list
    output: str | None
    stores: frozenset
    loads: frozenset
    loop: str | None
    line: int


@dataclasses.dataclass(frozen=True)
class Builtin:
    """A write the log does not follow, or a read it does not feed (a tile load): ``name`` is the builtin."""

    index: int
    root: str
    line: int
    name: str


@dataclasses.dataclass(frozen=True)
class Loop:
    """A runtime-bound loop: its source lines and its line indices (start and end labels)."""

    first: int | None  # first source line in the body (None: the loop never closed)
    last: int | None
    start: int
    end: int | None


@dataclasses.dataclass
class Body:
    roots: dict  # pointer or view variable -> the array parameter or local it reaches
    stores: list  # [Store]
    loads: list  # [Access]
    calls: list  # [Call]
    loops: dict  # label -> Loop
    unfollowed: list = dataclasses.field(default_factory=list)  # [Builtin]: writes the log does not follow
    tile_loads: list = dataclasses.field(default_factory=list)  # [Builtin]: reads the log does not feed
    unknown: list = dataclasses.field(default_factory=list)  # [Builtin]: statements of no form the replay knows
    addresses: dict = dataclasses.field(default_factory=dict)  # pointer -> (array variable, index variables...)
    assigned: dict = dataclasses.field(default_factory=dict)  # variable -> line indices that assign it

    def reads(self) -> list:
        """Every load, and each root a helper call loads (at the call)."""
        return self.loads + [Access(c.index, r, c.loop, c.line) for c in self.calls for r in c.loads]

    def writes(self) -> list:
        """Every store, and each root a helper call stores (just after the call)."""
        return [s.access for s in self.stores] + [
            Access(c.index, r, c.loop, c.line) for c in self.calls for r in c.stores
        ]

    def shared_loop(self, a: float, b: float) -> int:
        """The first source line of a runtime-bound loop whose body holds both line indices (0: none does)."""
        for loop in self.loops.values():
            if (
                loop.first is not None
                and loop.end is not None
                and loop.start < a < loop.end
                and loop.start < b < loop.end
            ):
                return loop.first - 1
        return 0


def _scan(fn: Function, helpers: dict) -> Body:
    roots = {var: var for t, var in fn.params if _is_array(t)}
    for line in fn.lines[fn.body + 1 :]:
        m = _ARRAY_LOCAL.match(line)
        if m:
            roots[m.group(2)] = m.group(2)
    body = Body(roots, [], [], [], {})
    loop_stack: list = []
    open_loops: dict = {}  # label -> [first source line, last source line]
    source_line = 0
    for idx in range(fn.body + 1, len(fn.lines) - 1):
        text = fn.lines[idx].strip()
        m = _SOURCE_LINE.match(text)
        if m:
            source_line = int(m.group(1))
            for label in loop_stack:
                span = open_loops[label]
                span[0], span[1] = min(span[0], source_line), max(span[1], source_line)
            continue
        m = _LOOP_START.match(text)
        if m:
            label = f"{m.group(1)}_{m.group(2)}"
            loop_stack.append(label)
            open_loops[label] = [10**9, 0]
            body.loops[label] = Loop(None, None, idx, None)
            continue
        m = _LOOP_END.match(text)
        if m:
            label = f"{m.group(1)}_{m.group(2)}"
            if label in open_loops:
                first, last = open_loops[label]
                body.loops[label] = Loop(first, last, body.loops[label].start, idx)
            if label in loop_stack:
                loop_stack.remove(label)
            continue
        loop = loop_stack[-1] if loop_stack else None
        m = _ASSIGN.match(text)
        if m:
            body.assigned.setdefault(m.group(1), []).append(idx)
        _scan_statement(body, text, idx, loop, source_line, helpers)
    # loops still open at the end (none in well-formed code) are ignored
    return body


def _scan_statement(body: Body, text: str, idx: int, loop, line: int, helpers: dict) -> None:
    roots = body.roots
    m = _ADDR.match(text) or _VIEW.match(text)
    if m:
        if m.group(2) in roots:
            roots[m.group(1)] = roots[m.group(2)]
            if text.startswith("var_") and "wp::address(" in text:
                body.addresses[m.group(1)] = tuple(split_args(text[text.index("(") + 1 : text.rindex(")")]))
        return
    m = _INDEXREF.match(text)
    if m:
        if m.group(3) in roots:
            roots[m.group(2)] = roots[m.group(3)]
        return
    m = _LOAD.match(text)
    if m:
        if m.group(2) in roots:
            body.loads.append(Access(idx, roots[m.group(2)], loop, line, body.addresses.get(m.group(2))))
        return
    m = _STORE.match(text)
    if m:
        args = split_args(m.group(2))
        if args and args[0] in roots:
            body.stores.append(Store(idx, roots[args[0]], args[-1], args, "array", bool(m.group(1)), loop, line))
        return
    m = _REF_STORE.match(text)
    if m:
        args = split_args(m.group(2))
        if len(args) == 2:
            root = roots.get(args[0])
            inner = re.match(r"^&\(wp::index\((var_\w+), ", args[0])
            if root is None and inner:
                root = roots.get(inner.group(1))
            if root is not None:
                body.stores.append(Store(idx, root, args[1], args, "ref", bool(m.group(1)), loop, line))
        return
    m = _INDEX_ASSIGN.match(text)
    if m:
        if m.group(3) in roots:
            args = [f"&({m.group(2)})", m.group(4)]
            body.stores.append(Store(idx, roots[m.group(3)], m.group(4), args, "ref", bool(m.group(1)), loop, line))
        return
    m = _ATOMIC.match(text)
    if m:
        if m.group(4) in roots:
            args = [m.group(4), *split_args(m.group(5))]
            body.stores.append(
                Store(idx, roots[m.group(4)], args[-1], args, "atomic", bool(m.group(1)), loop, line, m.group(3))
            )
        return
    m = _OTHER_WRITE.match(text)
    if m:
        if m.group(2) in roots:
            body.unfollowed.append(Builtin(idx, roots[m.group(2)], line, m.group(1)))
        return
    m = _TILE_LOAD.match(text)
    if m:
        if m.group(2) in roots:
            body.tile_loads.append(Builtin(idx, roots[m.group(2)], line, m.group(1)))
        return
    m = _CALL.match(text)
    if m and m.group(2) in helpers:
        helper = helpers[m.group(2)]
        args = split_args(m.group(3))
        stored = frozenset(roots[args[p]] for p in helper.stores if p < len(args) and args[p] in roots)
        loaded = frozenset(roots[args[p]] for p in helper.loads if p < len(args) and args[p] in roots)
        body.calls.append(Call(idx, helper, args, m.group(1), stored, loaded, loop, line))
        return
    named = [v for v in dict.fromkeys(_VARIABLE.findall(text)) if v in roots]
    if not named or text.startswith("//"):
        return
    for form in READ_ONLY_FORMS.values():
        m = form.match(text)
        if m:
            read_only = set(_VARIABLE.findall(m.group("array"))) if "array" in form.groupindex else set(named)
            named = [v for v in named if v not in read_only]
            break
    body.unknown.extend(Builtin(idx, root, line, text) for root in dict.fromkeys(roots[v] for v in named))


# ------------------------------------------------------------------------------------------------------------
# The decisions: what each load of a function's forward replay reads (the table in the module docstring)


def _forwarded(fn: Function, body: Body) -> dict:
    """Store-to-load forwarding: {load line index: stored value} for loads of exactly the element the same
    straight-line block stored last (same array variable, same index variables, nothing that may write that
    array in between). Those loads need no log: the forward read the stored value."""
    stores_at = {s.index: s for s in body.stores}
    unfollowed_at = {w.index: w.root for w in body.unfollowed}
    loads_at = {a.index for a in body.loads}
    calls_at = {c.index: c for c in body.calls}
    address: dict = {}
    available: dict = {}  # root -> (array and index arguments, value)
    out = {}
    for idx in range(fn.body + 1, len(fn.lines) - 1):
        text = fn.lines[idx].strip()
        if idx in unfollowed_at:
            available.pop(unfollowed_at[idx], None)
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
            for root in calls_at[idx].stores:
                available.pop(root, None)
            continue
        if idx in loads_at:
            m = _LOAD.match(text)
            root = body.roots.get(m.group(2))
            hit = available.get(root)
            if hit is not None and address.get(m.group(2)) == hit[0]:
                out[idx] = hit[1]
    return out


def _followed(fn: Function, body: Body) -> set:
    """Load line indices (and helper calls that load) of the forward replay that read the log on `POST`: those a
    later store to the same array (in the kernel or in a helper it calls) definitely follows (later in the same
    straight-line block, nothing conditional, no loop label, no jump in between), and those after a helper
    stored the array. Only a load so followed can have read, in the forward, a value that memory no longer
    holds once the forward has finished; every other load reads memory, as stock Warp's does. The log gives the
    thread's own earlier store of the element where there is one and memory where there is not, so a later
    store to another element costs nothing."""
    store_roots = {s.index: s.root for s in body.stores}
    loads_at = {a.index: a.root for a in body.loads}
    calls_at = {c.index: c for c in body.calls}
    end = next((k for k in range(fn.body + 1, len(fn.lines)) if fn.lines[k].strip() == "// reverse"), len(fn.lines) - 1)
    pending: set = set()  # roots a store of which definitely comes later in the block
    out = set()
    for idx in range(end - 1, fn.body, -1):
        text = fn.lines[idx].strip()
        if idx in store_roots:
            pending.add(store_roots[idx])
            continue
        if not text or text.startswith("//"):
            continue
        if _BOUNDARY.search(text):
            pending.clear()
            continue
        if idx in loads_at and loads_at[idx] in pending:
            out.add(idx)
        elif idx in calls_at:
            if pending & calls_at[idx].loads:
                out.add(idx)
            pending |= calls_at[idx].stores  # a helper's store is a later store of that array for what comes before
    # After a helper stored an array, stock Warp's replay has re-run that store into memory and reads it back; the
    # log holds the same value (the helper's variant pushes it), so every later load of that array reads the log.
    helper_stored: set = set()
    for idx in range(fn.body + 1, end):
        if idx in loads_at and loads_at[idx] in helper_stored:
            out.add(idx)
        elif idx in calls_at:
            if helper_stored & calls_at[idx].loads:
                out.add(idx)
            helper_stored |= calls_at[idx].stores
    return out


def _read_back(body: Body, forwarded: dict, replayed: set | None = None) -> set:
    """Roots loaded after a store of the same root (in the text's order, which is the forward's order), other
    than by a forwarded load; with ``replayed``, only the loads (and helper calls) in it count."""
    events = [(w.index, "store", w.root) for w in body.writes()]
    events += [
        (r.index, "load", r.root)
        for r in body.reads()
        if r.index not in forwarded and (replayed is None or r.index in replayed)
    ]
    stored_so_far: set = set()
    out = set()
    for _, kind, root in sorted(events, key=lambda e: (e[0], e[1] == "store")):
        if kind == "store":
            stored_so_far.add(root)
        elif root in stored_so_far:
            out.add(root)
    return out


@dataclasses.dataclass
class Decisions:
    """What one function's replay does for one memory: ``forwarded`` loads take the stored value, ``replayed``
    loads read the log (None: every load of a ``logged`` root, `PRE`), ``logged`` roots have their stores pushed to
    the log, ``calls`` are helpers called as their log variant."""

    forwarded: dict
    replayed: set | None
    logged: set
    calls: set

    @property
    def rewrites(self) -> bool:
        return bool(self.logged or self.calls or self.forwarded)


def decide(fn: Function, body: Body, memory: str) -> Decisions:
    """The decisions of the table in the module docstring, for a kernel's backward against ``memory``."""
    replayed = None if memory == PRE else _followed(fn, body)
    forwarded = _forwarded(fn, body)
    if replayed is not None:
        forwarded = {i: v for i, v in forwarded.items() if i in replayed}
    logged = _read_back(body, forwarded, replayed)
    calls = {c.helper.name for c in body.calls if _helper_needs_log_call(c, body.roots, logged)}
    return Decisions(forwarded, replayed, logged, calls)


def _helper_needs_log_call(call: Call, roots: dict, logged: set) -> bool:
    if call.helper.stores:
        return True
    return any(p < len(call.args) and roots.get(call.args[p]) in logged for p in call.helper.loads)


# ------------------------------------------------------------------------------------------------------------
# What the replay cannot make exact, per memory


def issues(body: Body, function: str, replayed: set | None = None, stale_log: bool = False) -> list:
    """The `ReplayIssue`s of one function: for `PRE` (``replayed`` None) every read that may see a write the log
    does not carry; for `POST` (``replayed``: the loads a later store definitely follows) only those that need
    more than memory holds once the forward finished. With ``stale_log`` (a helper's log variant, where every load
    reads the log) a read the log may serve an entry older than a write it does not carry counts too."""
    found = _loop_issues(body, function, replayed, stale_log) + _unfollowed_issues(body, function, replayed, stale_log)
    return list(dict.fromkeys(found + _unknown_issues(body, function)))


def _unknown_issues(body: Body, function: str) -> list:
    """A statement of no form the replay knows, on an array the function reads or writes elsewhere (by a known form,
    or by another unknown one): what it does to the array is not followed, whatever the memory."""
    touched = [a.root for a in body.reads() + body.writes()] + [b.root for b in body.tile_loads + body.unfollowed]
    counts = {root: touched.count(root) for root in set(touched)}
    for u in body.unknown:
        counts[u.root] = counts.get(u.root, 0) + 1
    return [
        ReplayIssue(function, u.root[len("var_") :], u.line, 0, u.line, statement=u.name)
        for u in body.unknown
        if counts[u.root] > 1
    ]


def _written_before(body: Body, root: str, index: float) -> bool:
    """Whether a write of ``root`` comes before line index ``index`` (the log may then hold an entry for it)."""
    return any(w.root == root and w.index < index for w in body.writes())


def _needs_more_than_memory(
    body: Body, read: Access | Builtin, replayed: set | None, stale_log: bool = False, since: float = 0
) -> bool:
    """On `POST`, whether a read needs the forward's state from before the launch finished: a load or helper call
    that reads the log (a later store follows it; with ``stale_log``, a write before ``since`` may have left an
    older entry there), or a tile load some write of its array follows."""
    if replayed is None:
        return True
    if isinstance(read, Builtin):  # a tile load reads memory
        return any(w.root == read.root and w.index > read.index for w in body.writes())
    return read.index in replayed or (stale_log and _written_before(body, read.root, since))


def _unfollowed_issues(body: Body, function: str, replayed: set | None, stale_log: bool = False) -> list:
    """Writes the log does not follow (component atomics, tiles) that a later load of the same array may see,
    and tile loads (which the log does not feed) of an array written earlier in the launch. "Later" includes a
    load earlier in the body of a runtime-bound loop that holds both: it reads the write of the last iteration."""
    found = []
    reads = body.reads() + body.tile_loads
    for write in body.unfollowed:
        seen = [
            (read.line, loop)
            for read in reads
            if read.root == write.root
            for loop in _sees(body, write.index, read.index)
            if loop or _needs_more_than_memory(body, read, replayed, stale_log, write.index)
        ]
        if seen:
            line, loop = min(seen)
            found.append(ReplayIssue(function, write.root[len("var_") :], write.line, loop, line, write.name))
    writes = [(w.index, w.root, w.line) for w in body.writes()]
    for tile in body.tile_loads:
        seen = [
            (line, loop)
            for idx, root, line in writes
            if root == tile.root
            for loop in _sees(body, idx, tile.index)
            if loop or _needs_more_than_memory(body, tile, replayed)
        ]
        if seen:
            line, loop = min(line for line, _ in seen), max(loop for _, loop in seen)
            found.append(ReplayIssue(function, tile.root[len("var_") :], line, loop, tile.line, reader=tile.name))
    return found


def _sees(body: Body, write: float, read: float) -> list:
    """``[loop line]`` (0: no loop) when the read at index ``read`` may see the write at index ``write``: it comes
    after it, or it is anywhere in the body of a runtime-bound loop holding both (the next iteration's); else []."""
    loop = body.shared_loop(write, read) if read != write else 0
    return [loop] if read > write or loop else []


def _loop_issues(body: Body, function: str, replayed: set | None, stale_log: bool = False) -> list:
    """Values carried through memory across iterations of a runtime-bound loop, or out of it (on `POST` only for a
    read that needs more than memory holds)."""
    found = []
    seen = set()
    for write in body.writes():
        loop = body.loops.get(write.loop) if write.loop is not None else None
        if loop is None or loop.first is None:
            continue
        for read in body.reads():
            if read.root != write.root:
                continue
            carried = loop.start < read.index < write.index  # read earlier in the body than the store
            after = read.line > loop.last and not (loop.start < read.index < loop.end)
            if not _needs_more_than_memory(body, read, replayed, stale_log, loop.start):
                # POST: a read that no later store follows reads memory (or a log with no entry for the array), as
                # stock Warp's does: what the forward left there, which is what the read read unless the element
                # was written again after it, which the text proves only for an element every iteration stores
                carried = carried and _every_iteration_stores_it(body, read, write, loop)
                after = False
            if (carried or after) and (write.root, write.loop) not in seen:
                seen.add((write.root, write.loop))
                found.append(ReplayIssue(function, write.root[len("var_") :], write.line, loop.first - 1, read.line))
    return found


def _every_iteration_stores_it(body: Body, read: Access, write: Access, loop: Loop) -> bool:
    """Whether the loop's store ``write`` may store, in every iteration, the element ``read`` reads: the same array,
    and indices the loop does not change on either side (``y[i] = y[i] * x[i]``, or ``y[i] = y[j] * x[i]`` with
    ``j`` set before the loop, in ``for k in range(n)``: an element read in one iteration is overwritten in the
    next, so memory never holds what the read read). An index the loop assigns (Newton's ``body_q[parent]`` read,
    ``body_q[child]`` stored) names another element in each iteration."""
    if read.element is None or write.element is None or read.element[0] != write.element[0]:
        return False
    indices = read.element[1:] + write.element[1:]
    return not any(loop.start < at < loop.end for var in indices for at in body.assigned.get(var, ()))


# ------------------------------------------------------------------------------------------------------------
# Rewriting


def _with_log_arg(args: list) -> str:
    return ", ".join([*args, LOG])


class _Rewriter:
    """Rewrites one function body per its `Decisions`, numbering the log's slots in the order of the text: each
    pushing store takes one, each call of a helper's log variant the helper's range (``bound``). In a helper's
    variant the numbers are offsets from its ``ZsBase`` (`_BASE`), and its loads see the caller's slots below it."""

    def __init__(self, fn: Function, body: Body, module: ModuleReplay, decisions: Decisions, in_helper: bool):
        self.fn, self.body, self.helpers, self.adjoints = fn, body, module.helpers, module.adjoint_variants
        self.decisions = decisions
        self.in_helper = in_helper
        self.used = 0  # slots taken so far
        # the slots of the pushes so far, in order: (C++ constant expression, the type of the whole element it holds,
        # or None where it may hold a part of one: a component store, a helper's range)
        self.seen: list = []
        self.types = _declared_types(fn)

    def _slot(self, k: int) -> str:
        return f"{_BASE} + {k}" if self.in_helper else str(k)

    def _take(self, count: int = 1) -> int:
        first, self.used = self.used, self.used + count
        return first

    def _visible(self) -> str:
        """What a load (or a helper called here) may see: the descriptors of the slots pushed so far, newest first
        (``wp::zs::whole<type, slot>`` for a whole element, ``wp::zs::part<slot>`` otherwise: the header), then, in
        a helper, what its caller's loads could see (`_BELOW`)."""
        own = [f"wp::zs::whole<{t}, {slot}>" if t else f"wp::zs::part<{slot}>" for slot, t in reversed(self.seen)]
        listed = f"wp::zs::slots<{', '.join(own)}>"
        return f"typename wp::zs::concat<{listed}, {_BELOW}>::type" if self.in_helper else listed

    def _store_type(self, store: Store) -> str | None:
        """The type of the whole element a store puts in the log (its array's element type), else None (a component
        store, an array reached through a struct)."""
        if store.kind == "ref":
            return None
        m = _ARRAY_TYPE.match(self.types.get(store.args[0], ""))
        return m.group(1).strip() if m else None

    def run(self, in_forward_function: bool) -> list:
        fn, body, d = self.fn, self.body, self.decisions
        lines = list(fn.lines)
        stores_at = {s.index: s for s in body.stores}
        log_loads = {
            a.index for a in body.loads if a.root in d.logged and (d.replayed is None or a.index in d.replayed)
        }
        open_stores: list = []  # (store, slot) in push order
        open_calls: list = []  # (helper name, args, first slot of its range)
        for idx in range(fn.body + 1, len(lines) - 1):
            raw = lines[idx]
            text = raw.strip()
            pad = raw[: len(raw) - len(raw.lstrip())]
            if idx in d.forwarded:
                m = _LOAD.match(text)
                lines[idx] = f"{pad}{m.group(1)} = {d.forwarded[idx]};  // replay: the value this thread stored"
                continue
            if idx in log_loads:
                m = _LOAD.match(text)
                lines[idx] = f"{pad}{m.group(1)} = wp::zs::replay_load<{self._visible()}>({LOG}, {m.group(2)});"
                continue
            m = _INDEXREF.match(text)
            if m and m.group(1) and body.roots.get(m.group(3)) in d.logged:
                lines[idx] = pad + text[len("// ") :]
                continue
            store = stores_at.get(idx)
            if store is not None and store.root in d.logged:
                replaced = self._store(store, in_forward_function, open_stores)
                if replaced is not None:
                    lines[idx] = pad + replaced
                continue
            m = _ADJ_STORE.match(text)
            if m and not in_forward_function:
                replaced = self._store_adjoint(m, text, open_stores)
                if replaced is not None:
                    lines[idx] = pad + replaced
                continue
            m = _CALL.match(text)
            if m and m.group(2) in self.helpers and m.group(2) in d.calls:
                name, args = m.group(2), split_args(m.group(3))
                out = f"{m.group(1)} = " if m.group(1) else ""
                helper = self.helpers[name]
                first, visible = self._take(helper.bound), self._visible()
                lines[idx] = f"{pad}{out}{name}{SUFFIX}<{self._slot(first)}, {visible}>({_with_log_arg(args)});"
                kinds = helper.slot_kinds + [None] * (helper.bound - len(helper.slot_kinds))
                self.seen += [(self._slot(first + k), t) for k, t in enumerate(kinds)]
                open_calls.append((name, args, first, visible))
                continue
            m = _ADJ_CALL.match(text)
            if m and m.group(1) in self.helpers and not in_forward_function:
                replaced = self._call_adjoint(m, text, open_calls)
                if replaced is not None:
                    lines[idx] = pad + replaced
        return lines

    def _store(self, store: Store, in_forward_function: bool, open_stores: list) -> str | None:
        """The replay of one store (or atomic) of a logged array: put in its slot of the log, never in memory."""
        text = self.fn.lines[store.index].strip()
        if in_forward_function and store.loop is not None:
            if store.kind == "atomic":  # the old value, without the write
                target = f"wp::address({', '.join(store.args[:-1])})"
                old = text.removeprefix("// ").split(" = ", 1)[0]
                load = f"wp::zs::replay_load<{self._visible()}>({LOG}, {target})"
                return f"{old} = {load};  // replay: not logged in a runtime loop"
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
            prefix = f"{old} = wp::zs::replay_load<{self._visible()}>({LOG}, {target}); "
            value = update.format(old=old, v=store.value)
        slot = self._take()
        # POST: an atomic follows only an element the thread logged before (its old value is then known)
        if store.kind == "atomic" and self.decisions.replayed is not None:
            push = f"{prefix}wp::zs::replay_update<{self._slot(slot)}, {self._visible()}>({LOG}, {target}, {value});"
        else:
            push = f"{prefix}wp::zs::replay_store<{self._slot(slot)}>({LOG}, {target}, {value});"
        self.seen.append((self._slot(slot), self._store_type(store)))
        if not in_forward_function:
            open_stores.append((store, slot))
        return push

    def _store_adjoint(self, m: re.Match, text: str, open_stores: list) -> str | None:
        """A store's adjoint first empties the store's slot and every later one (the latest open store it matches)."""
        root = self.body.roots.get(m.group(2))
        rest = split_args(m.group(3))
        for k in range(len(open_stores) - 1, -1, -1):
            store, slot = open_stores[k]
            if store.root != root:
                continue
            if _SLOT_ADJ.match(text):
                ok = store.kind == "ref" and len(rest) >= 2 and rest[1] == "adj_" + store.value[len("var_") :]
            else:
                ok = store.kind != "ref" and [m.group(2), *rest][: len(store.args)] == store.args
            if ok:
                del open_stores[k]
                return f"wp::zs::replay_clear<{self._slot(slot)}>({LOG}); {text}"
        return None

    def _call_adjoint(self, m: re.Match, text: str, open_calls: list) -> str | None:
        """A helper's adjoint first empties the call's range and later slots, and runs the log variant of a
        generated adjoint (over the same range)."""
        name, args = m.group(1), split_args(m.group(2))
        for k in range(len(open_calls) - 1, -1, -1):
            c_name, c_args, first, visible = open_calls[k]
            if c_name == name and args[: len(c_args)] == c_args:
                slot = self._slot(first)
                variant = f"adj_{name}{SUFFIX}<{slot}, {visible}>({_with_log_arg(args)});"
                call = variant if name in self.adjoints else text
                del open_calls[k]
                return f"wp::zs::replay_clear<{slot}>({LOG}); {call}"
        return None


def _bound_and_types(body: Body, logged: set, calls: set, types: dict) -> tuple:
    bound = sum(1 for s in body.stores if s.root in logged)
    slot_types = [types[s.value] for s in body.stores if s.root in logged and s.value in types]
    for c in body.calls:  # each call site: the helper's pushes (its adjoint replays after a rewind)
        if c.helper.name in calls:
            bound += c.helper.bound
            slot_types += c.helper.slot_types
    return bound, slot_types


@dataclasses.dataclass
class Report:
    """What the replay rewrite found for one flagged kernel: the `ReplayIssue`s per memory, and whether its `PRE`
    and `POST` backwards differ (a twin is built only where they do)."""

    issues: dict  # memory -> [ReplayIssue]
    differs: bool


class ModuleReplay:
    """The replay rewrite of one flagged module's code generation: helpers first, then kernels."""

    def __init__(self):
        self.helpers: dict[str, Helper] = {}
        self.adjoint_variants: set = set()  # helpers whose generated adjoint has a log variant
        self.reports: dict[str, Report] = {}  # kernel key -> its Report, for each flagged kernel generated

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
        body = _scan(fn, self.helpers)
        position = {var: k for k, (_, var) in enumerate(fn.params)}
        stores = {position[w.root] for w in body.writes() if w.root in position}
        loads = {position[r.root] for r in body.reads() if r.root in position}
        logged = set(body.roots.values())
        calls = {c.helper.name for c in body.calls}
        bound, slot_types = _bound_and_types(body, logged, calls, _declared_types(fn))
        # The log variant's loads all read the log, memory where it has no entry (a store in a runtime-bound loop is
        # not logged there). On POST memory holds what the forward left: a load needs more where a later store
        # follows it, or where an earlier write may have left an entry older than one the log does not carry.
        own = {PRE: issues(body, fn.name), POST: issues(body, fn.name, _followed(fn, body), stale_log=True)}
        found = {m: list(dict.fromkeys(own[m] + self._issues_of_calls(body, m))) for m in MEMORIES}
        info = Helper(fn.name, arrays, stores, loads, bound, slot_types, issues=found)
        self.helpers[fn.name] = info
        return info

    def _issues_of_calls(self, body: Body, memory: str) -> list:
        """The issues of the helpers ``body`` calls whose replayed values the backward uses: a helper whose adjoint
        Warp generated (it replays the helper's body), or whose returned value the caller uses. A helper with a
        user's ``@wp.func_grad`` whose value is not used (Newton's ``dense_solve``) runs the user's adjoint on
        memory as it is; what its replay computes goes nowhere."""
        return [
            i
            for c in body.calls
            if c.helper.name in self.adjoint_variants or c.output is not None
            for i in c.helper.issues[memory]
        ]

    def _signature(self, fn: Function, name: str) -> list:
        lines = list(fn.lines)
        lines[0] = lines[0].replace(f"{fn.name}(", f"{name}(", 1)
        if lines[0].startswith("static "):
            lines[0] = "static WP_ZS_INLINE " + lines[0][len("static ") :].replace("inline ", "", 1)
        close = fn.body - 1
        lines[close] = lines[close].rstrip()
        assert lines[close].endswith(")"), lines[close]
        lines[close] = lines[close][:-1] + (",\n    " if fn.params else "") + _LOG_PARAM + ")"
        return [f"template <int {_BASE}, typename {_BELOW}, typename {_LOG_TYPE}>", *lines]

    def _variant(self, fn: Function, in_forward_function: bool) -> list:
        """``h__zs_log`` (or ``adj_h__zs_log``): every store of an array goes to the log, every load reads it. The
        helper's ``bound`` (the slots its range takes) covers what either variant uses."""
        body = _scan(fn, self.helpers)
        decisions = Decisions(_forwarded(fn, body), None, set(body.roots.values()), {c.helper.name for c in body.calls})
        rewriter = _Rewriter(fn, body, self, decisions, in_helper=True)
        lines = rewriter.run(in_forward_function)
        helper = self.helpers[fn.name.removeprefix("adj_")]
        helper.bound = max(helper.bound, rewriter.used)
        if in_forward_function:  # what a caller's later loads see in the range: the forward variant's pushes
            helper.slot_kinds = [t for _, t in rewriter.seen]
        return self._signature(Function(fn.name, lines, fn.params, fn.body), fn.name + SUFFIX)

    # -- kernels -------------------------------------------------------------------------------------------

    def kernel(self, text: str, kernel_key: str, memory: str = POST) -> str:
        """The kernel's generated text with its backward function rewritten for ``memory`` (`POST` or `PRE`); its
        `Report` (both memories' issues, and whether their backwards differ) goes into ``reports``."""
        texts, found = {}, {}
        for m in MEMORIES:
            texts[m], found[m] = self._kernel_for(text, m)
        self.reports[kernel_key] = Report(found, texts[POST] != texts[PRE])
        return texts[memory]

    def _kernel_for(self, text: str, memory: str) -> tuple:
        """(the text with the backward rewritten for ``memory``, the issues of that backward)."""
        pieces = functions_in(text)
        lines = text.split("\n")
        found: list = []
        for start, end, fn in reversed(pieces):
            if not fn.name.endswith("_kernel_backward"):
                continue
            body = _scan(fn, self.helpers)
            d = decide(fn, body, memory)
            found = list(dict.fromkeys(issues(body, "", d.replayed) + self._issues_of_calls(body, memory)))
            if not d.rewrites:
                continue
            rewriter = _Rewriter(fn, body, self, d, in_helper=False)
            rewritten = rewriter.run(False)
            if d.logged or d.calls:  # else forwarded loads only: no log
                bound, slot_types = _bound_and_types(body, d.logged, d.calls, _declared_types(fn))
                bound = max(bound, rewriter.used)
                slot = ", ".join(dict.fromkeys(slot_types)) or "char"
                decl = f"    wp::zs::replay_log<{max(bound, 1)}, wp::zs::slot_bytes<{slot}>()> {LOG};"
                primal = next((k for k, line in enumerate(rewritten) if line.strip() == "// primal vars"), fn.body + 1)
                rewritten.insert(max(primal - 1, fn.body + 1), decl)
            lines[start:end] = rewritten
        return "\n".join(lines), found
