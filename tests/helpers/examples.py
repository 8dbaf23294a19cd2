"""Runs documentation examples as written: code blocks of Markdown pages and the ``Example:`` sections of docstrings.

Each example runs as its own module from a file, because Warp reads a kernel's source from its file.
"""

import importlib.util
import inspect
import pathlib
import re
import sys
import textwrap

ROOT = pathlib.Path(__file__).resolve().parents[2]


def markdown_blocks(page: str, language: str = "python") -> list:
    """The fenced ``language`` blocks (``""``: blocks without a language) of a Markdown page of the repository."""
    blocks, current, open_language = [], [], None
    for line in (ROOT / page).read_text(encoding="utf-8").splitlines():
        fence = re.match(r"^```(\w*)\s*$", line)
        if fence and open_language is None:
            open_language, current = fence.group(1), []
        elif fence:
            if open_language == language:
                blocks.append("\n".join(current) + "\n")
            open_language = None
        elif open_language is not None:
            current.append(line)
    return blocks


def docstring_example(obj) -> str:
    """The code of the fenced ``python`` block in the ``Example:`` section of an object's docstring (Google style,
    as the API reference renders it); fails when there is none."""
    doc = inspect.getdoc(obj) or ""
    match = re.search(r"^Example:\n(?:[ ]{4}.*\n|\n)*?([ ]{4})```python\n(.*?)^\1```", doc + "\n", re.M | re.S)
    assert match, f"{getattr(obj, '__qualname__', obj)!r} has no runnable example in its docstring"
    return textwrap.dedent(match.group(2))


def run_as_module(code: str, directory: pathlib.Path, name: str):
    """Write ``code`` to ``directory/name.py`` and execute it as the module ``name``; returns the module."""
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
