"""Resolving the mode (kernel > module > process), rebuilding when it changes, and clear errors."""

import numpy as np
import pytest
import warp
from helpers import kernels_module_options as kmo
from helpers.seed import EXPECTED, run_seed

import warp_zerostore as wp
from warp_zerostore import _compat
from warp_zerostore.codegen import native


@pytest.fixture
def module_default():
    yield kmo.set_zero_store
    kmo.set_zero_store(None)


def test_precedence_kernel_over_module_over_process(module_default, process_default):
    assert [wp.effective_zero_store(k) for k in (kmo.unflagged_2x, kmo.accumulate_3x)] == [None, False]
    process_default(False)
    assert wp.effective_zero_store(kmo.unflagged_2x) is False
    module_default(True)
    assert wp.effective_zero_store(kmo.unflagged_2x) is True  # module beats process
    assert wp.effective_zero_store(kmo.accumulate_3x) is False  # kernel beats module
    module_default(None)
    assert wp.effective_zero_store(kmo.unflagged_2x) is False  # back to the process default


def test_module_option_is_readable_back(module_default):
    module_default(True)
    assert wp.get_module_options(kmo)["zero_store"] is True


def test_flipping_the_default_rebuilds(device, module_default, process_default):
    """Flip module and process defaults between launches: each launch must run a binary of the new mode."""
    seen = []
    for setter, value in [(process_default, True), (process_default, False), (module_default, True)]:
        setter(value)
        out = run_seed(kmo.unflagged_2x, kmo.unflagged_3x, device)
        seen.append(float(out["x_a"][0]))
        for name, expected in EXPECTED[value].items():
            np.testing.assert_array_equal(out[name], expected, err_msg=f"{name} after setting {value}")
    assert seen == [0.0, 2.0, 0.0]


def test_flagged_kernels_get_their_own_hash():
    hashes = {}
    for flag in (True, False, None):

        @wp.kernel(zero_store=flag, module="unique")
        def same_source(x: wp.array(dtype=float), y: wp.array(dtype=float)):
            y[wp.tid()] = x[wp.tid()]

        hashes[flag] = _compat.kernel_module(same_source)
    assert len({id(m) for m in hashes.values()}) == 3


# ---- errors ------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("value", [1, 0, "yes", 1.0, np.bool_(True)])
def test_non_bool_kernel_flag_is_refused(value):
    with pytest.raises(
        TypeError, match=r"kernel 'test_non_bool_kernel_flag_is_refused.<locals>.bad'.*zero_store must be True"
    ):

        @wp.kernel(zero_store=value)
        def bad(x: wp.array(dtype=float)):
            x[wp.tid()] = 1.0


def test_bad_module_option_is_refused():
    with pytest.raises(TypeError, match=r"set_module_options.*zero_store must be True .*got 'on'"):
        wp.set_module_options({"zero_store": "on"})


def test_bad_process_default_is_refused():
    with pytest.raises(TypeError, match=r"warp_zerostore.config.zero_store: zero_store must be"):
        wp.config.zero_store = 2
    assert wp.config.zero_store is None


def test_bad_option_set_through_plain_warp_is_refused_at_build(device):
    module = _compat.kernel_module(kmo.unflagged_2x)
    warp.set_module_options({"zero_store": "true"}, module=kmo)
    try:
        with pytest.raises(TypeError, match=r"module option of Warp module 'helpers.kernels_module_options'"):
            run_seed(kmo.unflagged_2x, kmo.unflagged_3x, device)
    finally:
        _compat.module_options(module).pop("zero_store", None)
        _compat.mark_modified(module)


def test_flag_without_backward_is_refused():
    with pytest.raises(ValueError, match=r"kernel '.*no_backward'.*enable_backward=False"):

        @wp.kernel(zero_store=True, enable_backward=False)
        def no_backward(x: wp.array(dtype=float)):
            x[wp.tid()] = 1.0


def test_module_default_skips_kernels_without_backward(device, process_default):
    """A default reaching an enable_backward=False kernel is harmless: there is no backward to change."""
    process_default(True)

    @wp.kernel(enable_backward=False)
    def forward_only(x: wp.array(dtype=float)):
        x[wp.tid()] = 4.0

    x = wp.zeros(3, dtype=float, device=device)
    wp.launch(forward_only, dim=3, inputs=[x], device=device)
    np.testing.assert_array_equal(x.numpy(), 4.0)


def test_missing_header_is_a_clear_error(monkeypatch, tmp_path, device):
    monkeypatch.setattr(native, "SEARCH_PATH", [tmp_path])
    with pytest.raises(wp.HeaderNotFoundError, match=r"native header warp_zerostore.h is missing.*Reinstall"):
        native.header_path()

    # module="unique" hashes at decoration (the hash includes the header digest), other modules at launch
    with pytest.raises(wp.HeaderNotFoundError):

        @wp.kernel(zero_store=True, module="unique")
        def needs_header(x: wp.array(dtype=float)):
            x[wp.tid()] = 1.0

        wp.launch(needs_header, dim=1, inputs=[wp.zeros(1, dtype=float, device=device)], device=device)


def test_unsupported_version_is_an_import_error(monkeypatch):
    monkeypatch.setattr(_compat, "WARP_VERSION", (1, 8, 0))
    monkeypatch.setattr(_compat, "WARP_VERSION_TEXT", "1.8.0")
    with pytest.raises(ImportError, match=r"supports warp-lang 1\.9\.1 .*warp-lang 1\.8\.0 is installed"):
        _compat.check_version()
