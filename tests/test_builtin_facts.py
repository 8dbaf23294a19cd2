"""The one table of facts about Warp's builtins (warp_zerostore/builtin_facts.py), and the analyses that read it.

Each fact is tested through an analysis that uses it, with its negative twin: an accumulation is not a read of the
array, a builtin the table does not know counts as a read and a store; a linear call's argument is not a use whose
adjoint reads it; the replay follows exactly the atomics the table says, and reports a write it says it does not
follow. No kernel is built here (the analyses read source and generated text).
"""

import ast

import pytest

import warp_zerostore as wp
from warp_zerostore import _compat, builtin_facts
from warp_zerostore.access import argument_access
from warp_zerostore.codegen import replay
from warp_zerostore.lints import loop_carried

ARRAY_EFFECTS = {"", "read", "store", "accumulate"}
NEWER_THAN_1_9 = {"atomic_and", "atomic_or", "atomic_xor"}
REPLAY_FACTS = {"", "followed", "not followed", "not overlaid"}


def test_every_row_names_a_warp_builtin_or_type_and_states_known_facts():
    for name, facts in builtin_facts.TABLE.items():
        assert facts.name == name and facts.array in ARRAY_EFFECTS and facts.replay in REPLAY_FACTS, facts
        known = _compat.builtin_function(name) is not None or hasattr(wp, name)
        # only a builtin a supported release predates may be missing (the bitwise atomics arrived in 1.10)
        assert known or name in NEWER_THAN_1_9, (
            f"{name}: not a builtin or type of warp-lang {_compat.WARP_VERSION_TEXT}"
        )
    # an accumulation's adjoint reads no value: every accumulating builtin that is a scalar call is linear
    assert {n for n in builtin_facts.ACCUMULATING if not n.startswith("tile_")} <= builtin_facts.LINEAR


@wp.kernel
def uses(
    acc: wp.array(dtype=float),
    low: wp.array(dtype=float),
    n: wp.array(dtype=float),
    x: wp.array(dtype=float),
):
    i = wp.tid()
    wp.atomic_add(acc, 0, x[i])  # accumulate: no read
    wp.atomic_min(low, 0, x[i])  # not an accumulation: read and stored
    n[i] = float(len(x))  # len: a read (of x)


def test_access_reads_the_tables_array_effects():
    access = argument_access(uses)
    assert access["acc"].accumulates and not access["acc"].reads and not access["acc"].stores
    # negative twin: an atomic the table does not call an accumulation is a read and a store
    assert access["low"].reads and access["low"].stores
    assert access["x"].reads and not access["x"].writes


def _loop_findings(source: str) -> list:
    return loop_carried.find(next(n for n in ast.walk(ast.parse(source)) if isinstance(n, ast.FunctionDef)))


@pytest.mark.parametrize("call", sorted(builtin_facts.LINEAR - {"range", "static", "len"}))
def test_a_linear_calls_argument_is_not_a_value_use_and_a_non_linear_ones_is(call):
    # a local assigned in a runtime-bound loop, then passed to a call after it: wrong only where the adjoint reads it
    body = "def k(x, y, n):\n    s = x[0]\n    for j in range(n[0]):\n        s = x[j]\n    y[0] = {}(s)\n"
    assert _loop_findings(body.format(f"wp.{call}")) == []
    (finding,) = _loop_findings(body.format("wp.sin"))
    assert finding.name == "s"


def test_the_replay_follows_exactly_the_atomics_the_table_says():
    followed = {f"atomic_{op}" for op in replay._ATOMIC_UPDATE}
    assert followed == builtin_facts.REPLAY_FOLLOWED_ATOMICS
    atomics = {n for n in builtin_facts.TABLE if n.startswith("atomic_")}
    assert {n for n in atomics if builtin_facts.TABLE[n].replay == "not followed"} == atomics - followed


def test_the_replay_recognises_the_writes_the_table_says_it_does_not_follow():
    for name in ("tile_store", "tile_atomic_add", "tile_store_indexed", "tile_atomic_add_indexed"):
        assert replay._OTHER_WRITE.match(f"wp::{name}<float, true>(var_y, var_t);").group(1) == name
        assert builtin_facts.TABLE[name].replay == "not followed"
    assert replay._TILE_LOAD.match("var_t = wp::tile_load<float, 4>(var_y, var_o);").group(1) == "tile_load"
    # negative twins: a followed atomic is a store of the log's, a read-only builtin is no write
    assert replay._OTHER_WRITE.match("var_o = wp::atomic_add(var_y, var_i, var_v);") is None
    assert replay._OTHER_WRITE.match("var_t = wp::tile_load<float, 4>(var_y, var_o);") is None
