"""Memory the package keeps beyond stock Warp's: what it learns about a kernel goes with the kernel (a kernel
redefined a thousand times and launched on checking and snapshot Tapes leaves no more behind than on Warp's own
Tape), and its scratch pools stay within their budgets whatever shapes the launches take."""

import gc
import os
import weakref

import numpy as np
import pytest
import warp
from helpers import kernels_redefined as k

import warp_zerostore as wp
from warp_zerostore import _compat, access
from warp_zerostore.codegen import pre_twin, replay, replay_records
from warp_zerostore.tape import contents, read_twin

TAPES = {
    "stock": warp.Tape,
    "check": lambda: wp.Tape(check="warn"),
    "snapshot": lambda: wp.Tape(snapshot=True),
}
WARM_UP, REDEFINITIONS = 100, 1000


def _resident_bytes() -> int:
    with open("/proc/self/statm") as statm:
        return int(statm.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")


def _redefined(make_tape) -> dict:
    """Define the kernel anew and launch it on a fresh Tape (forward and backward), `REDEFINITIONS` times; what
    grew between the end of the warm-up and the end: live kernels of the loop, Python objects, resident bytes."""
    x = wp.array([1.0, 2.0, 3.0], dtype=float, requires_grad=True)
    seed = wp.ones(3, dtype=float)
    made = []
    at_warm_up = None
    for n in range(REDEFINITIONS):
        kernel = k.define()
        made.append(weakref.ref(kernel))
        y = wp.zeros(3, dtype=float, requires_grad=True)
        tape = make_tape()
        with tape:
            wp.launch(kernel, dim=3, inputs=[x, y])
        tape.backward(grads={y: seed})
        tape.zero()
        del tape, kernel, y
        if n + 1 == WARM_UP:
            gc.collect()
            at_warm_up = (sum(r() is not None for r in made), len(gc.get_objects()), _resident_bytes())
    gc.collect()
    now = (sum(r() is not None for r in made), len(gc.get_objects()), _resident_bytes())
    assert np.allclose(x.grad.numpy(), 0.0)  # zeroed by the last Tape (the gradients themselves are tested elsewhere)
    return {
        "kernels_alive": now[0],
        "kernels_grown": now[0] - at_warm_up[0],
        "objects_grown": now[1] - at_warm_up[1],
        "resident_grown": now[2] - at_warm_up[2],
    }


@pytest.mark.skipif(not os.path.exists("/proc/self/statm"), reason="resident memory read from /proc")
def test_a_kernel_redefined_a_thousand_times_leaves_no_more_behind_than_on_warps_tape():
    stock = _redefined(TAPES["stock"])
    assert stock["kernels_alive"] <= 2  # Warp keeps the newest (and its module's hasher, the one it last hashed)
    for name in ("check", "snapshot"):
        grown = _redefined(TAPES[name])
        # the package's facts about each kernel (analysis, read twin, runners, plans) went with it
        assert grown["kernels_alive"] <= stock["kernels_alive"] + 1, (name, grown)
        assert grown["kernels_grown"] <= stock["kernels_grown"] + 1, (name, grown)
        # a per-kernel table would keep ~100 objects per kernel: 90,000 over the 900 redefinitions after warm-up
        assert grown["objects_grown"] <= stock["objects_grown"] + 2000, (name, grown, stock)
        assert grown["resident_grown"] <= stock["resident_grown"] + (8 << 20), (name, grown, stock)


def test_the_facts_about_a_living_kernel_are_kept_and_reused(monkeypatch):  # the negative twin
    kernel = k.define()
    built = []
    monkeypatch.setattr(read_twin, "_build", lambda *args: built.append(args) or _build(*args))
    x, y = wp.array([1.0, 2.0], dtype=float, requires_grad=True), wp.zeros(2, dtype=float, requires_grad=True)
    analyses = set()
    for _ in range(3):
        with wp.Tape(check="warn"):
            wp.launch(kernel, dim=2, inputs=[x, y])
        analyses.add(id(access.argument_access(kernel)))
    assert len(built) == 1 and len(analyses) == 1  # made at the first launch, kept on the kernel
    assert {"access", "tape.facts", "read_twin.twins", "read_twin.runners"} <= set(_compat.memo(kernel))


_build = read_twin._build


def test_remembered_marks_go_with_their_twin():
    """Marks remembered for a launch (reused while the kernel's twin lives) go when the twin goes: a kernel defined
    anew at each launch leaves no entry behind, and the bytes counted are the entries'."""
    x, seed = wp.array([1.0, 2.0, 3.0], dtype=float, requires_grad=True), wp.ones(3, dtype=float)
    remembered = 0
    for _ in range(50):
        kernel = k.define()
        y = wp.zeros(3, dtype=float, requires_grad=True)
        tape = wp.Tape(check="warn")
        with tape:
            wp.launch(kernel, dim=3, inputs=[x, y])
        tape.backward(grads={y: seed})
        remembered += any(entry[0]() is not None for entry in read_twin._MEMO.values())
        del tape, kernel, y
    gc.collect()
    assert remembered == 50  # each launch's marks were remembered (the negative twin: kept while the twin lives)
    assert sum(entry[0]() is None for entry in read_twin._MEMO.values()) == 0  # no entry of a twin gone
    assert read_twin._memo_bytes == sum(entry[2] for entry in read_twin._MEMO.values())


def test_a_flagged_kernels_pre_twin_and_build_go_with_it():
    """The snapshot Tape's backward twin of a flagged kernel and its build are kept on the kernel: a redefinition
    drops them with the old kernel, while the living kernel keeps reusing its own (the negative twin)."""
    seed = wp.ones(2, dtype=float)
    refs = []
    for _ in range(4):
        kernel = k.define_updating()
        x = wp.array([1.0, 2.0], dtype=float, requires_grad=True)
        y = wp.array([1.0, 2.0], dtype=float, requires_grad=True)
        z = wp.zeros(2, dtype=float, requires_grad=True)
        tape = wp.Tape(snapshot=True)
        with tape:
            wp.launch(kernel, dim=2, inputs=[x, y, z])
        tape.backward(grads={z: seed})
        assert x.grad.numpy().tolist() == [4.0, 8.0]  # d(y + x)^2/dx at the values the launch read
        twin = pre_twin.pre_backward(kernel)
        assert twin is not None and twin is not kernel and pre_twin.pre_backward(kernel) is twin  # kept, reused
        assert pre_twin.replay_memory(twin) == replay.PRE and pre_twin.replay_memory(kernel) == replay.POST
        assert replay_records.build_of(kernel) is not None
        refs.append((weakref.ref(kernel), weakref.ref(twin)))
        del tape, kernel, twin
    gc.collect()
    alive = [(kernel() is not None, twin() is not None) for kernel, twin in refs]
    assert all(kernel == twin for kernel, twin in alive)  # a twin lives exactly as long as its kernel
    assert sum(kernel for kernel, _ in alive) <= 2  # Warp keeps the newest (and the one its hasher last hashed)


# -- bounded pools


def test_the_twins_scratch_pool_keeps_its_budget_over_many_shapes(monkeypatch):
    monkeypatch.setattr(read_twin, "POOL_BYTES", 4096)
    for size in range(1, 400, 7):  # shapes no other test launches (at least the later ones)
        x = wp.full(size, 1.0, dtype=float, requires_grad=True)
        y = wp.zeros(size, dtype=float, requires_grad=True)
        with wp.Tape(check="warn"):
            wp.launch(k.double, dim=size, inputs=[x, y])
        assert y.numpy().tolist() == [2.0] * size
    assert read_twin._pool_bytes <= 4096  # the pool drops the least recently used when a new entry comes in
    assert (
        sum(arr.size * _compat.dtype_size_bytes(arr.dtype) for arr, _ in read_twin._POOL.values())
        == read_twin._pool_bytes
    )


def test_the_twins_scratch_pool_reuses_a_shape_it_keeps(monkeypatch):  # the negative twin: within budget, reused
    monkeypatch.setattr(read_twin, "POOL_BYTES", 64 << 20)
    x, y = wp.full(7, 1.0, dtype=float, requires_grad=True), wp.zeros(7, dtype=float, requires_grad=True)
    for _ in range(3):
        with wp.Tape(check="warn"):
            wp.launch(k.double, dim=7, inputs=[x, y])
        kept = dict(read_twin._POOL)
    with wp.Tape(check="warn"):
        wp.launch(k.double, dim=7, inputs=[x, y])
    assert dict(read_twin._POOL).keys() == kept.keys()
    assert all(read_twin._POOL[key][0] is kept[key][0] for key in kept)


def test_released_device_copies_keep_their_budget(monkeypatch):
    monkeypatch.setattr(contents, "IN_PLACE_ON_CPU", False)  # the device path: slab copies (a GPU's), on the CPU
    monkeypatch.setattr(contents, "SPARE_BYTES", 1024)
    monkeypatch.setattr(contents, "_SPARE", {})
    monkeypatch.setattr(contents, "_spare_bytes", 0)
    for size in range(1, 300):
        arr = wp.full(size, 1.0, dtype=float)
        known = contents.Known(arr)
        known.release()
        assert contents._spare_bytes <= 1024
    assert sum(len(kept) for kept in contents._SPARE.values()) <= 1024 // 16
