"""The public API keeps its names: what each package's ``__all__`` promises exists, and nothing else moved."""

import dataclasses
import importlib
import importlib.util
import inspect

import pytest

import warp_zerostore as wp

FACADE = {
    "kernel",
    "config",
    "set_module_options",
    "get_module_options",
    "effective_zero_store",
    "copy_zero_store",
    "jax_kernel",
    "Tape",
    "OverwriteWarning",
    "ReplayWarning",
    "AdjointWarning",
    "OverwriteError",
    "HeaderNotFoundError",
    "read_at_backward",
    "__version__",
}
TESTING = {
    "GradientCheck",
    "GradientMismatch",
    "Launch",
    "Op",
    "Program",
    "array_data",
    "arrays",
    "check_gradients",
    "dtypes",
    "programs",
    "reference",
    "register_profiles",
    "shapes",
    "vjp",
}


def test_facade_all_is_what_the_package_adds():
    assert set(wp.__all__) == FACADE
    for name in wp.__all__:
        assert getattr(wp, name) is not None


def test_facade_names_behave():
    assert wp.config.zero_store is None and wp.config.check == "off"
    assert issubclass(wp.OverwriteWarning, UserWarning) and issubclass(wp.OverwriteError, RuntimeError)
    assert issubclass(wp.ReplayWarning, UserWarning)
    assert issubclass(wp.AdjointWarning, UserWarning)
    assert set(inspect.signature(wp.Tape).parameters) == {"check", "snapshot", "measure"}
    tape = wp.Tape()
    assert tape.hazards == [] and tape.snapshot_bytes == 0
    tape.reset()
    hazard = importlib.import_module("warp_zerostore.tape").Hazard
    assert {"kind", "real"} <= {f.name for f in dataclasses.fields(hazard)} and callable(hazard.message)


def test_everything_else_is_warp():
    import warp

    assert wp.launch is warp.launch and wp.array is warp.array and wp.tid is not None
    assert set(dir(warp)) <= set(dir(wp))


def test_testing_all():
    import warp_zerostore.testing as wpt

    assert TESTING <= set(wpt.__all__)
    for name in wpt.__all__:
        assert hasattr(wpt, name), name
    assert importlib.import_module("warp_zerostore.testing.reference") is wpt.reference


def test_torch_all():
    pytest.importorskip("torch", reason="warp_zerostore.torch needs PyTorch (torch==2.13.0)")
    import warp_zerostore.torch as wpt

    assert {"op", "kernel_op", "DoubleBackwardError"} <= set(wpt.__all__)
    for name in wpt.__all__:
        assert hasattr(wpt, name), name


@pytest.mark.parametrize(
    "module",
    [
        "warp_zerostore.api",
        "warp_zerostore.modes",
        "warp_zerostore.codegen_ext",
        "warp_zerostore.tape_safety",
        "warp_zerostore.whole_array",
    ],
)
def test_old_internal_modules_are_gone(module):
    # warp_zerostore.X resolves to warp.X for Warp's submodules; these names are neither
    with pytest.raises(ImportError):
        importlib.import_module(module)


def test_every_module_says_its_job_on_its_first_line():
    import pkgutil

    import warp_zerostore

    names = [m.name for m in pkgutil.walk_packages(warp_zerostore.__path__, "warp_zerostore.")]
    optional = {"warp_zerostore.torch": "torch", "warp_zerostore.jax": "jax"}  # packages of optional extras
    for name in names:
        needs = next((dep for pkg, dep in optional.items() if name == pkg or name.startswith(pkg + ".")), None)
        if needs is not None and importlib.util.find_spec(needs) is None:
            continue
        module = importlib.import_module(name)
        first = (module.__doc__ or "").strip().splitlines()
        assert first and len(first[0]) > 10, f"{name} has no docstring saying its job"
