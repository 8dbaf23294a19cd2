"""Importing the package changes nothing for kernels that do not opt in, on every Warp version.

`facade_program.py` runs once with ``import warp`` and once with ``import warp_zerostore as wp``: kernels of 1 to
4 launch dimensions, a helper, a tiled launch. The facade's generated C++ must be byte for byte stock's (Warp
1.17.0 once inferred a 2-D kernel's launch dimension as 1 through the facade, because its codegen tested
``is warp`` on the module the kernel names), and two processes sharing one kernel cache, in either order, must
compute the same results (an unflagged kernel's hash is stock's, so its cache entry must hold stock's code).
"""

from __future__ import annotations

import json
import pathlib
import subprocess
import sys

import pytest

PROGRAM = pathlib.Path(__file__).with_name("facade_program.py")

EXPECTED_GRID2 = [[10 * i + j for j in range(4)] for i in range(2)]


def _run(kind: str, cache: pathlib.Path) -> dict:
    done = subprocess.run(
        [sys.executable, str(PROGRAM), kind, str(cache)], capture_output=True, text=True, timeout=600, check=False
    )
    assert done.returncode == 0, f"{kind}: {done.stderr[-3000:]}"
    return json.loads(done.stdout.strip().splitlines()[-1])


def _sources(cache: pathlib.Path) -> dict:
    """{generated file name: text} of every C++ (and CUDA) source Warp wrote into the cache."""
    return {p.name: p.read_text() for p in cache.rglob("*") if p.suffix in (".cpp", ".cu")}


@pytest.fixture(scope="module")
def separate(tmp_path_factory):
    """Stock and facade, each with a cache of its own."""
    out = {}
    for kind in ("stock", "facade"):
        cache = tmp_path_factory.mktemp(f"cache_{kind}")
        out[kind] = (_run(kind, cache), _sources(cache))
    return out


def test_the_facade_computes_what_stock_computes_in_every_launch_dimension(separate):
    stock, _ = separate["stock"]
    facade, _ = separate["facade"]
    assert stock["grid2"] == EXPECTED_GRID2
    assert facade == stock


def test_an_unflagged_kernels_generated_code_is_stocks_byte_for_byte_up_to_block_order(separate):
    _, stock = separate["stock"]
    _, facade = separate["facade"]
    assert stock, "no generated source found in the kernel cache"
    assert sorted(facade) == sorted(stock)  # same module hashes: same file names
    for name in stock:
        if facade[name] != stock[name]:
            # Some releases (1.13) order a module's kernels differently from run to run, stock against stock too:
            # the same blocks in another order are the same code.
            assert sorted(facade[name].split("\n\n")) == sorted(stock[name].split("\n\n")), name


@pytest.mark.parametrize("order", [("stock", "facade"), ("facade", "stock")], ids=["stock first", "facade first"])
def test_a_shared_kernel_cache_serves_both_with_the_same_results(tmp_path, order):
    first = _run(order[0], tmp_path)
    second = _run(order[1], tmp_path)
    assert first["grid2"] == EXPECTED_GRID2
    assert second == first
