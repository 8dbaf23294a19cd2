"""Check mode's generated read-twin source never sits in a shared, fixed path: it is kept in memory
(``linecache``), so a folder someone else prepared in the temp directory, or a file planted there, is never
read, and nothing is written there."""

import tempfile

import numpy as np
from helpers import kernels_tape_reads as k

import warp_zerostore as wp
from warp_zerostore.tape import read_twin

PLANTED = """
import warp as wp
@wp.kernel
def PLANTED(x: wp.array(dtype=float)):
    pass
"""


def _fresh_twin(kernel):
    for made_for in (kernel, k.first, k.first_of_first, k.store_at):  # the kernel and its helpers
        read_twin.forget(made_for)
    made = read_twin.twin(kernel)
    assert made is not None, "the twin did not build"
    return made[0]


def _snapshot(folder):
    return sorted((str(p.relative_to(folder)), p.read_bytes() if p.is_file() else None) for p in folder.rglob("*"))


def test_a_prepared_temp_folder_with_a_planted_file_is_not_used(tmp_path, monkeypatch):
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    twin = _fresh_twin(k.read_first_through_helpers)
    module_name = twin.func.__module__
    # Someone else prepared the old fixed folder, with the file the old code would have trusted because it existed.
    shared = tmp_path / "warp_zerostore_read_twins"
    shared.mkdir()
    (shared / f"{module_name}.py").write_text(PLANTED)
    (tmp_path / f"{module_name}.py").write_text(PLANTED)
    before = _snapshot(tmp_path)

    twin = _fresh_twin(k.read_first_through_helpers)
    assert twin.adj.filename.startswith("<warp_zerostore read twin "), twin.adj.filename
    assert "PLANTED" not in twin.adj.source and "_wzs_" in twin.adj.source
    assert _snapshot(tmp_path) == before  # nothing written, nothing changed

    # and the twin marks what it should: only a[0] is read
    a = wp.array([1.0, 2.0, 3.0, 4.0], dtype=float)
    b = wp.zeros(4, dtype=float)
    reads = read_twin.element_reads(k.read_first_through_helpers, {"dim": 4, "inputs": [a, b]})
    assert np.asarray(reads["a"].before).tolist() == [True, False, False, False]
