"""The examples in the installed warp-lang wheel that differentiate, found by reading their source.

An example is in the set when its source (``warp/examples/**/example_*.py``, parsed, not run) records a Tape
(``wp.Tape()``), calls ``.backward(...)`` (Warp's Tape or PyTorch's), launches a kernel's adjoint
(``adjoint=True``), or differentiates a function inside a kernel (``wp.grad(f)``). Nothing here is a list of
names: a new example that differentiates is in the set of the wheel that ships it.

Each example runs with short arguments: the options its own ``argparse`` parser declares, read from the source,
each given the value `SHORT_VALUES` holds for that option name (the others keep the example's default). One that
cannot run here is listed with the reason (`Example.skip`): a device it names that is not a CPU
(``wp.ScopedDevice("cuda:0")``), or a module it imports without a fallback that is not installed.
"""

from __future__ import annotations

import ast
import dataclasses
import importlib.util
import os
import pathlib

#: the value each option gets, by option name: short runs on the CPU, without windows. An option not here keeps
#: the example's default; a flag (``store_true``) is passed where its value here is None.
SHORT_VALUES: dict[str, str | None] = {
    "--device": "cpu",
    "--headless": None,
    # iterations of an optimisation or training loop
    "--train-iters": "2",
    "--num-iters": "2",
    "--max-evals": "2",
    # steps of a simulation
    "--num-frames": "4",
    "--spin-up-steps": "2",
    "--lead-steps": "2",
    "--pressure-iterations": "4",
    # problem sizes
    "--resolution": "10",
    "--nx": "8",
    "--ny": "4",
    "--height": "32",
    "--width": "32",
}

#: the package a module comes in, where the two names differ (for the skip reason)
DISTRIBUTIONS = {"pxr": "usd-core", "PIL": "pillow", "cv2": "opencv-python", "yaml": "pyyaml"}


@dataclasses.dataclass(frozen=True)
class Example:
    """One example of the wheel that differentiates.

    Attributes:
        name: Its path under ``warp/examples/`` without ``.py`` (``optim/example_fluid_checkpoint``).
        path: The file.
        uses: What makes it differentiate (``"Tape"``, ``"backward()"``, ``"adjoint=True"``, ``"wp.grad"``).
        arguments: The short arguments it runs with.
        skip: Why it cannot run here ("" where it can).
    """

    name: str
    path: str
    uses: tuple
    arguments: tuple
    skip: str = ""

    @property
    def short_name(self) -> str:
        """``fluid_checkpoint`` for ``optim/example_fluid_checkpoint``."""
        return self.name.rsplit("/", 1)[-1].removeprefix("example_")


def examples_folder() -> pathlib.Path:
    """``warp/examples`` of the installed warp-lang."""
    spec = importlib.util.find_spec("warp")
    if spec is None or spec.origin is None:
        raise ModuleNotFoundError("warp-lang is not installed")
    return pathlib.Path(spec.origin).parent / "examples"


def find(folder: pathlib.Path | None = None, names: list | None = None) -> list:
    """The examples under ``folder`` (default: the installed wheel's) that differentiate, sorted by name;
    with ``names``, only those whose name or short name is one of them.

    Raises:
        ValueError: A name in ``names`` matches no example that differentiates.
    """
    folder = examples_folder() if folder is None else folder
    found = []
    for path in sorted(folder.rglob("example_*.py")):
        example = read(path, folder)
        if example is not None:
            found.append(example)
    if names:
        wanted = set(names)
        unknown = wanted - {e.name for e in found} - {e.short_name for e in found}
        if unknown:
            raise ValueError(
                f"warp-examples: no example that differentiates is named {', '.join(sorted(unknown))} in {folder} "
                f"(those that do: {', '.join(e.short_name for e in found)})"
            )
        found = [e for e in found if e.name in wanted or e.short_name in wanted]
    return found


def read(path: pathlib.Path, folder: pathlib.Path) -> Example | None:
    """The `Example` in ``path``, or None where it does not differentiate."""
    source = path.read_text(encoding="utf-8")
    tree = ast.parse(source, filename=str(path))
    uses = differentiates(tree)
    if not uses:
        return None
    name = str(path.relative_to(folder).with_suffix("")).replace(os.sep, "/")
    return Example(name, str(path), uses, short_arguments(tree), skip_reason(tree))


def differentiates(tree: ast.AST) -> tuple:
    """What in the source differentiates (see the module docstring), each kind once, in a fixed order."""
    found = set()
    for node in ast.walk(tree):
        if not isinstance(node, ast.Call):
            continue
        name = _called_name(node)
        if name == "Tape":
            found.add("Tape")
        elif name == "backward" and isinstance(node.func, ast.Attribute):
            found.add("backward()")
        elif name == "grad" and _on_warp(node.func) and node.args:
            found.add("wp.grad")  # not warp.fem's ``fem.grad(u, s)``, a field's spatial gradient
        if name in ("launch", "launch_tiled") and any(
            k.arg == "adjoint" and isinstance(k.value, ast.Constant) and k.value.value is True for k in node.keywords
        ):
            found.add("adjoint=True")
    return tuple(kind for kind in ("Tape", "backward()", "adjoint=True", "wp.grad") if kind in found)


def _on_warp(func: ast.AST) -> bool:
    """``wp.X`` / ``warp.X``."""
    return isinstance(func, ast.Attribute) and isinstance(func.value, ast.Name) and func.value.id in ("wp", "warp")


def _called_name(call: ast.Call) -> str:
    func = call.func
    return func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", "")


def declared_options(tree: ast.AST) -> dict:
    """``{option: is_flag}`` for each ``parser.add_argument("--name", ...)`` in the source."""
    options = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and _called_name(node) == "add_argument":
            names = [a.value for a in node.args if isinstance(a, ast.Constant) and isinstance(a.value, str)]
            flag = any(
                k.arg == "action"
                and isinstance(k.value, ast.Constant)
                and k.value.value in ("store_true", "store_false")
                for k in node.keywords
            )
            for option in names:
                if option.startswith("--"):
                    options[option] = flag
    return options


def short_arguments(tree: ast.AST) -> tuple:
    """The command line for a short CPU run: `SHORT_VALUES` for the options the example declares."""
    arguments: list = []
    for option, flag in declared_options(tree).items():
        if option not in SHORT_VALUES:
            continue
        value = SHORT_VALUES[option]
        if value is None:
            if flag:
                arguments.append(option)
        elif not flag:
            arguments += [option, value]
    return tuple(arguments)


def skip_reason(tree: ast.AST) -> str:
    """Why the example cannot run here: a device that is not the CPU named in a call, or a required module that is
    not installed; "" where it can run."""
    device = _hard_coded_device(tree)
    if device is not None:
        text, line = device
        return f"runs on {text!r} (named at line {line}); the runner runs every example on the CPU"
    missing = sorted({m for m in required_modules(tree) if importlib.util.find_spec(m) is None})
    if missing:
        packages = ", ".join(f"{DISTRIBUTIONS.get(m, m)} (module {m!r})" if m in DISTRIBUTIONS else m for m in missing)
        return f"needs {packages}, not installed"
    return ""


def _hard_coded_device(tree: ast.AST) -> tuple | None:
    """``(device, line)`` of the first ``wp.ScopedDevice("cuda...")`` / ``wp.set_device("cuda...")`` call."""
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and _called_name(node) in ("ScopedDevice", "set_device") and node.args:
            first = node.args[0]
            if isinstance(first, ast.Constant) and isinstance(first.value, str) and first.value.startswith("cuda"):
                return first.value, node.lineno
    return None


def required_modules(tree: ast.AST) -> set:
    """Top-level names of the modules the source imports without a fallback: every import, less those inside a
    ``try`` whose ``except ImportError`` handler does not raise again."""
    optional: set = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Try) and any(_handles_import_error(h) and not _raises(h) for h in node.handlers):
            optional.update(id(n) for stmt in node.body for n in ast.walk(stmt))
    required = set()
    for node in ast.walk(tree):
        if id(node) in optional:
            continue
        if isinstance(node, ast.Import):
            required.update(alias.name.split(".")[0] for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            required.add(node.module.split(".")[0])
    return required


def _handles_import_error(handler: ast.ExceptHandler) -> bool:
    names = handler.type.elts if isinstance(handler.type, ast.Tuple) else [handler.type]
    return handler.type is None or any(
        isinstance(n, ast.Name) and n.id in ("ImportError", "ModuleNotFoundError", "Exception") for n in names
    )


def _raises(handler: ast.ExceptHandler) -> bool:
    return any(isinstance(n, ast.Raise) for stmt in handler.body for n in ast.walk(stmt))


__all__ = ["DISTRIBUTIONS", "Example", "SHORT_VALUES", "differentiates", "examples_folder", "find", "read"]
