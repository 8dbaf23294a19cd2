"""Every example the documentation shows runs as written: README.md's code blocks, the manual pages' worked
examples, and the ``Example::`` block of every public docstring (each as its own module: Warp reads kernel source
from files)."""

import ast
import inspect
import os
import pathlib
import re
import textwrap
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


def test_the_readme_fits_in_ten_kilobytes():
    """The README invites; docs/ explains and CHANGELOG remembers."""
    readme = pathlib.Path(__file__).resolve().parent.parent / "README.md"
    assert len(readme.read_bytes()) <= 10_000


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
    "checkpoint.plot_schedule": checkpoint.plot_schedule,
    "Tape.visualize": wp.Tape.visualize,
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
    if name == "checkpoint.plot_schedule":
        pytest.importorskip("matplotlib", reason="plot_schedule needs matplotlib: pip install 'warp_zerostore[plot]'")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", wp.OverwriteWarning)
        run_example(docstring_example(obj), tmp_path, f"docstring_{name.replace('.', '_')}")


# -- the API reference: Google-style sections on every public function, method and class


def _public_objects() -> dict:
    """``{public path: object}`` for the facade's own additions and the public names of tape, checkpoint, testing
    (and its reference), and of torch and jax where they import."""
    import importlib

    modules = {
        "warp_zerostore": [n for n in wp.__all__ if n not in ("__version__", "config")],
        "warp_zerostore.tape": wp_tape.__all__,
        "warp_zerostore.checkpoint": checkpoint.__all__,
        "warp_zerostore.testing": [n for n in wpt.__all__ if n != "reference"],
        "warp_zerostore.testing.reference": ["Rule", "forward", "backward", "discarded"],
    }
    if _has_torch():
        modules["warp_zerostore.torch"] = importlib.import_module("warp_zerostore.torch").__all__
        modules["warp_zerostore.torch.streams"] = ["torch_stream", "on_torch_device"]
    if _has_jax_on_cpu():
        modules["warp_zerostore.jax"] = importlib.import_module("warp_zerostore.jax").__all__
    found = {}
    for module, names in modules.items():
        for name in names:
            try:
                obj = getattr(importlib.import_module(module), name)
            except ImportError:  # the hypothesis strategies without hypothesis, plot_schedule needs nothing to import
                continue
            if not callable(obj):
                continue  # constants (KINDS, SCHEDULES): described on their module's page
            found[f"{module}.{name}"] = obj
            if isinstance(obj, type) and not issubclass(obj, BaseException):
                for attr, value in vars(obj).items():
                    if not attr.startswith("_") and (inspect.isfunction(value) or isinstance(value, property)):
                        found[f"{module}.{name}.{attr}"] = value
    return found


PUBLIC_OBJECTS = _public_objects()
SECTION = re.compile(r"^(\w[\w ]*):[ ]*$")


def _sections(doc: str) -> dict:
    """``{title: [entry names]}`` of a Google-style docstring's sections (entries: ``name:`` / ``name (type):``)."""
    sections, current = {}, None
    for line in doc.splitlines():
        title = SECTION.match(line)
        if title:
            current = sections.setdefault(title.group(1), [])
        elif current is not None and line and not line.startswith(" "):
            current = None  # prose after the sections
        elif current is not None:
            entry = re.match(r"^    (\*{0,2}[\w.]+)(?: \([^)]*\))?:", line)
            if entry:
                current.append(entry.group(1))
    return sections


def _parameters(func) -> list:
    names = []
    for p in inspect.signature(func).parameters.values():
        if p.name in ("self", "cls"):
            continue
        prefix = {p.VAR_POSITIONAL: "*", p.VAR_KEYWORD: "**"}.get(p.kind, "")
        names.append(prefix + p.name)
    return names


def _returns_value(func) -> bool:
    """True when the function's own body returns a value (or yields, for a generator)."""
    try:
        tree = ast.parse(textwrap.dedent(inspect.getsource(func)))
    except (OSError, TypeError, SyntaxError):
        return False
    body = tree.body[0]
    nodes = [body]
    while nodes:  # the function's own statements, not those of functions nested in it
        node = nodes.pop()
        for child in ast.iter_child_nodes(node):
            if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef)):
                continue
            if isinstance(child, ast.Return) and child.value is not None:
                if not (isinstance(child.value, ast.Constant) and child.value.value is None):
                    return True
            if isinstance(child, (ast.Yield, ast.YieldFrom)):
                return True
            nodes.append(child)
    return False


def _documented_problems(path: str, obj) -> list:
    doc = inspect.cleandoc(obj.__doc__ or "")  # its own: the reference does not show inherited ones (Warp's)
    if not doc or (isinstance(obj, type) and obj.__doc__ is None):
        return ["no docstring"]
    if isinstance(obj, property) or (isinstance(obj, type) and issubclass(obj, BaseException)):
        return []  # a property says what it is; an exception says when it is raised
    if re.search(r":(func|class|mod|meth|attr|exc|data|obj):`", doc):
        return ["a Sphinx role (:func:`...`): the API reference renders Markdown; use `name`"]
    sections = _sections(doc)
    problems = []
    if isinstance(obj, type):
        params = [] if obj.__init__ is object.__init__ else _parameters(obj.__init__)
        listed = sections.get("Args", []) + sections.get("Attributes", [])
    else:
        params = _parameters(obj)
        listed = sections.get("Args", [])
        if _returns_value(obj) and not ({"Returns", "Yields"} & set(sections)):
            problems.append("returns a value but has no Returns: section")
    missing = [p for p in params if p not in listed]
    if missing:
        problems.append(
            f"parameters not in its Args:{' / Attributes:' if isinstance(obj, type) else ''} section: {missing}"
        )
    unknown = [p for p in sections.get("Args", []) if p not in params]
    if unknown and params:
        problems.append(f"Args: names no parameter of the signature: {unknown}")
    return problems


@pytest.mark.parametrize("path", sorted(PUBLIC_OBJECTS))
def test_public_docstring_has_google_sections(path):
    """Every public function, method and class documents its parameters one by one (Args:, or Attributes: for a
    dataclass), what it returns (Returns:/Yields:), in the Google style the API reference renders."""
    assert _documented_problems(path, PUBLIC_OBJECTS[path]) == []


def test_sections_check_flags_what_is_missing():
    """Negative twin: the check above flags a function without Args:, a missing parameter and a missing Returns:."""

    def undocumented(a, b):
        """Adds."""
        return a + b

    def half(a, *rest):
        """Adds.

        Args:
            a: One.
        """
        return a

    def complete(a, **options):
        """Adds.

        Args:
            a: One.
            **options: More.

        Returns:
            The sum.
        """
        return a

    assert len(_documented_problems("undocumented", undocumented)) == 2
    assert _documented_problems("half", half) == [
        "returns a value but has no Returns: section",
        "parameters not in its Args: section: ['*rest']",
    ]
    assert _documented_problems("complete", complete) == []


PUBLIC_ERRORS = {
    "warp_zerostore": ["OverwriteError", "OverwriteWarning", "ReplayWarning", "AdjointWarning", "HeaderNotFoundError"],
    "warp_zerostore.testing": ["GradientMismatch"],
    "warp_zerostore.checkpoint": ["CheckpointError"],
    "warp_zerostore.torch": ["DoubleBackwardError"],
    "warp_zerostore.jax": ["BridgeError", "DifferentiationError"],
}


@pytest.mark.parametrize("module", sorted(PUBLIC_ERRORS))
def test_errors_print_as_their_public_path(module):
    import importlib

    if module.endswith(".torch") and not _has_torch():
        pytest.skip("warp_zerostore.torch needs PyTorch: pip install 'warp_zerostore[torch]'")
    if module.endswith(".jax") and not _has_jax_on_cpu():
        pytest.skip(f"warp_zerostore.jax {NEEDS_JAX}")
    for name in PUBLIC_ERRORS[module]:
        error = getattr(importlib.import_module(module), name)
        assert f"{error.__module__}.{error.__qualname__}" == f"{module}.{name}"
        assert getattr(importlib.import_module(error.__module__), name) is error  # and it resolves (pickle)
    if module == "warp_zerostore.testing":
        assert repr(GradientMismatch("x")).startswith("GradientMismatch(")
        assert "warp_zerostore.testing.GradientMismatch" in str(type(GradientMismatch("x")))


def test_checkpoint_rollout_is_the_function_and_its_module_is_not_shadowed():
    import importlib
    import sys

    from warp_zerostore.checkpoint import rollout

    assert inspect.isfunction(rollout) and checkpoint.rollout is rollout
    assert "warp_zerostore.checkpoint.rollout" not in sys.modules  # no submodule of that name to shadow
    with pytest.raises(ModuleNotFoundError):
        importlib.import_module("warp_zerostore.checkpoint.rollout")


def test_the_changelog_has_each_kind_of_change_once_per_release():
    """Keep a Changelog: a release (or Unreleased) lists Added, Changed, ... once each, in that order."""
    text = (pathlib.Path(__file__).resolve().parent.parent / "CHANGELOG.md").read_text()
    order = ["Added", "Changed", "Deprecated", "Removed", "Fixed", "Security"]
    releases = re.split(r"^## ", text, flags=re.M)[1:]
    assert releases[0].startswith("[Unreleased]")
    for release in releases:
        kinds = [k for k in re.findall(r"^### (\w+)", release, flags=re.M) if k in order]
        assert len(kinds) == len(set(kinds)), release.splitlines()[0]
        assert kinds == sorted(kinds, key=order.index), release.splitlines()[0]
