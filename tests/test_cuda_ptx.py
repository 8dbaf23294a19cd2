"""The CUDA path: flagged kernels compile to PTX with NVRTC, no GPU needed, and the zeroing store is there."""

import pathlib
import re

import pytest
from helpers import kernels_ptx, kernels_ptx_tiles

import warp_zerostore as wp


def compile_to_ptx(module, out):
    try:
        wp.compile_aot_module(module, device=None, arch=[75, 90], module_dir=str(out), use_ptx=True)
    except Exception as error:  # noqa: BLE001
        if "nvrtc" in str(error).lower() or "cuda" in str(error).lower():
            pytest.skip(f"this Warp build cannot compile CUDA here: {error}")
        raise
    return out


@pytest.fixture(scope="module")
def aot_output(tmp_path_factory):
    return compile_to_ptx(kernels_ptx, tmp_path_factory.mktemp("ptx"))


@pytest.fixture(scope="module")
def aot_tiles(tmp_path_factory):
    return compile_to_ptx(kernels_ptx_tiles, tmp_path_factory.mktemp("ptx_tiles"))


def _entries(ptx: str) -> dict:
    parts = re.split(r"\.entry\s+", ptx)[1:]
    return {part.split("(")[0].strip(): part for part in parts}


def test_cuda_source_uses_the_mode_adjoints(aot_output):
    (cu,) = pathlib.Path(aot_output).glob("*.cu")
    source = cu.read_text()
    assert "wp::zs::adj_array_store_zero(" in source  # ptx_zero's helper variant
    assert "wp::zs::adj_array_store_accumulate(" in source
    assert "wp::zs::adj_array_store_slot_zero(" in source  # the component store
    assert "#define WP_ZS_HAS_RETAIN_GRAD" in source


@pytest.mark.parametrize("arch", [75, 90])
def test_ptx_backward_of_zero_kernel_stores_zeros(aot_output, arch):
    (ptx,) = pathlib.Path(aot_output).glob(f"*.sm{arch}.ptx")
    entries = _entries(ptx.read_text())
    zero = next(body for name, body in entries.items() if name.startswith("ptx_zero") and name.endswith("backward"))
    accumulate = next(
        body for name, body in entries.items() if name.startswith("ptx_accumulate") and name.endswith("backward")
    )
    # Same kernels but for the mode: the zeroing adjoints add a global store for each of the two stores
    # (y through the helper, and v[i].x); the accumulating ones only read the gradient buffer.
    stores = [len(re.findall(r"\bst\.global\.", body)) for body in (zero, accumulate)]
    assert stores[0] >= stores[1] + 2, stores


@pytest.mark.parametrize("arch", [75, 90])
def test_ptx_tile_store_zeroes(aot_tiles, arch):
    (cu,) = pathlib.Path(aot_tiles).glob("*.cu")
    source = cu.read_text()
    assert "wp::zs::adj_tile_store_zero(" in source and "wp::zs::adj_tile_store_accumulate(" in source
    (ptx,) = pathlib.Path(aot_tiles).glob(f"*.sm{arch}.ptx")
    entries = _entries(ptx.read_text())
    zero = next(b for n, b in entries.items() if n.startswith("ptx_tile_zero") and n.endswith("backward"))
    accumulate = next(b for n, b in entries.items() if n.startswith("ptx_tile_accumulate") and n.endswith("backward"))
    stores = [len(re.findall(r"\bst\.global\.", body)) for body in (zero, accumulate)]
    assert stores[0] > stores[1], stores


# -- the Tape's contents kernels (fingerprints, compares, blends) on CUDA: the same code as on the CPU


@pytest.fixture(scope="module")
def aot_contents(tmp_path_factory):
    from warp_zerostore.tape import contents

    return compile_to_ptx(contents, tmp_path_factory.mktemp("ptx_contents"))


@pytest.mark.parametrize("arch", [75, 90])
def test_the_tape_contents_kernels_compile_for_cuda(aot_contents, arch):
    (ptx,) = pathlib.Path(aot_contents).glob(f"*.sm{arch}.ptx")
    entries = _entries(ptx.read_text())
    for kernel in ("_fingerprint", "_fingerprint_many", "_compare_kernel", "_blend"):
        assert any(name.startswith(kernel + "_") and "forward" in name for name in entries), (kernel, list(entries))
    fingerprint = next(
        body for name, body in entries.items() if name.startswith("_fingerprint_") and "many" not in name
    )
    assert re.search(r"\batom\.global\.add\.u64\b|\bred\.global\.add\.u64\b", fingerprint)  # one add per thread
