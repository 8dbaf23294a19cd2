"""Every public docstring example of ``warp_zerostore.torch`` runs (each from a file: Warp reads kernel source)."""

import inspect
import re
import runpy
import textwrap

import pytest

pytest.importorskip(
    "torch", reason="warp_zerostore.torch needs PyTorch: pip install 'warp_zerostore[torch]' (torch==2.13.0)"
)

import warp_zerostore.torch as wpt  # noqa: E402
from warp_zerostore.torch import streams  # noqa: E402

DOCUMENTED = {
    "warp_zerostore.torch": wpt,
    "op": wpt.op,
    "kernel_op": wpt.kernel_op,
    "streams.torch_stream": streams.torch_stream,
    "streams.on_torch_device": streams.on_torch_device,
}


def example_of(obj) -> str:
    doc = inspect.getdoc(obj) or ""
    match = re.search(r"::\n\n((?:[ ]{4}.*\n|\n)+)", doc + "\n")
    assert match, f"{obj!r} has no example block"
    return textwrap.dedent(match.group(1))


@pytest.mark.parametrize("name", list(DOCUMENTED))
def test_docstring_example_runs(name, tmp_path):
    path = tmp_path / f"example_{name.replace('.', '_')}.py"
    path.write_text(example_of(DOCUMENTED[name]))
    runpy.run_path(str(path), run_name=f"example_{name.replace('.', '_')}")
