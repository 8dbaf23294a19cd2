"""Every public docstring example of ``warp_zerostore.jax`` runs, and so does its example script (each from a
file: Warp reads kernel source)."""

import inspect
import pathlib
import re
import runpy
import textwrap

import pytest

pytest.importorskip("jax", reason="warp_zerostore.jax needs JAX: pip install 'warp_zerostore[jax]' (jax==0.10.2)")

from warp_zerostore import _compat  # noqa: E402

if "cpu" not in _compat.jax_ffi_platforms():
    pytest.skip("this warp-lang has no JAX FFI on CPU (jax_callable; CPU from 1.19)", allow_module_level=True)

import warp_zerostore.jax as wpj  # noqa: E402

ROOT = pathlib.Path(__file__).resolve().parents[1]
DOCUMENTED = {
    "warp_zerostore.jax": wpj,
    "op": wpj.op,
    "kernel_op": wpj.kernel_op,
    "jax_kernel": wpj.jax_kernel,
}


def example_of(obj) -> str:
    doc = inspect.getdoc(obj) or ""
    match = re.search(r"::\n\n((?:[ ]{4}.*\n|\n)+)", doc + "\n")
    assert match, f"{obj!r} has no example block"
    return textwrap.dedent(match.group(1))


@pytest.mark.parametrize("name", list(DOCUMENTED))
def test_docstring_example_runs(name, tmp_path):
    path = tmp_path / f"example_jax_{name.replace('.', '_')}.py"
    path.write_text(example_of(DOCUMENTED[name]))
    runpy.run_path(str(path), run_name=f"example_jax_{name.replace('.', '_')}")


def test_example_script_runs():
    runpy.run_path(str(ROOT / "examples" / "jax_double_store.py"), run_name="jax_double_store")
