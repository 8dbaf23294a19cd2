"""The PyTorch bridge: gradients equal PyTorch autograd's, reentrant, no leaf double counting, never silently zero.

Kernels live in ``kernels_torch.py`` (built once per session); tests draw data, not kernels. Skipped, saying
why, where torch is not installed.
"""

import pathlib
import runpy

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

torch = pytest.importorskip(
    "torch", reason="warp_zerostore.torch needs PyTorch: pip install 'warp_zerostore[torch]' (torch==2.13.0)"
)

import warp  # noqa: E402
from helpers import kernels_torch as K  # noqa: E402
from helpers.seed import EXPECTED  # noqa: E402

import warp_zerostore as wp  # noqa: E402
import warp_zerostore.torch as wpt  # noqa: E402
from warp_zerostore import _compat  # noqa: E402
from warp_zerostore.torch import streams  # noqa: E402

F64 = torch.float64
ROOT = pathlib.Path(__file__).resolve().parents[1]

# ------------------------------------------------------------------------------------------------------------
# Bridged ops, once per session

seed = wpt.kernel_op(K.seed, outputs={"y": "x0"})
two_outputs = wpt.kernel_op(K.two_outputs, outputs={"y": "x", "z": "x", "positive": "x"})
gather = wpt.kernel_op(K.gather_scale, outputs={"y": "index"})
mat_vec = wpt.kernel_op(K.mat_vec, outputs={"out": "v", "sq": "v"})


@wpt.op(outputs={"y": 1})
def cube_sum(x: wp.array(dtype=wp.float64), y: wp.array(dtype=wp.float64)):
    """sum(x^3) through a temporary that carries a gradient (t = x^2, then y = sum(t * x))."""
    t = wp.zeros_like(x, requires_grad=True)
    wp.launch(K.square_into, dim=x.shape, inputs=[x, t])
    wp.launch(K.times_sum, dim=x.shape, inputs=[t, x, y])


@wpt.op(outputs={"y": "x"})
def square_via_copy(x: wp.array(dtype=wp.float64), y: wp.array(dtype=wp.float64)):
    """x^2 into a temporary, then wp.copy into the output: Warp records the copy on the Tape."""
    t = wp.zeros_like(x, requires_grad=True)
    wp.launch(K.square_into, dim=x.shape, inputs=[x, t])
    wp.copy(y, t)


@wpt.op(outputs={"y": "x", "z": "x"})
def copy_from_output(x: wp.array(dtype=wp.float64), y: wp.array(dtype=wp.float64), z: wp.array(dtype=wp.float64)):
    """y = x^2, copied (wp.copy) into a temporary t, z = t * x: the copy reads the output's gradient buffer."""
    t = wp.zeros_like(x, requires_grad=True)
    wp.launch(K.square_into, dim=x.shape, inputs=[x, y])
    wp.copy(t, y)
    wp.launch(K.multiply, dim=x.shape, inputs=[t, x, z])


@wpt.op(outputs={"y": "x"})
def through_struct(x: wp.array(dtype=wp.float64), y: wp.array(dtype=wp.float64)):
    """t = x^2 into a temporary reached through a struct field, then y = 0.5 * t^2 = 0.5 * x^4."""
    t = wp.zeros_like(x, requires_grad=True)
    wp.launch(K.square_into, dim=x.shape, inputs=[x, t])
    s = K.Scaled()
    s.values = t
    s.scale = 0.5
    wp.launch(K.scaled_square, dim=x.shape, inputs=[s, y])


@wpt.op(outputs={"y": "x"})
def input_in_struct(x: wp.array(dtype=wp.float64), y: wp.array(dtype=wp.float64)):
    """y = 0.25 * x^2, with the op's input reached through a struct field."""
    s = K.Scaled()
    s.values = x
    s.scale = 0.25
    wp.launch(K.scaled_square, dim=x.shape, inputs=[s, y])


@wpt.op(outputs={"y": lambda x: x.shape[0] - 1})
def through_views(x: wp.array(dtype=wp.float64), y: wp.array(dtype=wp.float64)):
    """y = x[1:]^3 through a slice of the input and a reshaped temporary: views share their array's gradient."""
    tail = x[1:]
    t = wp.zeros(tail.shape[0], dtype=wp.float64, requires_grad=True)
    wp.launch(K.square_into, dim=tail.shape, inputs=[tail, t])
    wp.launch(K.multiply, dim=tail.shape, inputs=[t.reshape((tail.shape[0],)), tail, y])


def _seed_program(flag):
    write_2x, write_3x, _ = K.OVERWRITING[flag]

    @wpt.op(outputs={"y": "a"}, name=f"seed_program[zero_store={flag}]")
    def seed_program(a: wp.array(dtype=wp.float64), b: wp.array(dtype=wp.float64), y: wp.array(dtype=wp.float64)):
        wp.launch(write_2x, dim=a.shape, inputs=[a, y])
        wp.launch(write_3x, dim=b.shape, inputs=[b, y])

    return seed_program


SEED_PROGRAM = {flag: _seed_program(flag) for flag in (True, False, None)}
WRITE_TWICE = {flag: wpt.kernel_op(K.OVERWRITING[flag][2], outputs={"y": "a"}) for flag in (True, False, None)}

POINTERS = {}


@wpt.op(outputs={"y": "x"})
def record_pointers(x: wp.array(dtype=wp.float32), y: wp.array(dtype=wp.float32)):
    """y = x^6; remembers the addresses Warp saw."""
    POINTERS.update(x=x.ptr, y=y.ptr, x_grad=None if x.grad is None else x.grad.ptr)
    wp.launch(K.seed, dim=x.shape, inputs=[x, x, x, y])


# ------------------------------------------------------------------------------------------------------------
# The same math in PyTorch


def seed_math(x0, x1, x2):
    return (x0 * x1 * x2) ** 2


def two_outputs_math(x, w, s, k):
    return s * x * w + k, torch.sin(x) * w * w, (x > 0).to(torch.int32)


def gather_math(x, index, s):
    return s * x[index] ** 2


def mat_vec_math(m, v):
    return torch.einsum("nij,nj->ni", m, v), (v * v).sum(-1)


def rand(generator, *shape, device="cpu", dtype=F64):
    return (torch.rand(*shape, generator=generator, dtype=dtype) * 2 - 1).to(device)


def grads_of(fn, args, requires, leaf, weights_seed=0):
    """Gradients of sum(w_k * out_k) with respect to every tensor of ``args`` marked in ``requires``.

    Non-leaf inputs are ``base * 1`` of a leaf ``base``; gradients are read from the leaves.
    """
    leaves = [
        a.detach().clone().requires_grad_(r) if isinstance(a, torch.Tensor) and r else a for a, r in zip(args, requires)
    ]
    inputs = [a * 1 if isinstance(a, torch.Tensor) and a.requires_grad and not leaf else a for a in leaves]
    outs = fn(*inputs)
    outs = outs if isinstance(outs, tuple) else (outs,)
    g = torch.Generator().manual_seed(weights_seed)
    loss = sum((o * rand(g, *o.shape, device=o.device)).sum() for o in outs if o.is_floating_point())
    loss.backward()
    values = [o.detach() for o in outs]
    return values, [a.grad if isinstance(a, torch.Tensor) and a.requires_grad else None for a in leaves]


def assert_matches_torch(op, math, args, requires, leaf):
    values, grads = grads_of(op, args, requires, leaf)
    ref_values, ref_grads = grads_of(math, args, requires, leaf)
    for v, r in zip(values, ref_values):
        torch.testing.assert_close(v, r)
    for i, (g, r) in enumerate(zip(grads, ref_grads)):
        if r is None:
            assert g is None, f"argument {i} needs no gradient"
        else:
            torch.testing.assert_close(g, r, msg=lambda m, i=i: f"gradient of argument {i}: {m}")


# ------------------------------------------------------------------------------------------------------------
# Gradients equal PyTorch's own


SIZES, SEEDS, FLAGS = st.integers(1, 17), st.integers(0, 2**31 - 1), st.booleans()


@given(n=SIZES, data_seed=SEEDS, requires=st.tuples(FLAGS, FLAGS, FLAGS), leaf=FLAGS)
def test_seed_matches_torch(device, n, data_seed, requires, leaf):
    if not any(requires):
        requires = (True, False, False)
    g = torch.Generator().manual_seed(data_seed)
    args = [rand(g, n, device=device) for _ in range(3)]
    assert_matches_torch(seed, seed_math, args, requires, leaf)


@given(n=SIZES, data_seed=SEEDS, requires=st.tuples(FLAGS, FLAGS), leaf=FLAGS)
def test_several_outputs_scalars_and_integer_output_match_torch(device, n, data_seed, requires, leaf):
    """Two float outputs, an int32 output (non-differentiable), Python float and int arguments."""
    requires = requires if any(requires) else (True, False)
    g = torch.Generator().manual_seed(data_seed)
    args = [rand(g, n, device=device), rand(g, n, device=device), 0.5, 3]
    assert_matches_torch(two_outputs, two_outputs_math, args, (*requires, False, False), leaf)


def test_bridged_ops_chain(device):
    """One op's output as another's input: gradients flow through both, as through PyTorch ops."""
    g = torch.Generator().manual_seed(3)
    args = [rand(g, 6, device=device) for _ in range(2)]
    assert_matches_torch(
        lambda a, b: seed(seed(a, b, b), a, b * 0.5),
        lambda a, b: seed_math(seed_math(a, b, b), a, b * 0.5),
        args,
        (True, True),
        leaf=False,
    )


def test_integer_output_is_not_differentiable(device):
    x, w = (torch.rand(4, dtype=F64, device=device, requires_grad=True) for _ in range(2))
    y, z, positive = two_outputs(x, w, 1.0, 0)
    assert positive.dtype == torch.int32 and not positive.requires_grad
    assert y.requires_grad and z.requires_grad


def test_output_without_gradient(device):
    """PyTorch passes None for an output the loss does not use; only the used one contributes."""
    x, w = (torch.rand(5, dtype=F64, device=device, requires_grad=True) for _ in range(2))
    y, z, _ = two_outputs(x, w, 2.0, 1)
    z.sum().backward()  # y unused: its grad_output is None
    torch.testing.assert_close(x.grad, torch.cos(x.detach()) * w.detach() ** 2)
    torch.testing.assert_close(w.grad, 2 * torch.sin(x.detach()) * w.detach())


@given(n=SIZES, data_seed=SEEDS, leaf=FLAGS)
def test_integer_tensor_argument_matches_torch(device, n, data_seed, leaf):
    """An int64 index tensor (repeated indices: the adjoint scatters) and a float scalar, not differentiated."""
    g = torch.Generator().manual_seed(data_seed)
    x = rand(g, 6, device=device)
    index = torch.randint(0, 6, (n,), generator=g).to(device)
    assert_matches_torch(gather, gather_math, [x, index, 1.5], (True, False, False), leaf)


@given(n=st.integers(1, 9), data_seed=SEEDS, requires=st.tuples(FLAGS, FLAGS))
def test_vector_and_matrix_dtypes_match_torch(device, n, data_seed, requires):
    """(N, 3, 3) and (N, 3) float64 tensors are mat33d and vec3d arrays; gradients keep those shapes."""
    if not any(requires):
        requires = (False, True)
    g = torch.Generator().manual_seed(data_seed)
    args = [rand(g, n, 3, 3, device=device), rand(g, n, 3, device=device)]
    assert_matches_torch(mat_vec, mat_vec_math, args, requires, leaf=True)


def test_temporaries_and_copies_inside_an_op(device):
    x = torch.linspace(-1, 2, 7, dtype=F64, device=device, requires_grad=True)
    cube_sum(x).sum().backward()
    torch.testing.assert_close(x.grad, 3 * x.detach() ** 2)
    x.grad = None
    square_via_copy(x).sum().backward()
    torch.testing.assert_close(x.grad, 2 * x.detach())
    x.grad = None
    through_views(x).sum().backward()
    torch.testing.assert_close(x.grad, torch.cat([x.new_zeros(1), 3 * x.detach()[1:] ** 2]))


@pytest.mark.xfail(
    _compat.WARP_VERSION < (1, 13, 0),
    strict=True,
    reason="up to warp-lang 1.12, wp.copy's adjoint overwrites the source's gradient instead of adding to it "
    "(Warp's own Tape behaviour, which the bridge runs as is)",
)
def test_copy_from_an_output_inside_an_op(device):
    """The forward wp.copy reads the output's (not yet set) gradient buffer; backward re-zeroes the temporary."""
    x = torch.linspace(-1, 2, 6, dtype=F64, device=device, requires_grad=True)
    y, z = copy_from_output(x)
    (y + z).sum().backward()
    torch.testing.assert_close(x.grad, 2 * x.detach() + 3 * x.detach() ** 2)
    assert _gradcheck(copy_from_output, (x.detach().requires_grad_(),))


# ------------------------------------------------------------------------------------------------------------
# gradcheck (float64, reentrancy with nondet_tol=0, check_backward_ad, undefined output gradients)


def _gradcheck(fn, inputs):
    return torch.autograd.gradcheck(
        fn, inputs, nondet_tol=0.0, check_backward_ad=True, check_undefined_grad=True, raise_exception=True
    )


def test_gradcheck_seed(device):
    xs = [torch.rand(8, dtype=F64, device=device, requires_grad=True) for _ in range(3)]
    assert _gradcheck(seed, xs)


def test_gradcheck_several_outputs(device):
    x, w = (torch.rand(6, dtype=F64, device=device, requires_grad=True) for _ in range(2))
    assert _gradcheck(lambda x, w: two_outputs(x, w, 0.25, 2), (x, w))


def test_gradcheck_gather_vectors_temporaries(device):
    x = torch.rand(6, dtype=F64, device=device, requires_grad=True)
    index = torch.tensor([0, 2, 2, 5, 1], device=device)
    assert _gradcheck(lambda x: gather(x, index, -2.0), (x,))
    m = torch.rand(4, 3, 3, dtype=F64, device=device, requires_grad=True)
    v = torch.rand(4, 3, dtype=F64, device=device, requires_grad=True)
    assert _gradcheck(mat_vec, (m, v))
    assert _gradcheck(cube_sum, (x,))
    assert _gradcheck(square_via_copy, (x,))
    assert _gradcheck(through_struct, (x,))  # its temporary gets a fresh gradient per backward too
    assert _gradcheck(input_in_struct, (x,))
    assert _gradcheck(through_views, (x,))


def test_gradcheck_non_contiguous_input(device):
    x = torch.rand(12, dtype=F64, device=device)[::3].requires_grad_()
    assert not x.is_contiguous()
    assert _gradcheck(lambda x: seed(x, x, x), (x,))


# ------------------------------------------------------------------------------------------------------------
# Reentrancy, grad_output untouched, no double counting


@pytest.mark.parametrize("flag", [True, False, None])
def test_backward_twice_same_gradients_and_grad_output_unchanged(flag, device):
    """With zero_store=True the store adjoints zero the output gradient they read: the bridge's copy, not
    the caller's tensor. The second backward (retain_graph) starts from fresh buffers."""
    a, b = (torch.rand(5, dtype=F64, device=device, requires_grad=True) for _ in range(2))
    for op in (SEED_PROGRAM[flag], WRITE_TWICE[flag]):
        y = op(a, b)
        grad_output = torch.rand_like(y)
        kept = grad_output.clone()
        first = torch.autograd.grad(y, (a, b), grad_output, retain_graph=True)
        second = torch.autograd.grad(y, (a, b), grad_output)
        assert torch.equal(grad_output, kept)
        for f, s in zip(first, second):
            assert torch.equal(f, s)


def test_leaf_gradient_lands_once(device):
    xs = [torch.rand(6, dtype=F64, device=device, requires_grad=True) for _ in range(3)]
    _, reference = grads_of(seed_math, xs, (True,) * 3, leaf=True)
    y = seed(*xs)
    (y * rand(torch.Generator().manual_seed(0), 6, device=device)).sum().backward()
    for x, r in zip(xs, reference):
        torch.testing.assert_close(x.grad, r)  # not 2x: Warp never wrote into x.grad
    y = seed(*xs)
    (y * rand(torch.Generator().manual_seed(0), 6, device=device)).sum().backward()
    for x, r in zip(xs, reference):
        torch.testing.assert_close(x.grad, 2 * r)  # PyTorch's accumulation, once per backward


def test_retain_graph_backward_twice_accumulates_like_torch(device):
    x = torch.rand(4, dtype=F64, device=device, requires_grad=True)
    y = seed(x, x, x)  # one tensor as three inputs: three gradients, summed by PyTorch
    y.sum().backward(retain_graph=True)
    once = x.grad.clone()
    torch.testing.assert_close(once, 6 * x.detach() ** 5)
    y.sum().backward()
    torch.testing.assert_close(x.grad, 2 * once)


# ------------------------------------------------------------------------------------------------------------
# Kernels keep their own zero_store flag


@pytest.mark.parametrize("flag", [True, False, None])
def test_kernels_follow_their_flag(flag, device):
    """The seed program (y = 2a, then overwritten y = 3b) gives exactly what the kernels' flag says, through
    the bridge as on a plain wp.Tape: True (and stock 1.13+) the true gradient, False the accumulated one."""
    for op in (SEED_PROGRAM[flag], WRITE_TWICE[flag]):
        a, b = (torch.ones(4, dtype=F64, device=device, requires_grad=True) for _ in range(2))
        op(a, b).backward(torch.ones(4, dtype=F64, device=device))
        assert torch.equal(a.grad, torch.full_like(a, EXPECTED[flag]["x_a"]))
        assert torch.equal(b.grad, torch.full_like(b, EXPECTED[flag]["x_b"]))


def test_zero_store_true_passes_gradcheck_and_accumulate_does_not(device):
    """Negative twin: gradcheck flags the accumulate-mode overwrite (its gradient is not the math's)."""
    a, b = (torch.rand(3, dtype=F64, device=device, requires_grad=True) for _ in range(2))
    assert _gradcheck(SEED_PROGRAM[True], (a, b))
    assert not torch.autograd.gradcheck(SEED_PROGRAM[False], (a, b), nondet_tol=0.0, raise_exception=False)


# ------------------------------------------------------------------------------------------------------------
# Double backward


def test_double_backward_is_refused_naming_the_op(device):
    x1, x2 = (torch.rand(4, dtype=F64, device=device) for _ in range(2))
    x = torch.rand(4, dtype=F64, device=device, requires_grad=True)
    (g,) = torch.autograd.grad(seed(x, x1, x2).sum(), x, create_graph=True)
    torch.testing.assert_close(g, 2 * x.detach() * (x1 * x2) ** 2)  # first order with create_graph works
    with pytest.raises(wpt.DoubleBackwardError, match=r"op 'seed' \(.*kernels_torch.py:\d+\) is differentiable once"):
        g.sum().backward()
    with pytest.raises(wpt.DoubleBackwardError, match="write the gradient as a bridged op"):
        torch.autograd.gradgradcheck(lambda x: seed(x, x1, x2), (x,))


# ------------------------------------------------------------------------------------------------------------
# Zero copy in and out; conversions and refusals


def test_zero_copy_inputs_and_outputs(device):
    x = torch.rand(8, device=device, requires_grad=True)
    y = record_pointers(x)
    assert POINTERS["x"] == x.data_ptr()  # Warp reads the caller's tensor in place
    assert POINTERS["y"] == y.data_ptr()  # and writes the returned tensor in place
    assert POINTERS["x_grad"] is not None and x.grad is None  # its own gradient buffer, not x.grad
    y.sum().backward()
    torch.testing.assert_close(x.grad, 6 * x.detach() ** 5)


def test_non_contiguous_input_is_copied_once(device):
    x = torch.rand(16, device=device)[::2]
    y = record_pointers(x)
    assert POINTERS["x"] != x.data_ptr()
    torch.testing.assert_close(y, x**6)


def _f64(d, *shape):
    return torch.rand(*shape, dtype=F64, device=d)


REFUSED = [
    (
        lambda d: record_pointers(_f64(d, 3)),
        TypeError,
        r"argument 'x' must be a torch.float32 tensor .*x.to\(torch.float32\)",
    ),
    (lambda d: record_pointers(torch.rand(3, 2, device=d)), ValueError, r"argument 'x' must have 1 dimensions"),
    (
        lambda d: mat_vec(_f64(d, 2, 3, 3), _f64(d, 2, 4)),
        ValueError,
        r"argument 'v' must have 2 dimensions, the last 1 of sizes \(3,\)",
    ),
    (lambda d: seed([1.0], _f64(d, 1), _f64(d, 1)), TypeError, r"argument 'x0' must be a torch.Tensor"),
    (
        lambda d: gather(_f64(d, 3), torch.zeros(2, dtype=torch.int64, device=d), torch.tensor(2.0)),
        TypeError,
        r"argument 's' is annotated .* got a tensor.*s.item\(\)",
    ),
    (
        lambda d: gather(_f64(d, 3), torch.zeros(2, dtype=torch.int32, device=d), 1.0),
        TypeError,
        r"argument 'index' must be a torch.int64 tensor",
    ),
    (lambda d: seed(*(torch.rand(2, device="meta") for _ in range(3))), ValueError, r"argument 'x0' is on meta"),
    (lambda d: seed(torch.rand(2, device=d)), TypeError, r"op 'seed' .*missing a required argument: 'x1'"),
]


@pytest.mark.parametrize("call, error, message", REFUSED)
def test_refused_arguments_are_named(call, error, message, device):
    with pytest.raises(error, match=message):
        call(device)


def test_declaration_errors_name_the_output():
    with pytest.raises(TypeError, match=r"output 'y' must be annotated wp.array"):

        @wpt.op(outputs={"y": "x"})
        def unannotated(x: wp.array(dtype=float), y):
            pass

    with pytest.raises(ValueError, match=r"outputs names \['z'\]"):

        @wpt.op(outputs={"z": "x"})
        def no_such_output(x: wp.array(dtype=float), y: wp.array(dtype=float)):
            pass

    with pytest.raises(TypeError, match=r"output 'y' is annotated with dtype=Any"):
        wpt.kernel_op(K.seed, outputs={"y": 4})
    with pytest.raises(ValueError, match=r"output 'y' is shaped like 'q', which is not an input"):
        wpt.kernel_op(K.seed, outputs={"y": "q"})
    with pytest.raises(TypeError, match=r"kernel_op takes a @wp.kernel"):
        wpt.kernel_op(seed_math, outputs={"y": "x0"})


def test_shape_functions_and_fixed_shapes(device):
    @wpt.op(outputs={"y": lambda x: x.shape[0] * 2})
    def doubled(x: wp.array(dtype=wp.float64), y: wp.array(dtype=wp.float64)):
        wp.launch(K.square_into, dim=x.shape, inputs=[x, y])

    x = torch.arange(3.0, dtype=F64, device=device, requires_grad=True)
    y = doubled(x)
    assert y.shape == (6,)
    torch.testing.assert_close(y, torch.cat([x.detach() ** 2, torch.zeros(3, dtype=F64, device=device)]))
    y.sum().backward()
    torch.testing.assert_close(x.grad, 2 * x.detach())


# ------------------------------------------------------------------------------------------------------------
# Devices, streams, Tapes, grad mode, in-place checks


def test_no_device_wide_synchronize(monkeypatch, device):
    def refuse(*args, **kwargs):
        raise AssertionError("the bridge must not synchronise the device")

    for name in ("synchronize", "synchronize_device", "synchronize_stream"):
        monkeypatch.setattr(warp, name, refuse)
    xs = [torch.rand(5, dtype=F64, device=device, requires_grad=True) for _ in range(3)]
    seed(*xs).sum().backward()
    assert all(x.grad is not None for x in xs)


def test_cpu_scope_does_not_touch_cuda(monkeypatch):
    monkeypatch.setattr(torch.cuda, "current_stream", lambda *a: pytest.fail("CUDA stream queried for CPU"))
    with streams.on_torch_device(torch.device("cpu")) as wp_device:
        assert wp_device.is_cpu and wp.get_device().is_cpu


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device (PyTorch with CUDA)")
def test_cuda_non_default_stream():
    """Warp work runs on PyTorch's current (non-default) stream in forward and backward, ordered with it."""
    stream = torch.cuda.Stream()
    n = 1 << 20
    with torch.cuda.stream(stream):
        xs = [torch.rand(n, dtype=F64, device="cuda:0", requires_grad=True) for _ in range(3)]
        y = seed(*xs) * 2  # PyTorch consumes Warp's output right away on the same stream
        y.sum().backward()
        x0, x1, x2 = (x.detach() for x in xs)
        reference = [4 * x0 * (x1 * x2) ** 2, 4 * x1 * (x0 * x2) ** 2, 4 * x2 * (x0 * x1) ** 2]
    stream.synchronize()
    for x, r in zip(xs, reference):
        torch.testing.assert_close(x.grad, r)


def test_launches_stay_off_the_callers_tape(device):
    xs = [torch.rand(3, dtype=F64, device=device, requires_grad=True) for _ in range(3)]
    with wp.Tape() as outer:
        y = seed(*xs)
        y.sum().backward()
    assert outer.launches == []
    torch.testing.assert_close(xs[0].grad, 2 * xs[0].detach() * (xs[1] * xs[2]).detach() ** 2)


def test_no_grad_records_nothing(device, monkeypatch):
    xs = [torch.rand(3, dtype=F64, device=device, requires_grad=True) for _ in range(3)]
    monkeypatch.setattr(warp, "Tape", lambda: pytest.fail("recorded under torch.no_grad()"))
    with torch.no_grad():
        y = seed(*xs)
    assert y.grad_fn is None and not y.requires_grad
    torch.testing.assert_close(y, seed_math(*xs).detach())


def test_input_modified_in_place_before_backward_is_caught(device):
    x = torch.rand(3, dtype=F64, device=device, requires_grad=True)
    y = seed(x, x.detach(), x.detach())
    with torch.no_grad():
        x.add_(1.0)
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        y.sum().backward()


# ------------------------------------------------------------------------------------------------------------
# The seed example (README, examples/) and the module's other names


@pytest.mark.parametrize("example", ["torch_seed.py", "torch_multi_launch.py"])
def test_examples_run(example):
    module = runpy.run_path(str(ROOT / "examples" / example), run_name=example[:-3])
    module["main"]()


def test_warp_torch_interop_names_still_resolve():
    assert wpt.from_torch is warp.from_torch or wpt.from_torch.__name__ == "from_torch"
    assert callable(wpt.to_torch)
    with pytest.raises(AttributeError, match="no attribute 'launch'"):
        wpt.launch  # noqa: B018


def test_outputs_are_numpy_compatible(device):
    y = seed(*(torch.ones(2, device=device) for _ in range(3)))
    np.testing.assert_array_equal(y.cpu().numpy(), 1.0)
