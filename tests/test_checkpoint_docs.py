"""Every public docstring example of ``warp_zerostore.checkpoint`` runs (each from a file: Warp reads kernel source)."""

import inspect
import re
import runpy
import textwrap

import pytest

pytest.importorskip("checkpoint_schedules", reason="needs the checkpoint extra")

from warp_zerostore import checkpoint  # noqa: E402

DOCUMENTED = {"rollout": checkpoint.rollout, "optimal_step_count": checkpoint.optimal_step_count}


def example_of(obj) -> str:
    doc = inspect.getdoc(obj) or ""
    match = re.search(r"Example::\n\n((?:[ ]{4}.*\n|\n)+)", doc + "\n")
    assert match, f"{obj!r} has no example block"
    return textwrap.dedent(match.group(1))


@pytest.mark.parametrize("name", list(DOCUMENTED))
def test_docstring_example_runs(name, tmp_path):
    path = tmp_path / f"example_checkpoint_{name}.py"
    path.write_text(example_of(DOCUMENTED[name]))
    runpy.run_path(str(path), run_name=f"example_checkpoint_{name}")
