"""Draw the pictures of docs/pictures.md into docs/generated/ (git-ignored); `make docs` runs this first.

Each Python block of docs/pictures.md runs as written, as its own module in a scratch folder (Warp reads kernel
source from files); what it writes is rendered there: ``tape.dot`` with GraphViz's ``dot`` (an SVG),
``schedule.svg`` copied as it is.
"""

from __future__ import annotations

import importlib.util
import os
import pathlib
import re
import shutil
import subprocess
import sys
import tempfile
import warnings

DOCS = pathlib.Path(__file__).resolve().parent
OUT = DOCS / "generated"
# What each block writes -> the picture docs/pictures.md shows.
PICTURES = {"tape.dot": "tape_hazards.svg", "schedule.svg": "rollout_schedule.svg"}


def blocks(page: pathlib.Path) -> list:
    return re.findall(r"^```python\n(.*?)^```", page.read_text(encoding="utf-8"), re.M | re.S)


def run_block(code: str, folder: pathlib.Path, name: str) -> None:
    path = folder / f"{name}.py"
    path.write_text(code, encoding="utf-8")
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    cwd = os.getcwd()
    os.chdir(folder)  # the block writes its file where it stands
    try:
        spec.loader.exec_module(module)
    finally:
        os.chdir(cwd)
        del sys.modules[name]


def render(written: pathlib.Path, target: pathlib.Path) -> None:
    if written.suffix == ".dot":
        dot = shutil.which("dot")
        if dot is None:
            raise SystemExit(
                "docs/pictures.py: GraphViz's `dot` is not installed; `make docs` installs it with apt-get when run "
                "as root, otherwise: apt-get install graphviz (or brew install graphviz)"
            )
        subprocess.run([dot, "-Tsvg", str(written), "-o", str(target)], check=True)
    else:
        shutil.copyfile(written, target)


def main() -> None:
    OUT.mkdir(exist_ok=True)
    with tempfile.TemporaryDirectory() as scratch:
        folder = pathlib.Path(scratch)
        for index, code in enumerate(blocks(DOCS / "pictures.md")):
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                run_block(code, folder, f"pictures_block_{index}")
        for written, picture in PICTURES.items():
            render(folder / written, OUT / picture)
            print(f"docs/pictures.py: wrote {(OUT / picture).relative_to(DOCS.parent)}")


if __name__ == "__main__":
    main()
