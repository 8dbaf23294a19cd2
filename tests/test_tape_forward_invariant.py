"""The invariant: ``Tape(check=...)`` and ``Tape(snapshot=True)`` never change what the forward
computes. Every kernel of the Tape-safety tests (``helpers/kernels_tape_*.py``) runs as a program of three
launches on one set of arrays (in place: the programs the checks exist for), and once with one array passed under
every label of its type; Newton's Featherstone step and forward kinematics run too (skipped without Newton).
Each program runs without a Tape, on a plain Tape and on checking and snapshotting Tapes; the arrays after the
forward are compared bitwise."""

import warnings

import numpy as np
import pytest
from helpers import kernels_tape_reads, kernels_tape_safety, kernels_tape_styles

import warp_zerostore as wp
from warp_zerostore import _compat

try:
    from helpers import kernels_tape_annotations
except TypeError:  # wp.array2d[float] annotations need warp-lang >= 1.17
    kernels_tape_annotations = None

MODULES = tuple(
    m for m in (kernels_tape_safety, kernels_tape_reads, kernels_tape_styles, kernels_tape_annotations) if m is not None
)
KERNELS = sorted(
    {
        (m.__name__.split(".")[-1], name): obj
        for m in MODULES
        for name, obj in vars(m).items()
        if isinstance(obj, wp.Kernel)
    }.items()
)
TAPES = {
    "plain Tape": lambda: wp.Tape(),
    "check": lambda: wp.Tape(check="warn"),
    "snapshot": lambda: wp.Tape(snapshot=True),
    "check + snapshot": lambda: wp.Tape(check="warn", snapshot=True),
}
N = 16  # array length (rows and columns in 2-D); launches use a quarter of it, so offsets stay in bounds


def arguments(kernel, device, aliased: bool):
    """Launch arguments for every parameter: arrays of deterministic values (int arrays -1: no parent), zero
    for integer scalars (offsets, flags, indices), 0.25 for float scalars. ``aliased``: one array per type."""
    rng = np.random.default_rng(7)
    made, out = {}, []
    for _, t in _compat.kernel_parameters(kernel):
        if _compat.is_array_type(t):
            ndim = _compat.array_type_ndim(t)
            dtype = _compat.array_type_dtype(t)
            key = (ndim, dtype)
            if aliased and key in made:
                out.append(made[key])
                continue
            shape = (N,) * ndim + _compat.element_shape(dtype)
            scalar = np.dtype(_compat.numpy_scalar(dtype))
            values = np.full(shape, -1, dtype=scalar) if scalar.kind == "i" else rng.uniform(0.5, 1.5, shape)
            a = wp.array(values.astype(scalar), dtype=dtype, shape=(N,) * ndim, device=device, requires_grad=True)
            made[key] = a
            out.append(a)
        elif _compat.is_float(t):
            out.append(t(0.25))
        else:
            out.append(0)
    return out


def run(kernel, device, aliased: bool, tape) -> list:
    args = arguments(kernel, device, aliased)
    ndim = max([a.ndim for a in args if isinstance(a, wp.array)] or [1])
    dim = (N // 4,) * ndim
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", wp.OverwriteWarning)
        if tape is None:
            for _ in range(3):
                wp.launch(kernel, dim=dim, inputs=args, device=device)
        else:
            with tape:
                for _ in range(3):
                    wp.launch(kernel, dim=dim, inputs=args, device=device)
    return [a.numpy().copy() for a in args if isinstance(a, wp.array)]


def assert_bitwise(expected: list, got: list, what: str) -> None:
    assert len(expected) == len(got)
    for e, g in zip(expected, got):
        assert e.tobytes() == g.tobytes(), f"{what}: the forward changed\n{e}\n{g}"


@pytest.mark.parametrize("aliased", [False, True], ids=["arrays", "one array per type"])
@pytest.mark.parametrize("name, kernel", KERNELS, ids=[f"{m}.{n}" for (m, n), _ in KERNELS])
def test_check_and_snapshot_never_change_the_forward(name, kernel, aliased, device):
    reference = run(kernel, device, aliased, None)
    for what, make in TAPES.items():
        assert_bitwise(reference, run(kernel, device, aliased, make()), f"{name} on {what}")


def test_every_tape_safety_kernel_is_in_the_invariant():
    assert len(KERNELS) >= 50


# -- Newton


@pytest.fixture(scope="module")
def chain():
    newton = pytest.importorskip("newton", reason="newton is not installed (warp-lang >= 1.17)")
    from helpers import newton_chain  # noqa: PLC0415

    model = newton_chain.chain_model("cpu")
    return newton, newton_chain, model, newton.solvers.SolverFeatherstone(model)


def newton_forward(chain, tape) -> list:
    newton, newton_chain, model, solver = chain
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", wp.OverwriteWarning)
        _, state, out = newton_chain.chain_loss(model, solver, [0.3, -0.4], tape)
        fk = model.state(requires_grad=True)
        if tape is None:
            newton.eval_fk(model, model.joint_q, model.joint_qd, fk)
        else:
            with tape:
                newton.eval_fk(model, model.joint_q, model.joint_qd, fk)
    arrays = []
    for s in (state, out, fk):
        for name in ("joint_q", "joint_qd", "body_q", "body_qd", "body_f"):
            arrays.append(getattr(s, name).numpy().copy())
    return arrays


def test_newton_featherstone_and_forward_kinematics_forward_unchanged(chain):
    reference = newton_forward(chain, None)
    for what, make in TAPES.items():
        assert_bitwise(reference, newton_forward(chain, make()), f"Featherstone step on {what}")
