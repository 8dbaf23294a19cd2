"""A ``@wp.struct`` passed whole to a ``@wp.func`` helper is followed into the helper, in ``access`` and in the read
twin alike (warp.fem passes its ``Field`` and ``Domain`` structs that way: ``fields.p.dof_values``).

A kernel that reads ``f.p`` through a helper is a reader and nothing else, exactly as one reading ``f.p[i]``
directly: changed after record, the plain Tape reads the new values, ``check`` reports the mutation and the
snapshot Tape refuses it by name (it used to guess that the helper may write ``p``, restore it at ``backward()``
and hand back a zero gradient). The negative twin: a helper that does write ``p`` behaves exactly as a kernel that
stores ``f.p[i]`` directly, on every Tape. The read twin marks reads through a helper element by element, and runs
on a copy of the struct whose arrays are scratch copies, so it never reaches the real arrays.
"""

import ast
import warnings

import pytest

import warp_zerostore as wp
from warp_zerostore import access
from warp_zerostore.tape import read_twin
from warp_zerostore.tape.tape import MUTATED, REPLAY, OverwriteError


@wp.struct
class Field:
    p: wp.array(dtype=float)
    scale: float


@wp.struct
class Fields:
    field: Field
    other: wp.array(dtype=float)


@wp.func
def value(f: Field, i: int):
    return f.p[i] * f.scale


@wp.func
def value_deep(fs: Fields, i: int):
    return value(fs.field, i)


@wp.func
def values_of(f: Field):
    return f.p


@wp.func
def set_value(f: Field, i: int, v: float):
    f.p[i] = v


@wp.kernel
def read_through_helper(x: wp.array(dtype=float), f: Field, r: wp.array(dtype=float)):
    i = wp.tid()
    r[i] = x[i] * value(f, i)


@wp.kernel
def read_directly(x: wp.array(dtype=float), f: Field, r: wp.array(dtype=float)):
    i = wp.tid()
    r[i] = x[i] * (f.p[i] * f.scale)


@wp.kernel
def read_through_nested(x: wp.array(dtype=float), fs: Fields, r: wp.array(dtype=float)):
    i = wp.tid()
    g = fs  # a local bound to the struct: its uses are the struct's
    r[i] = x[i] * value_deep(g, i)


@wp.kernel
def read_through_made_struct(x: wp.array(dtype=float), fs: Fields, r: wp.array(dtype=float)):
    i = wp.tid()
    r[i] = x[i] * value(Field(fs.other, 1.0), i)  # a struct made from another's array


@wp.kernel
def store_through_returned(f: Field, v: wp.array(dtype=float)):
    i = wp.tid()
    values_of(f)[i] = v[i]  # the helper returns the struct's array: a store into f.p


@wp.kernel
def square_p(f: Field, r: wp.array(dtype=float)):
    i = wp.tid()
    r[i] = f.p[i] * f.p[i]


@wp.kernel
def double_p_through_helper(f: Field):
    i = wp.tid()
    set_value(f, i, 2.0 * f.p[i])


@wp.kernel
def double_p_directly(f: Field):
    i = wp.tid()
    f.p[i] = 2.0 * f.p[i]


@wp.kernel
def set_p_through_helper(f: Field, x: wp.array(dtype=float)):
    i = wp.tid()
    set_value(f, i, 2.0 * x[i])


@wp.kernel
def set_p_directly(f: Field, x: wp.array(dtype=float)):
    i = wp.tid()
    f.p[i] = 2.0 * x[i]


@wp.kernel(zero_store=True)
def set_p_through_helper_flagged(f: Field, x: wp.array(dtype=float)):
    i = wp.tid()
    set_value(f, i, 2.0 * x[i])


@wp.kernel(zero_store=True)
def set_p_directly_flagged(f: Field, x: wp.array(dtype=float)):
    i = wp.tid()
    f.p[i] = 2.0 * x[i]


@wp.kernel
def total(r: wp.array(dtype=float), loss: wp.array(dtype=float)):
    wp.atomic_add(loss, 0, r[wp.tid()])


def make_field(values) -> Field:
    f = Field()
    f.p = wp.array(values, dtype=float, requires_grad=True)
    f.scale = 1.0
    return f


# -- what the source says


@pytest.mark.parametrize("kernel", [read_through_helper, read_directly])
def test_a_struct_read_through_a_helper_is_read_only(kernel):
    used = access.struct_field_access(kernel)["f.p"][2]
    assert used.reads and used.value_read
    assert not used.writes and not used.surely_writes and not used.reads_after_store


def test_a_struct_is_followed_through_a_local_a_nested_helper_and_a_struct_made_from_it():
    nested = access.struct_field_access(read_through_nested)
    assert nested["fs.field.p"][2].reads and not nested["fs.field.p"][2].writes
    assert not nested["fs.other"][2].reads and not nested["fs.other"][2].writes  # never used
    made = access.struct_field_access(read_through_made_struct)
    assert made["fs.other"][2].reads and not made["fs.other"][2].writes
    assert not made["fs.field.p"][2].reads


def test_an_array_a_helper_returns_from_a_struct_is_followed_to_the_store():
    used = access.struct_field_access(store_through_returned)["f.p"][2]
    assert used.stores and used.surely_writes and not used.reads


@pytest.mark.parametrize("kernel", [double_p_through_helper, double_p_directly])
def test_a_helper_that_writes_the_struct_writes_it(kernel):
    used = access.struct_field_access(kernel)["f.p"][2]
    assert used.reads and used.stores and used.surely_writes


def test_a_struct_passed_to_a_builtin_still_counts_as_read_and_written():
    # the negative twin of the following: what the analysis cannot follow stays conservative
    source = access._Visitor(["s.q"], {}, 0, {"s.q": 1}, {"s": {("q",): "s.q"}})
    tree = ast.parse("def k(s: S):\n    wp.something(s)\n")
    source.visit(tree)
    assert source.access["s.q"].reads and source.access["s.q"].stores and not source.access["s.q"].surely_writes


# -- the read twin


def test_the_twin_marks_reads_through_a_helper_element_by_element():
    assert read_twin.marked_reads(read_through_helper) == ["x", "f.p"]
    x = wp.array([1.0, 2.0, 3.0], dtype=float)
    f = make_field([4.0, 5.0, 6.0])
    r = wp.zeros(3, dtype=float)
    reads = read_twin.element_reads(read_through_helper, {"dim": 2, "inputs": [x, f, r]})
    assert reads["f.p"].reads_known and reads["f.p"].before.tolist() == [True, True, False]
    assert reads["r"].written.tolist() == [True, True, False]
    assert f.p.numpy().tolist() == [4.0, 5.0, 6.0] and r.numpy().tolist() == [0.0, 0.0, 0.0]


@pytest.mark.parametrize("kernel", [double_p_through_helper, double_p_directly])
def test_the_twin_never_writes_the_real_struct_arrays(kernel):
    f = make_field([1.0, 2.0, 3.0])
    reads = read_twin.element_reads(kernel, {"dim": 3, "inputs": [f]})
    assert reads["f.p"].written.tolist() == [True, True, True]
    assert reads["f.p"].before.tolist() == [True, True, True]
    assert f.p.numpy().tolist() == [1.0, 2.0, 3.0]  # the twin wrote its scratch copy only


# -- on every Tape: a reader through a helper is a reader


def mutated_after_record(kernel, tape):
    """``r = x * f.p`` recorded with p = 0, then ``p`` assigned outside the Tape, then the loss recorded; returns
    ``x.grad`` (or the error) and the warnings."""
    x = wp.array([1.0, 2.0, 3.0], dtype=float, requires_grad=True)
    f = make_field([0.0, 0.0, 0.0])
    r = wp.zeros(3, dtype=float, requires_grad=True)
    loss = wp.zeros(1, dtype=float, requires_grad=True)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        with tape:
            wp.launch(kernel, dim=3, inputs=[x, f, r])
        f.p.assign([5.0, 6.0, 7.0])
        with tape:
            wp.launch(total, dim=3, inputs=[r, loss])
        try:
            tape.backward(loss)
        except OverwriteError as error:
            return error, caught
    return x.grad.numpy().tolist(), caught


@pytest.mark.parametrize("kernel", [read_through_helper, read_directly])
def test_the_plain_tape_reads_the_new_values(kernel):
    assert mutated_after_record(kernel, wp.Tape())[0] == [5.0, 6.0, 7.0]


@pytest.mark.parametrize("kernel", [read_through_helper, read_directly])
def test_the_snapshot_tape_refuses_the_change_by_name_whatever_path_read_it(kernel):
    found, caught = mutated_after_record(kernel, wp.Tape(snapshot=True))
    assert isinstance(found, OverwriteError), found
    assert "mutated after record" in str(found) and "'f.p'" in str(found) and kernel.key in str(found)
    assert not [w for w in caught if "read before and after write" in str(w.message)]


@pytest.mark.parametrize("kernel", [read_through_helper, read_directly])
def test_check_reports_the_change_whatever_path_read_it(kernel):
    tape = wp.Tape(check="warn")
    grad, _ = mutated_after_record(kernel, tape)
    assert grad == [5.0, 6.0, 7.0]
    assert [(h.kind, h.reader.argument, h.real) for h in tape.hazards] == [(MUTATED, "f.p", True)]


# -- the negative twin: a helper that writes `p` is a kernel that writes `f.p[i]`


def read_set_read(writer, tape):
    """loss = sum(p0^2) + sum((2 x)^2), ``p`` set to ``2 x`` by ``writer`` between its two readers: d loss / d p0 =
    2 p0 needs the first reader's backward to read p0 (a snapshot Tape), d loss / d x = 8 x. Returns both
    gradients, the hazards and the warnings (the writer's name left out)."""
    f = make_field([1.0, 2.0, 3.0])
    x = wp.array([0.5, -1.0, 1.5], dtype=float, requires_grad=True)
    r0 = wp.zeros(3, dtype=float, requires_grad=True)
    r = wp.zeros(3, dtype=float, requires_grad=True)
    loss = wp.zeros(1, dtype=float, requires_grad=True)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        with tape:
            wp.launch(square_p, dim=3, inputs=[f, r0])
            wp.launch(writer, dim=3, inputs=[f, x])
            wp.launch(square_p, dim=3, inputs=[f, r])
            wp.launch(total, dim=3, inputs=[r0, loss])
            wp.launch(total, dim=3, inputs=[r, loss])
        tape.backward(loss)
    hazards = sorted((h.kind, h.cause, h.real, h.elements) for h in getattr(tape, "hazards", []))
    messages = sorted(str(w.message).replace(writer.key, "WRITER").split(" (launch")[0] for w in caught)
    return (f.p.grad.numpy().tolist(), x.grad.numpy().tolist()), hazards, messages


TAPES = [{}, {"snapshot": True}, {"check": "warn"}, {"check": "warn", "snapshot": True}]
WRITERS = [(set_p_through_helper, set_p_directly), (set_p_through_helper_flagged, set_p_directly_flagged)]


@pytest.mark.parametrize("writers", WRITERS, ids=["stock", "zero_store"])
@pytest.mark.parametrize("options", TAPES, ids=["plain", "snapshot", "check", "check+snapshot"])
def test_a_helper_that_writes_p_behaves_as_a_kernel_that_stores_it(options, writers):
    through_helper = read_set_read(writers[0], wp.Tape(**options))
    directly = read_set_read(writers[1], wp.Tape(**options))
    assert through_helper[0] == directly[0]
    # Warp's backward re-runs a helper's store through a struct into memory (a flagged kernel's replay log follows
    # array parameters only); the snapshot Tape puts the input back after the writer's adjoint, and, the read twin
    # showing that the writer reads no element of `p` before writing it, the re-run store writes what every later
    # read wants: nothing to name (tests/test_tape_reads.py names a helper chain that reads before it writes)
    named = [h for h in through_helper[1] if h[:2] == (REPLAY, "helper store")]
    assert named == [] and through_helper[1] == directly[1]
    assert len(through_helper[2]) == len(directly[2])
    if options.get("snapshot") and writers[1] is set_p_directly_flagged:
        # (an unflagged store's adjoint accumulates up to Warp 1.12: the overwritten p's gradient leaks there)
        assert directly[0] == ([2.0, 4.0, 6.0], [4.0, -8.0, 12.0])
    if options.get("check"):
        assert {h[0] for h in directly[1]} >= {"stale read"}
