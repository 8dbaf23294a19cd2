"""Code generation that is safe to change: the replay parser fails closed on a statement it does not know, the
store forms are named in one declaration, and the kernel-cache salt covers every file that generates code (an edit
to any of them rebuilds a flagged kernel)."""

from __future__ import annotations

import pathlib
import re

import pytest

from warp_zerostore.codegen import hashing, replay, store_rewrite

ROOT = pathlib.Path(__file__).resolve().parent.parent

# A flagged kernel's backward as Warp generates it (the shape of its CPU text): y[i] = x[i]; z[i] = y[j] * x[i],
# with the statement under test at the marker.
_BACKWARD = """static void k_0123abcd_cpu_kernel_backward(
    wp::launch_bounds_t<1> dim,
    size_t task_index,
    wp_args_k_0123abcd *_wp_args,
    wp_args_k_0123abcd *_wp_adj_args)
{
    //---------
    // argument vars
    wp::array_t<wp::float32> var_x = _wp_args->x;
    wp::array_t<wp::float32> var_y = _wp_args->y;
    wp::array_t<wp::float32> var_z = _wp_args->z;
    wp::array_t<wp::float32> var_w = _wp_args->w;
    wp::array_t<wp::int32> var_index = _wp_args->index;
    wp::array_t<wp::float32> adj_x = _wp_adj_args->x;
    wp::array_t<wp::float32> adj_y = _wp_adj_args->y;
    wp::array_t<wp::float32> adj_z = _wp_adj_args->z;
    wp::array_t<wp::float32> adj_w = _wp_adj_args->w;
    wp::array_t<wp::int32> adj_index = _wp_adj_args->index;
    //---------
    // primal vars
    wp::int32 var_0;
    wp::float32* var_1;
    wp::float32 var_2;
    wp::int32* var_3;
    wp::int32 var_4;
    wp::float32* var_5;
    wp::float32 var_6;
    wp::float32 var_7;
    wp::float32 var_9;
    //---------
    // dual vars
    wp::float32 adj_2 = {};
    wp::float32 adj_6 = {};
    wp::float32 adj_7 = {};
    //---------
    // forward
    // def k(x, y, z, w, index):                                                  <L 1>
    // i = wp.tid()                                                               <L 2>
    var_0 = builtin_tid1d();
    // y[i] = x[i]                                                                <L 3>
    var_1 = wp::address(var_x, var_0);
    var_2 = wp::load(var_1);
    // wp::array_store(var_y, var_0, var_2);
    // (the statement under test)                                                 <L 4>
    STATEMENT
    // z[i] = y[index[i]] * x[i]                                                  <L 5>
    var_3 = wp::address(var_index, var_0);
    var_4 = wp::load(var_3);
    var_5 = wp::address(var_y, var_4);
    var_6 = wp::load(var_5);
    var_7 = wp::mul(var_6, var_2);
    // wp::array_store(var_z, var_0, var_7);
    //---------
    // reverse
    wp::adj_array_store(var_z, var_0, var_7, adj_z, adj_0, adj_7);
    wp::adj_mul(var_6, var_2, adj_6, adj_2, adj_7);
    wp::adj_address(var_y, var_4, adj_y, adj_4, adj_6);
    // adj: z[i] = y[index[i]] * x[i]                                             <L 5>
    wp::adj_array_store(var_y, var_0, var_2, adj_y, adj_0, adj_2);
    wp::adj_address(var_x, var_0, adj_x, adj_0, adj_1);
    // adj: y[i] = x[i]                                                           <L 3>
    return;
}
"""


def _issues(statement: str) -> dict:
    module = replay.ModuleReplay()
    module.kernel(_BACKWARD.replace("STATEMENT", statement), "k")
    return module.reports["k"].issues


def test_an_unknown_statement_on_an_array_read_back_is_a_replay_issue_naming_it():
    """A form of Warp's generated code the replay does not know (here a made-up gather) on ``y``, which the kernel
    stores and reads back: reported for both memories, with the statement, instead of dropped."""
    statement = "var_9 = wp::future_gather(var_y, var_0);"
    for memory in replay.MEMORIES:
        [issue] = _issues(statement)[memory]
        assert issue.argument == "y" and issue.statement == statement and issue.read_line == 4
        message = issue.message("kernel 'k'", "k.py:1")
        assert "does not know" in message and statement in message and "argument 'y'" in message


def test_an_unknown_statement_on_an_array_the_kernel_does_not_otherwise_touch_is_no_issue():
    """The negative twin: ``w`` is named by nothing else, so nothing the replay does depends on it."""
    assert _issues("var_9 = wp::future_gather(var_w, var_0);") == {memory: [] for memory in replay.MEMORIES}


@pytest.mark.parametrize(
    "statement",
    [
        "var_9 = wp::len(var_y);",
        "wp::adj_address(var_y, var_0, adj_y, adj_0, adj_9);",
        "wp::adj_future(var_y, var_0, adj_y, adj_0, adj_9);",
        "var_9 = builtin_tid1d();",
        "var_9 = wp::mul(var_2, var_2);",
    ],
)
def test_read_only_forms_and_statements_without_an_array_are_no_issue(statement):
    assert _issues(statement) == {memory: [] for memory in replay.MEMORIES}


def test_the_read_only_forms_are_an_explicit_named_list():
    assert all(isinstance(name, str) and form.pattern for name, form in replay.READ_ONLY_FORMS.items())
    assert any(form.match("var_9 = &(var_y.shape);") for form in replay.READ_ONLY_FORMS.values())
    assert not any(form.match("var_9 = wp::future_gather(var_y, var_0);") for form in replay.READ_ONLY_FORMS.values())


# ------------------------------------------------------------------------------------------------------------
# Store forms: one declaration


def test_every_store_form_names_a_twin_the_header_defines_and_the_replay_follows_its_adjoint():
    header = (ROOT / "native" / "warp_zerostore.h").read_text()
    # a macro defines some pairs (``adj_tile_store_##MODE``), instantiated for both modes
    assert re.search(r"FORMS\(zero, true\)", header) and re.search(r"FORMS\(accumulate, false\)", header)
    for form in store_rewrite.STORE_FORMS:
        twin = form.twin.removeprefix("wp::zs::")
        both = re.search(rf"\b{twin}_zero\b", header) and re.search(rf"\b{twin}_accumulate\b", header)
        assert both or re.search(rf"\b{twin}_##MODE\b", header), twin
        assert store_rewrite.STORE_ADJOINTS[f"{form.adjoint}("] == {
            True: f"{form.twin}_zero(",
            False: f"{form.twin}_accumulate(",
        }
        statement = f"{form.adjoint}(var_y, var_0, var_2, adj_y, adj_0, adj_2);"
        assert bool(replay._ADJ_STORE.match(statement)) == form.logged, form
        assert bool(replay._SLOT_ADJ.match(statement)) == form.slot, form
    assert store_rewrite.LOG_SUFFIX == replay.SUFFIX


# ------------------------------------------------------------------------------------------------------------
# The kernel-cache salt


def test_the_salt_covers_every_file_that_generates_code():
    files = {str(p.relative_to(ROOT / "warp_zerostore")) for p in hashing.generator_files()}
    codegen = {f"codegen/{p.name}" for p in (ROOT / "warp_zerostore" / "codegen").glob("*.py")}
    assert codegen <= files  # a new module of codegen/ is in it without being listed
    # and what codegen imports from the package, followed through their imports
    assert {"_compat.py", "builtin_facts.py", "options.py", "lints/adjoint_bugs.py", "lints/atomic_returns.py"} <= files
    assert not {"tape/tape.py", "access.py", "torch/ops.py"} & files  # nothing codegen does not import


@pytest.mark.parametrize("name", [str(p.relative_to(ROOT / "warp_zerostore")) for p in hashing.generator_files()])
def test_an_edit_to_each_generating_file_changes_the_salt(name):
    edited = ROOT / "warp_zerostore" / name
    base = hashing.generator_digest()
    changed = hashing.generator_digest(lambda path: path.read_bytes() + (b"# edit\n" if path == edited else b""))
    assert changed != base
    assert hashing.generator_digest() == base == hashing._GENERATOR_DIGEST  # the digest of the files as they are


@pytest.mark.parametrize(
    "pointer",
    [
        "var_9 = wp::address(var_y, var_0);",
        "var_9 = &(wp::index(var_y, var_0));",
        "var_9 = &(((*wp::address(var_y, var_0))).a);",
        "var_9 = &((((*wp::address(var_y, var_0))).s).a);",
    ],
)
def test_every_pointer_form_into_an_array_is_followed(pointer):
    """A load through a pointer into ``y`` (an element, Warp 1.19's slot form, a field of a struct element) is a
    load of ``y``: the replay sees it (it dropped the struct forms before, so a load through them read memory
    unseen)."""
    params = [("wp::array_t<wp::float32>", "var_y")]
    lines = ["f(", "{", pointer, "var_10 = wp::load(var_9);", "}"]
    body = replay._scan(replay.Function("f", lines, params, 1), {})
    assert body.roots["var_9"] == "var_y" and [(a.root, a.index) for a in body.loads] == [("var_y", 3)]
    assert body.unknown == []
