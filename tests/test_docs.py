"""Every example the documentation shows runs as written: README.md's code blocks, the manual pages' worked
examples, and the ``Example::`` block of every public docstring (each as its own module: Warp reads kernel source
from files)."""

import os
import warnings

import pytest
from helpers.examples import docstring_example, markdown_blocks, run_as_module
from hypothesis import settings

import warp_zerostore as wp
import warp_zerostore.tape as wp_tape
import warp_zerostore.testing as wpt
from warp_zerostore import access, checkpoint, options
from warp_zerostore.testing import GradientMismatch, reference


def _has_torch() -> bool:
    try:
        import torch  # noqa: F401
    except ImportError:
        return False
    return True


NEEDS_JAX = "needs JAX and Warp's JAX FFI on CPU (warp-lang 1.19): pip install 'warp_zerostore[jax]'"


def _has_jax_on_cpu() -> bool:
    try:
        import jax  # noqa: F401
    except ImportError:
        return False
    from warp_zerostore import _compat

    return "cpu" in _compat.jax_ffi_platforms()


def run_example(code, tmp_path, name):
    """Run an example module and the ``test_*`` functions it defines; restore the hypothesis profile after."""
    try:
        module = run_as_module(code, tmp_path, name)
        for attr, value in vars(module).items():
            if attr.startswith("test_") and callable(value):
                value()
    finally:
        settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "ci"))


# -- README.md


README_BLOCKS = markdown_blocks("README.md")


@pytest.mark.parametrize("index", range(len(README_BLOCKS)))
def test_readme_example_runs(index, tmp_path):
    code = README_BLOCKS[index]
    if "import torch" in code and not _has_torch():
        pytest.skip("this README example needs PyTorch: pip install 'warp_zerostore[torch]' (torch==2.13.0)")
    if "import jax" in code and not _has_jax_on_cpu():
        pytest.skip(f"this README example {NEEDS_JAX}")
    run_example(code, tmp_path, f"readme_example_{index}")


# -- the manual pages' worked examples


def test_testing_page_examples_run(tmp_path):
    blocks = markdown_blocks("docs/testing.md")
    assert len(blocks) == 2
    run_example("\n".join(blocks), tmp_path, "docs_testing_examples")


def test_testing_page_failure_message_is_what_accumulate_mode_prints(tmp_path):
    block = markdown_blocks("docs/testing.md")[0]
    printed = markdown_blocks("docs/testing.md", language="")[0].splitlines()
    with pytest.raises(GradientMismatch) as failure:
        run_as_module(block.replace("zero_store=True", "zero_store=False"), tmp_path, "docs_accumulate_mode")
    actual = str(failure.value).splitlines()
    assert actual[:5] == printed[:5]
    assert actual[5].startswith(printed[5].rstrip(". "))


def test_torch_page_views_example_runs(tmp_path):
    """docs/torch.md's example of views of one temporary: the second backward and gradcheck agree."""
    if not _has_torch():
        pytest.skip("this example needs PyTorch: pip install 'warp_zerostore[torch]' (torch==2.13.0)")
    (code,) = [block for block in markdown_blocks("docs/torch.md") if "def neighbours" in block]
    run_example(code, tmp_path, "docs_torch_views")


def test_tape_safety_page_example_warns(tmp_path):
    (code,) = markdown_blocks("docs/tape-safety.md")[:1]
    with pytest.warns(wp.OverwriteWarning):
        run_as_module(code, tmp_path, "docs_tape_safety")


# -- public docstrings


PUBLIC = {
    "kernel": options.kernel,
    "set_module_options": options.set_module_options,
    "get_module_options": options.get_module_options,
    "effective_zero_store": options.effective_zero_store,
    "effective_mode": options.effective_mode,
    "copy_zero_store": options.copy_zero_store,
    "Tape": wp.Tape,
    "access.argument_access": access.argument_access,
    "access.fully_stored": access.fully_stored,
    "tape.hazard_listener": wp_tape.hazard_listener,
    "testing.check_gradients": wpt.check_gradients,
    "testing.vjp": wpt.vjp,
    "testing.Op": wpt.Op,
    "testing.Program": wpt.Program,
    "testing.dtypes": wpt.dtypes,
    "testing.shapes": wpt.shapes,
    "testing.array_data": wpt.array_data,
    "testing.arrays": wpt.arrays,
    "testing.programs": wpt.programs,
    "testing.kernels": wpt.kernels,
    "testing.register_profiles": wpt.register_profiles,
    "testing.reference.Rule": reference.Rule,
    "testing.reference.forward": reference.forward,
    "testing.reference.backward": reference.backward,
    "testing.reference.discarded": reference.discarded,
    "checkpoint.rollout": checkpoint.rollout,
    "checkpoint.optimal_step_count": checkpoint.optimal_step_count,
}
TORCH_PUBLIC = ["torch", "torch.op", "torch.kernel_op", "torch.streams.torch_stream", "torch.streams.on_torch_device"]


def _torch_public(name):
    import warp_zerostore.torch as wpt_torch
    from warp_zerostore.torch import streams

    return {
        "torch": wpt_torch,
        "torch.op": wpt_torch.op,
        "torch.kernel_op": wpt_torch.kernel_op,
        "torch.streams.torch_stream": streams.torch_stream,
        "torch.streams.on_torch_device": streams.on_torch_device,
    }[name]


JAX_PUBLIC = ["jax", "jax.op", "jax.kernel_op", "jax.jax_kernel"]


def _jax_public(name):
    import warp_zerostore.jax as wpj

    return {"jax": wpj, "jax.op": wpj.op, "jax.kernel_op": wpj.kernel_op, "jax.jax_kernel": wpj.jax_kernel}[name]


@pytest.mark.parametrize("name", list(PUBLIC) + TORCH_PUBLIC + JAX_PUBLIC)
def test_docstring_example_runs(name, tmp_path):
    if name.startswith("torch"):
        if not _has_torch():
            pytest.skip("warp_zerostore.torch needs PyTorch: pip install 'warp_zerostore[torch]' (torch==2.13.0)")
        obj = _torch_public(name)
    elif name.startswith("jax"):
        if not _has_jax_on_cpu():
            pytest.skip(f"warp_zerostore.jax {NEEDS_JAX}")
        obj = _jax_public(name)
    else:
        obj = PUBLIC[name]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", wp.OverwriteWarning)
        run_example(docstring_example(obj), tmp_path, f"docstring_{name.replace('.', '_')}")
