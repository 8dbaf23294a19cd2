"""``import warp_zerostore as wp`` gives what ``import warp as wp`` gives, and changes nothing unflagged."""

import pathlib
import tempfile

import numpy as np
import pytest
import warp
from helpers import kernels_plain_warp
from helpers.seed import EXPECTED, run_seed

import warp_zerostore as wp
from warp_zerostore import _compat


def test_every_warp_name_is_here():
    missing = [name for name in dir(warp) if not hasattr(wp, name)]
    assert missing == []
    assert set(dir(warp)) <= set(dir(wp))


@pytest.mark.parametrize("name", ["autograd", "types", "utils", "array", "vec3", "launch", "func", "struct"])
def test_names_resolve_to_warp_objects(name):
    assert getattr(wp, name) is getattr(warp, name)


def test_overrides_are_only_what_the_package_adds():
    assert wp.kernel is not warp.kernel
    assert wp.set_module_options is not warp.set_module_options
    # wp.Tape is Warp's Tape with overwrite checks and snapshots, off by default (tests/test_tape_safety.py)
    assert issubclass(wp.Tape, warp.Tape) and wp.Tape is not warp.Tape
    assert wp.config.version == warp.config.version


def test_config_passes_through_to_warp():
    saved = warp.config.max_unroll
    wp.config.max_unroll = saved + 1
    try:
        assert warp.config.max_unroll == saved + 1
        assert wp.config.max_unroll == saved + 1
    finally:
        wp.config.max_unroll = saved


def test_unknown_name_raises_attribute_error():
    with pytest.raises(AttributeError, match="no attribute 'definitely_not_in_warp'"):
        wp.definitely_not_in_warp  # noqa: B018


def _cpu_source(module) -> tuple[str, str]:
    """(file name, generated C++) of ``module`` compiled ahead of time for the CPU."""
    _compat.mark_modified(module)
    out = pathlib.Path(tempfile.mkdtemp())
    warp.compile_aot_module(module, device="cpu", module_dir=str(out))
    (cpp,) = out.glob("*.cpp")
    return cpp.name, cpp.read_text()


def test_unflagged_module_source_is_byte_identical_to_stock():
    """Same file name (so same module hash) and same C++ with and without the extension installed."""
    module = _compat.kernel_module(kernels_plain_warp.plain_write_2x)
    with_extension = _cpu_source(module)
    with _compat.stock_warp():
        stock = _cpu_source(module)
    assert with_extension[0] == stock[0]
    assert with_extension[1] == stock[1]
    assert "warp_zerostore" not in with_extension[1]


def test_unflagged_gradients_are_stock(device):
    out = run_seed(kernels_plain_warp.plain_write_2x, kernels_plain_warp.plain_write_3x, device)
    for name, value in EXPECTED[None].items():
        np.testing.assert_array_equal(out[name], value)


@pytest.mark.parametrize("flag", [True, False])
def test_process_default_reaches_plain_warp_kernels(flag, device, process_default):
    process_default(flag)
    assert wp.effective_zero_store(kernels_plain_warp.plain_write_2x) is flag
    out = run_seed(kernels_plain_warp.plain_write_2x, kernels_plain_warp.plain_write_3x, device)
    for name, value in EXPECTED[flag].items():
        np.testing.assert_array_equal(out[name], value)


def test_module_option_set_with_plain_warp_reaches_its_kernels(device):
    module = _compat.kernel_module(kernels_plain_warp.plain_write_2x)
    warp.set_module_options({"zero_store": True}, module=kernels_plain_warp)
    try:
        assert wp.effective_zero_store(kernels_plain_warp.plain_write_3x) is True
        out = run_seed(kernels_plain_warp.plain_write_2x, kernels_plain_warp.plain_write_3x, device)
        for name, value in EXPECTED[True].items():
            np.testing.assert_array_equal(out[name], value)
    finally:
        _compat.module_options(module).pop("zero_store", None)
        _compat.mark_modified(module)
