#!/bin/sh
# `make wheel-check`: the package as a user gets it. From a clean export of HEAD (committed files only), build the
# sdist and, from the sdist, the wheel (`python -m build`); install the wheel non-editable in a fresh venv; then,
# from a folder that holds no copy of the package: `warp-zerostore --version`, `python -m warp_zerostore demo`,
# the README's examples, the CLI's exit statuses, the temp-folder test, mypy and pyright on the user scripts.
set -eu
PYTHON=${PYTHON:-python3}
WARP=${WARP:-1.19.0}
ROOT=$(cd "$(dirname "$0")/.." && pwd)
CONSTRAINTS=$ROOT/${CONSTRAINTS:-constraints/ci.txt}
WORK=$(mktemp -d "${TMPDIR:-/tmp}/wheel_check.XXXXXX")
trap 'rm -rf "$WORK"' EXIT

echo "== clean export of HEAD ($(git -C "$ROOT" rev-parse --short HEAD)) into $WORK/src"
mkdir "$WORK/src"
git -C "$ROOT" archive HEAD | tar -x -C "$WORK/src"

echo "== sdist, then the wheel from the sdist"
"$PYTHON" -m venv "$WORK/build-venv"
"$WORK/build-venv/bin/python" -m pip install -q build
"$WORK/build-venv/bin/python" -m build -q --outdir "$WORK/dist" "$WORK/src" >/dev/null
ls "$WORK/dist"
SDIST=$(ls "$WORK"/dist/*.tar.gz)
WHEEL=$(ls "$WORK"/dist/*.whl)
tar -tzf "$SDIST" > "$WORK/sdist-files.txt"
for f in tests/conftest.py tests/helpers/__init__.py docs/architecture.md CHANGELOG.md LICENSE native/warp_zerostore.h; do
    grep -q "/$f\$" "$WORK/sdist-files.txt" || { echo "sdist lacks $f"; exit 1; }
done
"$WORK/build-venv/bin/python" -m zipfile -l "$WHEEL" > "$WORK/wheel-files.txt"
for f in warp_zerostore/py.typed warp_zerostore/__init__.pyi warp_zerostore/config.pyi warp_zerostore/native/warp_zerostore.h licenses/LICENSE; do
    grep -q "$f" "$WORK/wheel-files.txt" || { echo "wheel lacks $f"; exit 1; }
done

echo "== fresh venv, the wheel installed non-editable"
"$PYTHON" -m venv "$WORK/venv"
V=$WORK/venv/bin
"$V/python" -m pip install -q -c "$CONSTRAINTS" "$WHEEL[test,lint]" "warp-lang==$WARP"

echo "== from another folder"
mkdir "$WORK/run"
cp -r "$WORK/src/tests" "$WORK/src/docs" "$WORK/src/examples" "$WORK/src/README.md" "$WORK/run/"
cd "$WORK/run"
"$V/python" -c "import warp_zerostore, sys; p = warp_zerostore.__file__; print(p); sys.exit('not the installed wheel' if '$WORK/venv' not in p else 0)"
"$V/warp-zerostore" --version
"$V/python" -m warp_zerostore --version
"$V/python" -m warp_zerostore demo
"$V/python" -m pytest -q -p no:cacheprovider tests/test_cli.py tests/test_read_twin_source.py tests/test_check_command.py \
    "tests/test_docs.py::test_readme_example_runs"
"$V/python" tests/typing/check_types.py --outside
echo "== wheel check passed"
