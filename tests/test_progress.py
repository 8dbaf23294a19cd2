"""Progress bars: on by default only when stderr is a terminal; ``config.progress`` and a call's ``progress=``
turn them on or off; ``check_gradients`` counts the input elements it differentiates."""

import io

import numpy as np
import pytest
from helpers import kernels_testing as kt

import warp_zerostore as wp
from warp_zerostore import _progress
from warp_zerostore.testing import check_gradients


class Terminal(io.StringIO):
    def isatty(self):
        return True


@pytest.fixture
def progress_setting():
    saved = wp.config.progress
    yield
    wp.config.progress = saved


def test_bars_only_on_a_terminal_by_default(monkeypatch, progress_setting):
    wp.config.progress = None
    monkeypatch.setattr("sys.stderr", io.StringIO())
    assert not _progress.enabled() and isinstance(_progress.bar(10, "x", "step"), _progress._NoBar)
    monkeypatch.setattr("sys.stderr", Terminal())
    assert _progress.enabled()
    assert _progress.enabled(requested=False) is False  # a call's own progress=False wins
    wp.config.progress = False
    assert not _progress.enabled() and _progress.enabled(requested=True)


def test_config_progress_is_validated(progress_setting):
    with pytest.raises(TypeError, match="warp_zerostore.config.progress must be True, False or None"):
        wp.config.progress = "yes"


def test_a_bar_is_tqdm_and_writes_to_stderr(monkeypatch, progress_setting):
    tqdm = pytest.importorskip("tqdm")
    stream = Terminal()
    monkeypatch.setattr("sys.stderr", stream)
    wp.config.progress = True
    bar = _progress.bar(3, "work", "step")
    assert isinstance(bar, tqdm.tqdm)
    bar.close()


def test_check_gradients_counts_the_elements_it_differentiates(monkeypatch, progress_setting):
    made = []

    class Recorder:
        def __init__(self, total, description, unit, requested=None, leave=True):
            made.append(self)
            self.total, self.description, self.updates, self.closed = total, description, 0, False

        def update(self, n=1):
            self.updates += n

        def close(self):
            self.closed = True

    monkeypatch.setattr(_progress, "bar", Recorder)
    x = wp.array(np.array([0.5, -1.25, 2.0]), dtype=float, requires_grad=True)
    y = wp.zeros(3, dtype=float, requires_grad=True)

    def run(x, y):
        wp.launch(kt.SQUARE[("float32", True)], dim=3, inputs=[x, y])

    check_gradients(run, [x, y], wrt=[0])
    (bar,) = made
    assert bar.total == 3 and bar.updates == 3 and bar.closed and "finite differences" in bar.description
