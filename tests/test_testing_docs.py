"""The README's "Checking your own kernels" examples and every public docstring example of
warp_zerostore.testing run as written (each as its own module: Warp reads kernel source from files)."""

import importlib.util
import os
import pathlib
import re
import sys
import textwrap

import pytest
from hypothesis import settings

import warp_zerostore.testing as wpt
from warp_zerostore.testing import GradientMismatch, reference

README = pathlib.Path(__file__).resolve().parents[1] / "README.md"


def section():
    text = README.read_text()
    return text[text.index("## Checking your own kernels") : text.index("## PyTorch bridge")]


def load(code, directory, name):
    path = directory / f"{name}.py"
    path.write_text(code)
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    try:
        spec.loader.exec_module(module)
    finally:
        del sys.modules[name]
    return module


def run_tests_in(module):
    for name, value in vars(module).items():
        if name.startswith("test_") and callable(value):
            value()


def test_readme_examples_run(tmp_path):
    blocks = re.findall(r"```python\n(.*?)```", section(), re.S)
    assert len(blocks) == 2
    module = load("\n".join(blocks), tmp_path, "readme_checking_your_own_kernels")
    run_tests_in(module)


def test_readme_failure_message_is_what_accumulate_mode_prints(tmp_path):
    block = re.findall(r"```python\n(.*?)```", section(), re.S)[0]
    printed = re.search(r"```\n(check_gradients\(mode=.*?)```", section(), re.S).group(1).splitlines()
    with pytest.raises(GradientMismatch) as failure:
        load(block.replace("zero_store=True", "zero_store=False"), tmp_path, "readme_accumulate_mode")
    actual = str(failure.value).splitlines()
    assert actual[:5] == printed[:5]
    assert actual[5].startswith(printed[5].rstrip(". "))


PUBLIC = [
    wpt.check_gradients,
    wpt.vjp,
    wpt.Op,
    wpt.Program,
    wpt.dtypes,
    wpt.shapes,
    wpt.array_data,
    wpt.arrays,
    wpt.programs,
    wpt.register_profiles,
    reference.Rule,
    reference.forward,
    reference.backward,
    reference.discarded,
]


def example(obj):
    doc = obj.__doc__ or ""
    match = re.search(r"Example[^\n]*::\n\n((?:[ \t]+[^\n]*\n|\n)+)", doc)
    return textwrap.dedent(match.group(1)) if match else None


@pytest.mark.parametrize("obj", PUBLIC, ids=lambda o: o.__name__)
def test_docstring_example_runs(obj, tmp_path):
    code = example(obj)
    assert code, f"{obj.__qualname__} has no runnable example in its docstring"
    try:
        run_tests_in(load(code, tmp_path, f"docstring_example_{obj.__name__}"))
    finally:
        settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "ci"))
