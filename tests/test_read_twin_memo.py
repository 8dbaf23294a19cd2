"""Check mode reuses the read twin's marks where they follow from the launch alone (`tape.data_flow`): the
source analysis, with a negative twin for each case, and the reuse itself — the same marks and the same hazards
as running the twin every time, and the twin run again whenever the data or a mutable argument could change
them."""

import ast
import textwrap
import warnings

import pytest
from helpers import kernels_read_memo as k

import warp_zerostore as wp
from warp_zerostore.tape import read_twin
from warp_zerostore.tape.data_flow import marks_depend_on_data


@wp.func
def clamp_index(i: int, n: int):
    return wp.min(i, n - 1)


@wp.func
def load(a: wp.array(dtype=float), i: int):
    return a[i]


NAMESPACE = {"wp": wp, "clamp_index": clamp_index, "load": load}

# Which elements are read and written follows from the launch (thread index, scalars, shapes) alone.
FIXED = {
    "tid index": "i = wp.tid()\ny[i] = x[i] * 2.0",
    "guard on a scalar": "i = wp.tid()\nif i == k:\n    y[i] = x[i]",
    "2-D row view store": "w, j = wp.tid()\nrow = y2[w]\nrow[j] = x2[w, j]",
    "atomic of a loaded value": "i = wp.tid()\nwp.atomic_add(y, 0, x[i] * x[i])",
    "loop over a shape": "i = wp.tid()\nfor m in range(x.shape[0]):\n    y[i] += x[m]",
    "helper without arrays": "i = wp.tid()\ny[clamp_index(i, k)] = x[i]",
    "local vector from a load": "i = wp.tid()\nv = wp.vec3(x[i], 0.0, 0.0)\nv[0] = x[i]\ny[i] = v[0]",
}
# ... and its negative twins: the data chooses the elements.
DATA = {
    "guard on a load": "i = wp.tid()\nif x[i] > 0.0:\n    y[i] = x[i]",
    "index from a load": "i = wp.tid()\ny[int(x[i])] = 1.0",
    "index through a local": "i = wp.tid()\nj = int(x[i])\ny[j] = 1.0",
    "atomic's return value as an index": "i = wp.tid()\nslot = wp.atomic_add(c, 0, 1)\ny[slot] = x[i]",
    "atomic at a loaded index": "i = wp.tid()\nwp.atomic_add(y, int(x[i]), 1.0)",
    "helper given an array": "i = wp.tid()\ny[i] = load(x, i)",
    "short-circuit on a load": "i = wp.tid()\nif i == k and x[i] > 0.0:\n    y[i] = 1.0",
    "ternary on a load": "i = wp.tid()\ny[i] = x[i] if x[0] > 0.0 else x[1]",
    "loop bound from a load": "i = wp.tid()\nfor m in range(int(x[0])):\n    y[i] += 1.0",
    "while on a row view": "w, j = wp.tid()\nrow = x2[w]\nwhile row[j] > 0.0:\n    row[j] = row[j] - 1.0",
}
ARRAYS = {"x", "y", "c", "x2", "y2"}


def _function(body: str) -> ast.FunctionDef:
    return ast.parse("def kernel():\n" + textwrap.indent(body, "    ")).body[0]


@pytest.mark.parametrize("name", sorted(FIXED))
def test_marks_that_follow_from_the_launch_are_recognised(name):
    assert not marks_depend_on_data(_function(FIXED[name]), ARRAYS, NAMESPACE)


@pytest.mark.parametrize("name", sorted(DATA))
def test_marks_that_follow_the_data_are_recognised(name):
    assert marks_depend_on_data(_function(DATA[name]), ARRAYS, NAMESPACE)


@pytest.fixture
def twin_runs(monkeypatch):
    runs = []
    original = read_twin._Runner.run

    def counted(self, values):
        runs.append(1)
        return original(self, values)

    monkeypatch.setattr(read_twin._Runner, "run", counted)
    read_twin._MEMO.clear()
    return runs


def _reads(kernel, inputs, dim=4):
    return read_twin.element_reads(kernel, {"dim": dim, "inputs": inputs})


def test_marks_are_reused_per_scalar_value_and_right(twin_runs):
    x, y = wp.array([1.0, 2.0, 3.0, 4.0], dtype=float), wp.zeros(4, dtype=float)
    first = _reads(k.copy_where_scalar, [x, 0, y])
    second = _reads(k.copy_where_scalar, [x, 1, y])
    again = _reads(k.copy_where_scalar, [x, 0, y])
    assert len(twin_runs) == 2  # the third launch reused the first's marks
    assert first["x"].before.tolist() == [True, False, False, False] == again["x"].before.tolist()
    assert first["y"].written.tolist() == [True, False, False, False]
    assert second["x"].before.tolist() == [False, True, False, False]
    assert not first["x"].before.flags.writeable  # shared: nobody may change them
    # another launch shape is another key
    _reads(k.copy_where_scalar, [wp.zeros(8, dtype=float), 0, wp.zeros(8, dtype=float)], dim=8)
    assert len(twin_runs) == 3


def test_marks_that_follow_the_data_are_not_reused(twin_runs):
    y = wp.zeros(2, dtype=float)
    first = _reads(k.copy_where_positive, [wp.array([1.0, -1.0], dtype=float), y], dim=2)
    second = _reads(k.copy_where_positive, [wp.array([-1.0, 1.0], dtype=float), y], dim=2)
    assert len(twin_runs) == 2
    assert first["y"].written.tolist() == [True, False]
    assert second["y"].written.tolist() == [False, True]


def test_a_mutable_argument_is_not_a_key(twin_runs):
    """A wp.vec3 the caller can change in place between launches: the twin runs at each launch."""
    x, y = wp.array([1.0, 2.0, 3.0, 4.0], dtype=float), wp.zeros(4, dtype=float)
    v = wp.vec3(1.0, 0.0, 0.0)
    first = _reads(k.copy_where_vector, [x, v, y])
    v[0] = 3.0
    second = _reads(k.copy_where_vector, [x, v, y])
    assert len(twin_runs) == 2
    assert first["y"].written.tolist() == [True, False, False, False]
    assert second["y"].written.tolist() == [True, True, True, False]


def _hazards(memo: bool, monkeypatch):
    if not memo:
        monkeypatch.setattr(read_twin, "_memo_key", lambda *args: None)  # every launch runs the twin
    read_twin._MEMO.clear()
    x, y = wp.array([1.0, 2.0, 3.0, 4.0], dtype=float, requires_grad=True), wp.zeros(1, dtype=float)
    tape = wp.Tape(check="warn")
    with tape, warnings.catch_warnings():
        warnings.simplefilter("ignore", wp.OverwriteWarning)
        for index in (0, 1, 0):
            wp.launch(k.read_one, dim=1, inputs=[x, index, y])
        wp.launch(k.write_one, dim=1, inputs=[x, 2])  # no launch read x[2]
        wp.launch(k.write_one, dim=1, inputs=[x, 1])  # the second launch read x[1]
    return [
        (h.kind, h.writer.launch, h.reader.launch if h.reader else None) for h in tape.hazards if h.kind != "overwrite"
    ]


def test_reused_marks_report_what_running_the_twin_reports(monkeypatch):
    with_memo = _hazards(True, monkeypatch)
    # x[1] was read by the loop's launches (one read site per line: reported as its first launch, #0); nothing
    # read x[2]: the write at #3 is no hazard.
    assert with_memo == [("stale read", 4, 0)]
    assert with_memo == _hazards(False, monkeypatch)


def test_remembered_marks_stay_within_their_byte_budget(twin_runs, monkeypatch):
    """A scalar that changes at every launch (a time, a step counter) never hits: the entries it leaves must
    not pile up."""
    monkeypatch.setattr(read_twin, "MEMO_BYTES", 2 * 2 * 3 * 4)  # two launches: 2 labels, 3 masks of 4 bytes
    x, y = wp.array([1.0, 2.0, 3.0, 4.0], dtype=float), wp.zeros(4, dtype=float)
    for step in range(10):
        _reads(k.copy_where_scalar, [x, step, y])
        assert read_twin._memo_bytes <= read_twin.MEMO_BYTES
        assert len(read_twin._MEMO) <= 2
    assert len(twin_runs) == 10
