"""Bridged ops inside PyTorch 2's machinery: torch.compile (fullgraph, eager / aot_eager / inductor backends),
torch.func (grad, vjp, vmap, vmap of grad), torch.library.opcheck, recompilation, errors under compile.

Each compiled result is compared with the same op in eager mode and with PyTorch autograd of the same math.
torch.compile is slow on a small CPU: the compiled tests are few and their inputs small.
"""

import shutil
from typing import Any

import pytest

torch = pytest.importorskip(
    "torch", reason="warp_zerostore.torch needs PyTorch: pip install 'warp_zerostore[torch]' (torch 2.5 to 2.15)"
)

from helpers import kernels_torch as K  # noqa: E402
from helpers import kernels_torch_compile as KC  # noqa: E402
from helpers.seed import EXPECTED  # noqa: E402

import warp_zerostore as wp  # noqa: E402
import warp_zerostore.torch as wpt  # noqa: E402
from warp_zerostore.torch import custom_ops  # noqa: E402

F32, F64 = torch.float32, torch.float64

seed = wpt.kernel_op(K.seed, outputs={"y": "x0"})
two_outputs = wpt.kernel_op(K.two_outputs, outputs={"y": "x", "z": "x", "positive": "x"})


@wpt.op(outputs={"y": "x"})
def cube_scaled(x: wp.array(dtype=Any), s: float, y: wp.array(dtype=Any)):
    """y = s * x^3 through a temporary that carries a gradient: backward runs this again on a wp.Tape."""
    t = wp.zeros_like(x, requires_grad=True)
    wp.launch(KC.square_into, dim=x.shape, inputs=[x, t])
    wp.launch(KC.scaled_product, dim=x.shape, inputs=[t, x, s, y])


def _seed_program(flag):
    write_2x, write_3x, _ = K.OVERWRITING[flag]

    @wpt.op(outputs={"y": "a"}, name=f"compiled_seed_program[zero_store={flag}]")
    def seed_program(a: wp.array(dtype=wp.float64), b: wp.array(dtype=wp.float64), y: wp.array(dtype=wp.float64)):
        wp.launch(write_2x, dim=a.shape, inputs=[a, y])
        wp.launch(write_3x, dim=b.shape, inputs=[b, y])

    return seed_program


SEED_PROGRAM = {flag: _seed_program(flag) for flag in (True, False)}


def seed_math(x0, x1, x2):
    return (x0 * x1 * x2) ** 2


def model(x, w):
    """A kernel_op feeding an op with a temporary, then PyTorch ops."""
    return (cube_scaled(seed(x, w, w), 0.5) * w).sum()


def model_math(x, w):
    return (0.5 * seed_math(x, w, w) ** 3 * w).sum()


def leaves(*tensors):
    return [t.detach().clone().requires_grad_() for t in tensors]


def value_and_grads(fn, args):
    args = leaves(*args)
    loss = fn(*args)
    loss.backward()
    return loss.detach(), [a.grad for a in args]


@pytest.fixture(autouse=True)
def fresh_dynamo():
    torch._dynamo.reset()  # each test compiles from scratch: no cache entry of another test's backend
    yield
    torch._dynamo.reset()


# ------------------------------------------------------------------------------------------------------------
# torch.compile(fullgraph=True): no graph break, forward and backward equal eager


BACKENDS = ["eager", "aot_eager"]
if shutil.which("g++") or shutil.which("clang++"):
    BACKENDS.append("inductor")  # Inductor's CPU code needs a C++ compiler


@pytest.mark.parametrize("backend", BACKENDS)
def test_compiled_model_equals_eager(backend):
    g = torch.Generator().manual_seed(0)
    args = [torch.rand(6, generator=g, dtype=F64) + 0.5 for _ in range(2)]
    want_value, want_grads = value_and_grads(model, args)
    ref_value, ref_grads = value_and_grads(model_math, args)
    torch.testing.assert_close(want_value, ref_value)
    compiled = torch.compile(model, fullgraph=True, backend=backend)  # fullgraph: a graph break is an error
    value, grads = value_and_grads(compiled, args)
    torch.testing.assert_close(value, want_value, rtol=1e-12, atol=0)
    for got, want, ref in zip(grads, want_grads, ref_grads):
        torch.testing.assert_close(got, want, rtol=1e-12, atol=0)
        torch.testing.assert_close(got, ref)


def test_compiled_zero_store_semantics_kept():
    """The seed program (y = 2a, then overwritten y = 3b) compiled: zero_store=True gives 0 and 3, the
    accumulating kernels 2 and 3, exactly as in eager and on a plain wp.Tape."""
    for flag, op in SEED_PROGRAM.items():
        compiled = torch.compile(lambda a, b, op=op: op(a, b).sum(), fullgraph=True, backend="aot_eager")
        a, b = leaves(torch.ones(4, dtype=F64), torch.ones(4, dtype=F64))
        compiled(a, b).backward()
        assert torch.equal(a.grad, torch.full_like(a, EXPECTED[flag]["x_a"]))
        assert torch.equal(b.grad, torch.full_like(b, EXPECTED[flag]["x_b"]))
    assert EXPECTED[True]["x_a"] == 0.0 and EXPECTED[True]["x_b"] == 3.0


def test_new_shapes_recompile_correctly_without_new_registrations():
    counter = torch._dynamo.testing.CompileCounterWithBackend("aot_eager")
    compiled = torch.compile(model, fullgraph=True, backend=counter)
    registered = len(custom_ops._names_taken)
    for n in (3, 5, 8, 13):
        g = torch.Generator().manual_seed(n)
        args = [torch.rand(n, generator=g, dtype=F64) + 0.5 for _ in range(2)]
        value, grads = value_and_grads(compiled, args)
        want_value, want_grads = value_and_grads(model, args)
        torch.testing.assert_close(value, want_value, rtol=1e-12, atol=0)
        for got, want in zip(grads, want_grads):
            torch.testing.assert_close(got, want, rtol=1e-12, atol=0)
    assert counter.frame_count <= 2  # the first shape, then one dynamic-shape graph reused for the rest
    assert len(custom_ops._names_taken) == registered  # calls never register


# ------------------------------------------------------------------------------------------------------------
# Errors under compile are the bridge's own, raised when the op runs


def _f32(*shape):
    return torch.rand(*shape, dtype=F32)


COMPILED_REFUSALS = [
    ((torch.rand(3, dtype=F64),), TypeError, r"argument 'x' must be a torch.float32 tensor .*x.to\(torch.float32\)"),
    ((_f32(3, 2),), ValueError, r"argument 'x' must have 1 dimensions"),
    ((torch.rand(3, device="meta"),), ValueError, r"argument 'x' is on meta"),
]


def test_compiled_errors_name_the_argument():
    @wpt.op(outputs={"y": "x"})
    def sixth_power(x: wp.array(dtype=wp.float32), y: wp.array(dtype=wp.float32)):
        wp.launch(K.seed, dim=x.shape, inputs=[x, x, x, y])

    compiled = torch.compile(lambda x: sixth_power(x) * 2, fullgraph=True, backend="eager")
    torch.testing.assert_close(compiled(torch.full((3,), 2.0)), torch.full((3,), 128.0))
    for args, error, message in COMPILED_REFUSALS:
        with pytest.raises(error, match=message) as caught:
            compiled(*args)
        assert not type(caught.value).__module__.startswith("torch._dynamo"), caught.value


# ------------------------------------------------------------------------------------------------------------
# torch.func: grad, vjp, vmap, vmap of grad


def test_func_grad_and_vjp_match_torch():
    g = torch.Generator().manual_seed(1)
    x, w = (torch.rand(5, generator=g, dtype=F64) + 0.5 for _ in range(2))
    for argnums in (0, (0, 1)):
        got = torch.func.grad(model, argnums=argnums)(x, w)
        want = torch.func.grad(model_math, argnums=argnums)(x, w)
        torch.testing.assert_close(got, want)
    cotangent = torch.rand(5, generator=g, dtype=F64)
    out, vjp_fn = torch.func.vjp(lambda x: cube_scaled(x, 2.0), x)
    torch.testing.assert_close(out, 2.0 * x**3)
    torch.testing.assert_close(vjp_fn(cotangent)[0], 6.0 * x**2 * cotangent)


def test_func_vmap_loops_over_the_batch():
    g = torch.Generator().manual_seed(2)
    xs = [torch.rand(4, 3, generator=g, dtype=F64) for _ in range(3)]
    torch.testing.assert_close(torch.func.vmap(seed)(*xs), seed_math(*xs))
    torch.testing.assert_close(torch.func.vmap(seed, in_dims=(1, None, None))(xs[0], xs[1][0], xs[2][0]).shape, (3, 4))
    # several outputs (one integer), a Python float and int held fixed
    y, z, positive = torch.func.vmap(lambda x, w: two_outputs(x, w, 0.5, 2))(xs[0] - 0.5, xs[1])
    torch.testing.assert_close(y, 0.5 * (xs[0] - 0.5) * xs[1] + 2)
    torch.testing.assert_close(z, torch.sin(xs[0] - 0.5) * xs[1] ** 2)
    assert torch.equal(positive, (xs[0] > 0.5).to(torch.int32))


def test_func_vmap_of_grad_per_sample_gradients():
    g = torch.Generator().manual_seed(3)
    x, w = torch.rand(4, 5, generator=g, dtype=F64) + 0.5, torch.rand(5, generator=g, dtype=F64) + 0.5
    got = torch.func.vmap(torch.func.grad(model), in_dims=(0, None))(x, w)
    want = torch.func.vmap(torch.func.grad(model_math), in_dims=(0, None))(x, w)
    torch.testing.assert_close(got, want)


def test_func_grad_of_grad_is_refused():
    x = torch.rand(3, dtype=F64)
    with pytest.raises(wpt.DoubleBackwardError, match=r"op 'seed' .*is differentiable once"):
        torch.func.grad(lambda x: torch.func.grad(lambda x: seed(x, x, x).sum())(x).sum())(x)


# ------------------------------------------------------------------------------------------------------------
# torch.library.opcheck: schema, fake tensors, autograd registration, AOT dispatch with dynamic shapes


@pytest.mark.parametrize("dtype", [F32, F64])
def test_opcheck_kernel_op_and_op(dtype):
    g = torch.Generator().manual_seed(4)
    x, w = (torch.rand(5, generator=g, dtype=dtype).requires_grad_() for _ in range(2))
    torch.library.opcheck(seed.registered.forward, (x, w, w))
    torch.library.opcheck(cube_scaled.registered.forward, (x, 1.5))


def test_opcheck_several_outputs_and_scalars():
    x, w = (torch.rand(4, dtype=F64).requires_grad_() for _ in range(2))
    torch.library.opcheck(two_outputs.registered.forward, (x, w, 0.25, 3))


# ------------------------------------------------------------------------------------------------------------
# Registration: once per op; what the schema cannot carry keeps the autograd.Function path


def test_each_op_registers_once_under_its_name():
    name = seed.registered.name  # "seed", or "seed_2" where another test module made a "seed" first
    assert name.startswith("seed") and seed.registered.forward is getattr(torch.ops.warp_zerostore, name).default
    assert str(seed.registered.forward._schema) == f"warp_zerostore::{name}(Tensor x0, Tensor x1, Tensor x2) -> Tensor"
    again = wpt.kernel_op(K.seed, outputs={"y": "x0"})
    assert again.registered.name != seed.registered.name  # a second op of one kernel: its own name

    @wpt.op(outputs={"y": "x"})
    def scaled_square(x: wp.array(dtype=Any), y: wp.array(dtype=Any), s: float = 2.0):
        wp.launch(KC.scaled_product, dim=x.shape, inputs=[x, x, s, y])

    assert "float s=2." in str(scaled_square.registered.forward._schema)  # defaults carried by the schema
    x = torch.rand(3, dtype=F64)
    torch.testing.assert_close(scaled_square.registered.forward(x), 2 * x**2)
    torch.testing.assert_close(scaled_square(x, s=3.0), 3 * x**2)


CALLS = []


@wpt.op(outputs={"y": "x"})
def counted_square(x: wp.array(dtype=Any), y: wp.array(dtype=Any)):
    CALLS.append(x.shape)
    wp.launch(KC.scaled_product, dim=x.shape, inputs=[x, x, 1.0, y])


def test_registered_operator_called_eagerly_takes_the_eager_path():
    """In eager mode the forward operator's Autograd kernel is the eager path: the Tape recorded in forward is
    replayed in backward, so an @op's function runs once; traced (aot_eager), backward is the backward operator,
    which runs the function again (the negative twin)."""
    x = torch.rand(5, dtype=F64, requires_grad=True)
    CALLS.clear()
    y = counted_square.registered.forward(x)
    assert type(y.grad_fn).__name__ == "WarpFunctionBackward"
    y.sum().backward()
    assert len(CALLS) == 1
    torch.testing.assert_close(x.grad, 2 * x.detach())
    x.grad = None
    CALLS.clear()
    torch.compile(lambda x: counted_square(x).sum(), fullgraph=True, backend="aot_eager")(x).backward()
    assert len(CALLS) == 2  # tracing runs the fake implementation only: forward, then backward's run again
    torch.testing.assert_close(x.grad, 2 * x.detach())


def test_parameters_no_schema_carries_keep_the_function_path():
    @wpt.op(outputs={"y": "x"})
    def shifted(x: wp.array(dtype=wp.vec3d), v: wp.vec3d, y: wp.array(dtype=wp.float64)):
        wp.launch(K.mat_vec, dim=x.shape, inputs=[wp.zeros(x.shape, dtype=wp.mat33d), x, wp.zeros_like(x), y])

    assert shifted.registered is None and shifted.unregistered == ["v"]
    x = torch.rand(3, 3, dtype=F64, requires_grad=True)
    shifted(x, wp.vec3d()).sum().backward()  # eager autograd still works
    torch.testing.assert_close(x.grad, 2 * x.detach())
    x.grad = None
    compiled = torch.compile(lambda x: shifted(x, wp.vec3d()).sum() * 2, backend="eager")  # a graph break, then eager
    compiled(x).backward()
    torch.testing.assert_close(x.grad, 4 * x.detach())
