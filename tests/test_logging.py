"""Every fallback leaves a record under the ``warp_zerostore`` logger (silent unless logging is configured):
a read twin that failed to build or run, a helper whose source cannot be read, a launch under graph capture."""

import logging

import pytest
import warp
from helpers import kernels_tape_reads as k

import warp_zerostore as wp
from warp_zerostore import _compat, access
from warp_zerostore.tape import read_twin


def test_the_package_logger_has_a_null_handler_and_no_output_by_default():
    logger = logging.getLogger("warp_zerostore")
    assert any(isinstance(h, logging.NullHandler) for h in logger.handlers)


@pytest.fixture
def forgotten():
    """``forgotten(obj, ...)``: the package's facts about those kernels and helpers forgotten (`_compat.memo`), so the
    test makes them anew; forgotten again after it."""
    objects = []

    def forget(*named):
        for obj in named:
            _compat.memo(obj).clear()
            objects.append(obj)

    yield forget
    for obj in objects:
        _compat.memo(obj).clear()


def test_a_twin_that_fails_to_build_is_logged(monkeypatch, caplog, forgotten):
    def broken(kernel):
        raise RuntimeError("no twin today")

    monkeypatch.setattr(read_twin, "_build", broken)
    forgotten(k.read_back_own_write)
    with caplog.at_level(logging.INFO, logger="warp_zerostore"):
        assert read_twin.twin(k.read_back_own_write) is None
    (record,) = [r for r in caplog.records if r.name == "warp_zerostore.tape.read_twin"]
    assert "read_back_own_write" in record.getMessage() and "no twin today" in record.getMessage()


def test_a_twin_that_fails_to_run_is_logged(caplog, forgotten):
    forgotten(k.read_back_own_write)
    with caplog.at_level(logging.INFO, logger="warp_zerostore"):
        assert read_twin.element_reads(k.read_back_own_write, {"inputs": []}) == {}  # no dim: the runner fails
    assert any("did not run" in r.getMessage() for r in caplog.records if r.name.startswith("warp_zerostore"))


def test_a_twin_that_builds_logs_nothing(caplog, forgotten):
    forgotten(k.read_back_own_write)
    with caplog.at_level(logging.DEBUG, logger="warp_zerostore"):
        assert read_twin.twin(k.read_back_own_write) is not None
    assert [r for r in caplog.records if r.name.startswith("warp_zerostore")] == []


def test_a_helper_without_source_is_logged(monkeypatch, caplog, forgotten):
    def unreadable(func):
        raise OSError("could not get source code")

    monkeypatch.setattr(access._compat, "function_tree", unreadable)
    forgotten(k.first)
    with caplog.at_level(logging.INFO, logger="warp_zerostore"):
        assert access._helper_access(k.first, "a", 0) is None
    assert any("source not readable" in r.getMessage() for r in caplog.records if r.name == "warp_zerostore.access")


@pytest.mark.skipif(
    tuple(int(p) for p in warp.__version__.split(".")[:2]) < (1, 19), reason="CPU graph capture needs warp-lang >= 1.19"
)
def test_a_launch_under_capture_is_logged(caplog):
    x = wp.array([2.0], dtype=float, requires_grad=True)
    with caplog.at_level(logging.INFO, logger="warp_zerostore"):
        with pytest.warns(wp.OverwriteWarning):
            with wp.Tape(check="warn"):
                with wp.ScopedCapture(device="cpu"):
                    wp.launch(k.square_in_place, dim=1, inputs=[x], device="cpu")
    assert any("graph capture" in r.getMessage() for r in caplog.records if r.name == "warp_zerostore.tape.tape")
