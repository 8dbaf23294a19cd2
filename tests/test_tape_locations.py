"""Locations the package names. Where the Tape says a launch was made: the first frame outside Warp's runtime and
this package. Warp's own examples and tests are programs as a user writes them, so a launch made from them is
located there (and so is one made through warp.fem, called from them); a frame of Warp's runtime never is; a
user's file named ``warp_*.py`` outside Warp's package is the user's (the negative twin). Where a kernel's source
is: an overload of a generic kernel (Warp gives it no line) at its function's line; a kernel built from other
source text says its line is unknown instead of naming line 0."""

import inspect
import os
import warnings

import numpy as np
import pytest
import warp
from helpers import kernels_generic_lint as generic

import warp_zerostore as wp
from warp_zerostore import _compat
from warp_zerostore.tape import tape as tape_module

WARP = os.path.dirname(warp.__file__)
PROGRAM = """\
def program(wp, kernel, x):
    with wp.Tape(check="warn") as tape:
        wp.launch(kernel, dim=1, inputs=[x])
    return tape
"""
LAUNCH_LINE = 3


@wp.kernel
def square_in_place(x: wp.array(dtype=float)):
    i = wp.tid()
    x[i] = x[i] * x[i]


@pytest.mark.parametrize(
    "path, internal",
    [
        (os.path.join(WARP, "_src", "context.py"), True),
        (os.path.join(WARP, "fem", "integrate.py"), True),
        (os.path.join(WARP, "examples", "optim", "example_fluid_checkpoint.py"), False),
        (os.path.join(WARP, "examples", "fem", "utils.py"), False),
        (os.path.join(WARP, "tests", "test_tape.py"), False),
        (os.path.join(os.path.dirname(wp.__file__), "tape", "tape.py"), True),
        ("<frozen runpy>", True),
        (os.path.join(os.sep, "home", "user", "warp_helpers.py"), False),
        (os.path.join(os.sep, "home", "user", "warp", "examples", "mine.py"), False),
        ("warp_helpers.py", False),  # relative: the current folder
    ],
)
def test_which_frames_are_warps_runtime(path, internal):
    assert tape_module._is_internal(path) is internal


def _located_at(filename: str) -> str:
    """The location of the stale read a program compiled as ``filename`` makes."""
    namespace: dict = {}
    exec(compile(PROGRAM, filename, "exec"), namespace)  # noqa: S102 - a program "living" in that file
    x = wp.array(np.array([3.0], dtype=np.float32), requires_grad=True)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", wp.OverwriteWarning)
        tape = namespace["program"](wp, square_in_place, x)
    (hazard,) = tape.hazards
    return hazard.writer.location


def test_a_launch_from_warps_examples_is_located_in_the_example():
    example = os.path.join(WARP, "examples", "optim", "example_not_shipped.py")
    assert _located_at(example) == f"{example}:{LAUNCH_LINE}"


def test_a_launch_from_warps_runtime_is_located_at_its_caller():  # negative twin: Warp's runtime is never the user
    runtime = os.path.join(WARP, "_src", "not_shipped.py")
    location = _located_at(runtime)
    assert location.startswith(f"{os.path.abspath(__file__)}:") and runtime not in location


def test_a_user_file_named_like_warp_is_the_users(tmp_path, monkeypatch):  # negative twin
    user = tmp_path / "warp_user_program.py"
    assert _located_at(str(user)) == f"{user}:{LAUNCH_LINE}"
    assert not any(str(user).startswith(d) for d in _compat.warp_package_dirs())


@pytest.fixture(scope="module")
def lint_warnings():
    """The AdjointWarnings of the generic kernel (an overload) and of the kernel from text, warned where their
    backward first runs."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        for kernel in (generic.generic_square_after, generic.from_text):
            x = wp.ones(4, dtype=float, requires_grad=True)
            y = wp.zeros(1, dtype=float, requires_grad=True)
            tape = wp.Tape()
            with tape:
                wp.launch(kernel, dim=1, inputs=[x, 4, y])
            tape.backward(grads={y: wp.ones(1, dtype=float)})
    return [w for w in caught if issubclass(w.category, wp.AdjointWarning)]


def test_an_overload_of_a_generic_kernel_is_located_at_its_functions_line(lint_warnings):
    overload = next(iter(generic.generic_square_after.overloads.values()))
    lines, first = inspect.getsourcelines(generic.generic_square_after.func)
    assert _compat.kernel_source_line(overload) == (generic.__file__, first)
    warned = [w for w in lint_warnings if "'generic_square_after'" in str(w.message)]
    want = first + next(i for i, text in enumerate(lines) if "GENERIC_WARNED" in text)
    assert [(w.filename, w.lineno) for w in warned] == [(generic.__file__, want)]
    assert f"{generic.__file__}:{first}" in str(warned[0].message)


def test_a_kernel_built_from_other_text_says_its_line_is_unknown(lint_warnings):  # negative twin: no line 0
    assert _compat.kernel_source_line(generic.from_text) == (generic.__file__, None)
    location = _compat.kernel_source_location(generic.from_text)
    assert location == f"{generic.__file__} (line unknown: a kernel built from source text)"
    (warned,) = [w for w in lint_warnings if "'from_text'" in str(w.message)]
    assert warned.filename == f"<kernel 'from_text' built from source text, {generic.__file__}>"
    assert warned.lineno == 5 and location in str(warned.message)  # line 5 of the kernel's own text
