"""docs/architecture.md is a true map: its Layout names every module of the package and no other, its layers are
the import-linter contract's, and each "where is it decided" entry names a file and a symbol that exist."""

import importlib
import pathlib
import re

ROOT = pathlib.Path(__file__).resolve().parent.parent
PAGE = (ROOT / "docs" / "architecture.md").read_text()


def _section(title: str) -> str:
    start = PAGE.index(f"## {title}\n")
    end = PAGE.find("\n## ", start + 1)
    return PAGE[start : end if end >= 0 else None]


def _code_block(text: str) -> list:
    return text.split("```")[1].strip("\n").splitlines()


def layout_modules() -> set:
    """Module paths (relative to warp_zerostore/) the Layout's tree names; a folder stands for its __init__.py."""
    named, folders = set(), []
    for line in _code_block(_section("Layout")):
        indent = len(line) - len(line.lstrip(" "))
        name = line.split()[0] if line.strip() else ""
        if indent == 0 or not (name.endswith((".py", ".pyi", "/"))):
            continue  # the root, a file outside the package, or a description's continuation
        depth = indent // 2 - 1
        folders = folders[:depth]
        path = "/".join(folders + [name.rstrip("/")])
        if name.endswith("/"):
            folders.append(name.rstrip("/"))
            named.add(path + "/__init__.py")
        else:
            named.add(path)
    return named


def package_modules() -> set:
    package = ROOT / "warp_zerostore"
    return {
        str(p.relative_to(package))
        for p in package.rglob("*")
        if p.suffix in (".py", ".pyi") and "__pycache__" not in p.parts
    }


def test_the_layout_names_every_module_and_no_other():
    named, real = layout_modules(), package_modules()
    assert sorted(real - named) == [], "modules missing from docs/architecture.md's Layout"
    assert sorted(named - real) == [], "docs/architecture.md's Layout names modules that do not exist"


def test_the_layout_parser_sees_a_missing_and_an_extra_module():
    """The negative twin: the test above would fail on a renamed module."""
    named = layout_modules()
    assert "tape/tape.py" in named and "testing/fuzz/programs/oracle.py" in named and "lints/__init__.py" in named
    assert "tape/tapes.py" not in named


def test_the_layers_are_the_import_linter_contract():
    # the one `layers = [...]` list of pyproject.toml (tomllib is Python >= 3.11; the package supports 3.9)
    block = re.search(r"^layers = \[\n(.*?)^\]", (ROOT / "pyproject.toml").read_text(), flags=re.M | re.S).group(1)
    layers = re.findall(r'^\s*"([^"]+)",', block, flags=re.M)
    drawn = [line.strip() for line in _code_block(_section("Layers"))]
    assert drawn == layers and len(layers) >= 8


def test_each_decision_names_a_file_and_a_symbol_that_exist():
    rows = re.findall(r"^\| [^|]+ \| `([^`]+)`: `([^`]+)` \|$", _section("Where is it decided"), flags=re.M)
    assert len(rows) >= 12
    for path, symbol in rows:
        assert (ROOT / path).is_file(), path
        module = importlib.import_module(path.removesuffix(".py").replace("/", "."))
        target = module
        for part in symbol.split("."):
            assert hasattr(target, part), f"{path}: {symbol}"
            target = getattr(target, part)
