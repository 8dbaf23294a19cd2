"""Multi-dimensional launches in the kernel fuzzer (feature "multidim"), and its fixed-seed campaign on every Warp.

A drawn kernel is launched over 1 to 3 dimensions (``i0, i1 = wp.tid()``), its x, xv and y arrays shaped like the
launch; the reference follows (`nodes.shifted`). The flagged kernels of a batch name the facade (``wpz.tid()``),
as a user's ``import warp_zerostore as wp`` does: on warp-lang 1.17.0, a facade that Warp's codegen does not
resolve to ``warp`` computed ``j = 0`` in every thread, and the fixed-seed campaign here, in the fast
suite on all eleven minors, reports that as worse than stock (the last test breaks the fix on purpose).
"""

import numpy as np
import pytest

import warp_zerostore as wp
from warp_zerostore import _compat
from warp_zerostore.testing.fuzz import FEATURES, Case, batch, campaign, oracle, printer, shrink
from warp_zerostore.testing.fuzz.nodes import LAUNCH_SHAPES, Binary, Component, Load, Program, Store, shifted, unravel

INPUTS = {
    "x": np.array([0.5, -0.25, 0.75, 1.0]),
    "xv": np.arange(12.0).reshape(4, 3) / 8,
    "y": np.array([0.1, 0.2, 0.3, 0.4]),
    "acc": np.zeros(2),
}
COT = {"y": np.array([1.0, 2.0, 3.0, 4.0]), "acc": np.array([1.0, -2.0])}
#: y[own] = x[own moved by offset 1] * x[own]; acc[i % 2] += xv[own moved by offset 3][2]
BODY = (
    Store("y", "=", Binary("mul", Load("x", 1), Load("x"))),
    Store("acc", "atomic", Component(Load("xv", 3), 2)),
)
#: What the fast suite's campaign draws: in-place updates, helpers storing into y, branches on the thread's parity.
FEATURES_MULTIDIM = frozenset(
    {"float32", "float64", "stores", "augstores", "readback", "smooth", "locals", "atomics", "branches"}
    | {"helper_stores", "vec3", "multidim"}
)


def test_shifted_moves_each_index_by_its_part_of_the_offset():
    assert [shifted(i, 1, (4,)) for i in range(4)] == [1, 2, 3, 0]  # 1-D: (i + 1) % 4, as before
    # (2, 2): offset 1 is (0, 1): the column moves, the row stays
    assert [unravel(i, (2, 2)) for i in range(4)] == [(0, 0), (0, 1), (1, 0), (1, 1)]
    assert [shifted(i, 1, (2, 2)) for i in range(4)] == [1, 0, 3, 2]
    assert [shifted(i, 2, (2, 2)) for i in range(4)] == [2, 3, 0, 1]  # (1, 0): the row moves
    assert [shifted(i, 3, (2, 1, 2)) for i in range(4)] == [3, 2, 1, 0]  # (1, 0, 1)
    assert all(np.prod(shape) == 4 and shape[-1] > 1 for shapes in LAUNCH_SHAPES.values() for shape in shapes)


@pytest.mark.parametrize("launch", [(4,), (2, 2), (1, 4), (2, 1, 2), (1, 2, 2)])
def test_reference_of_a_multidimensional_launch_by_hand(launch):
    program = Program("float64", (), (), (), BODY, launch=launch)
    ref = oracle.reference(program, {}, INPUTS, COT)
    x, xv = INPUTS["x"], INPUTS["xv"]
    j = [shifted(i, 1, launch) for i in range(4)]  # the element of x thread i loads at offset 1
    np.testing.assert_allclose(ref.outputs["y"], x[j] * x, rtol=1e-12)
    acc = np.zeros(2)
    for i in range(4):
        acc[i % 2] += xv[shifted(i, 3, launch), 2]  # atomics index the flat thread index i (row-major)
    np.testing.assert_allclose(ref.outputs["acc"], acc, rtol=1e-12)
    c = COT["y"]
    want = c * x[j]
    np.add.at(want, j, c * x)  # d(x[j] x[i]) / d x[j]
    np.testing.assert_allclose(ref.grads["x"], want, rtol=1e-6, atol=1e-8)
    np.testing.assert_allclose(ref.grads["y"], np.zeros(4), atol=1e-8)  # stored over


def test_a_multidimensional_kernel_prints_its_indices_and_the_1d_one_as_before():
    text = printer.source(Program("float64", (), (), (), BODY, launch=(2, 1, 2)), {})
    assert "def fuzzed(x: wp.array3d(dtype=wp.float64), xv: wp.array3d(dtype=wp.vec3d), y: wp.array3d(" in text
    assert "acc: wp.array(dtype=wp.float64)" in text  # acc stays 1-D, indexed by the flat thread index
    assert "    i0, i1, i2 = wp.tid()\n    i = (i0 * 1 + i1) * 2 + i2\n" in text
    assert "y[i0, i1, i2] = (x[i0, i1, (i2 + 1) % 2] * x[i0, i1, i2])" in text
    assert "wp.atomic_add(acc, i % 2, xv[(i0 + 1) % 2, i1, (i2 + 1) % 2][2])" in text
    # the negative twin: a 1-D launch prints exactly as the fuzzer always printed it
    flat = printer.source(Program("float64", (), (), (), BODY), {})
    assert "def fuzzed(x: wp.array(dtype=wp.float64), xv: wp.array(dtype=wp.vec3d), y: wp.array(" in flat
    assert "    i = wp.tid()\n" in flat and "i0" not in flat
    assert "y[i] = (x[(i + 1) % 4] * x[i])" in flat


def test_the_flagged_kernels_of_a_batch_name_the_facade():
    case = Case(Program("float32", (), (), (), BODY, launch=(2, 2)), {}, INPUTS, COT)
    text = batch.module_source([case])
    stock, flagged = text.split("@wpz.kernel(zero_store=True)")
    assert "    i0, i1 = wp.tid()" in stock and "wpz." not in stock.split("@wp.kernel")[-1]
    assert "def c0_zero_store(x: wpz.array2d(dtype=wpz.float32)" in flagged and "    i0, i1 = wpz.tid()" in flagged


def test_multidim_is_drawn_when_named_and_shrinks_to_1d():
    on = campaign.draw(20, 3, FEATURES_MULTIDIM)
    dims = [len(c.program.launch) for c in on]
    assert {1, 2, 3} <= set(dims) and sum(d > 1 for d in dims) >= len(on) // 2
    off = campaign.draw(20, 3, FEATURES_MULTIDIM - {"multidim"})
    assert all(c.program.launch == (4,) for c in off)
    tiled = campaign.draw(10, 3, {"float32", "stores", "tiles", "multidim"})
    assert all(c.program.launch == (4,) for c in tiled)  # a tiled launch stays 1-D
    assert "multidim" in FEATURES
    program = next(c.program for c in on if len(c.program.launch) > 1)
    assert f"launch {len(program.launch)}d" in shrink.constructs(program)
    assert any(p.launch == (4,) and p.body == program.body for p in shrink.statement_candidates(program))


def _campaign(tmp_path, kernels=16):
    return campaign.run(
        minutes=60, seed=29, features=FEATURES_MULTIDIM, batch_size=kernels, max_batches=1, shrink_rounds=0,
        out=str(tmp_path),
    )  # fmt: skip


@pytest.mark.matrix
def test_fixed_seed_campaign_with_multidimensional_launches_finds_nothing_unknown(tmp_path):
    """The fast suite's fuzzer campaign, on every minor: 16 kernels, most of them 2-D or 3-D, one build."""
    summary = _campaign(tmp_path)
    assert summary.kernels == 16
    unknown = summary.new + [f for f in summary.worse if f not in summary.new]
    assert not unknown, "\n\n".join(
        f"{f.variant} on the {f.tape} Tape, {f.kind}, {f.status} ({', '.join(f.constructs)}) on Warp "
        f"{wp.config.version}:\n" + printer.source(f.failure.case.program, f.failure.case.thresholds)
        for f in unknown
    )
    drawn = campaign.draw(16, 29 * 100003, FEATURES_MULTIDIM)  # the campaign's one batch
    assert sum(len(c.program.launch) > 1 for c in drawn) >= 8


@pytest.mark.skipif(wp.config.version != "1.17.0", reason="the facade's j = 0 was warp-lang 1.17.0's")
def test_the_campaign_catches_the_facade_resolving_to_itself_on_1_17(tmp_path, monkeypatch):
    """Issue 29's bug put back: without the hook that resolves the facade to ``warp`` in Warp's codegen, a flagged
    2-D kernel gets ``launch_bounds_t<1>`` (j = 0 in every thread), and the campaign says worse than stock."""
    owner, attr = _compat.HOOK_POINTS["Adjoint.resolve_external_reference"]
    monkeypatch.setattr(owner, attr, getattr(owner, attr).__wrapped__)
    summary = _campaign(tmp_path)
    worse = [f for f in summary.worse if not f.explained]
    assert worse and all(f.variant == "zero_store" for f in worse)
    assert any("launch 2d" in f.constructs or "launch 3d" in f.constructs for f in worse)
