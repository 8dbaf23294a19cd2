"""The bridge's gradient buffers for views and odd strides.

Views of one Warp temporary share one gradient buffer in every backward call, whatever their overlap, order
or stride sign; tensors PyTorch calls contiguous with an unusual stride on a size-1 dimension take gradients.
Both compared with PyTorch autograd of the same math and with ``gradcheck(..., nondet_tol=0)``.
"""

import pytest
from hypothesis import given
from hypothesis import strategies as st

torch = pytest.importorskip(
    "torch", reason="warp_zerostore.torch needs PyTorch: pip install 'warp_zerostore[torch]' (torch==2.13.0)"
)

import warp  # noqa: E402
from helpers import kernels_torch_views as K  # noqa: E402

import warp_zerostore as wp  # noqa: E402
import warp_zerostore.torch as wpt  # noqa: E402

F64 = torch.float64

# ------------------------------------------------------------------------------------------------------------
# Item 1: a temporary read through views that overlap without one containing the other


def _shifted_views(shift: int, swap: bool):
    @wpt.op(outputs={"y": "x"}, name=f"shifted_views[shift={shift}, swap={swap}]")
    def shifted_views(x: wp.array(dtype=wp.float64), y: wp.array(dtype=wp.float64)):
        """t[0:n] = x^2 (t[n:] = 0), y = t[0:n] * t[shift:n+shift]; t itself is never passed."""
        n = x.shape[0]
        t = wp.zeros(n + shift, dtype=wp.float64, requires_grad=True, device=x.device)
        wp.launch(K.square_into, dim=n, inputs=[x, t[0:n]], device=x.device)
        a, b = t[0:n], t[shift : n + shift]
        wp.launch(K.multiply, dim=n, inputs=[b, a, y] if swap else [a, b, y], device=x.device)

    return shifted_views


SHIFTED = {(shift, swap): _shifted_views(shift, swap) for shift in (1, 2) for swap in (False, True)}


def shifted_math(x, shift):
    t = torch.cat([x * x, torch.zeros(shift, dtype=x.dtype, device=x.device)])
    return t[: len(x)] * t[shift:]


def _reversed(a):
    """A view of ``a`` (and of its gradient) in reverse order: negative strides, made from pointers."""
    n, itemsize = a.shape[0], a.strides[0]

    def flip(arr):
        return warp.array(
            ptr=arr.ptr + (n - 1) * itemsize,
            dtype=arr.dtype,
            shape=(n,),
            strides=(-itemsize,),
            capacity=n * itemsize,
            device=arr.device,
            copy=False,
        )

    view = flip(a)
    view.grad = flip(a.grad)
    return view


@wpt.op(outputs={"y": "x"})
def reversed_view(x: wp.array(dtype=wp.float64), y: wp.array(dtype=wp.float64)):
    """t = x^2, y = t * reversed(t) with the reversed view's gradient a negative-stride view of t's."""
    t = wp.zeros(x.shape[0], dtype=wp.float64, requires_grad=True, device=x.device)
    wp.launch(K.square_into, dim=x.shape, inputs=[x, t], device=x.device)
    wp.launch(K.multiply, dim=x.shape, inputs=[t[0 : x.shape[0]], _reversed(t), y], device=x.device)


def reversed_math(x, _):
    t = x * x
    return t * t.flip(0)


CASES = [(op, shifted_math, shift) for (shift, _), op in SHIFTED.items()] + [(reversed_view, reversed_math, 0)]
IDS = [f"shift{shift}-swap{swap}" for shift, swap in SHIFTED] + ["reversed"]


def test_issue_example_second_backward_keeps_every_gradient(device):
    x = torch.tensor([1.0, 2.0, 3.0, 4.0], dtype=F64, device=device, requires_grad=True)
    y = SHIFTED[(1, False)](x).sum()
    first = torch.autograd.grad(y, x, retain_graph=True)[0]
    second = torch.autograd.grad(y, x)[0]
    expected = torch.tensor([8.0, 40.0, 120.0, 72.0], dtype=F64, device=device)
    torch.testing.assert_close(first, expected, rtol=0, atol=0)
    torch.testing.assert_close(second, expected, rtol=0, atol=0)


@pytest.mark.parametrize("op, math, shift", CASES, ids=IDS)
def test_views_of_one_temporary_match_torch_on_every_backward(op, math, shift, device):
    g = torch.Generator().manual_seed(7)
    x = (torch.rand(6, generator=g, dtype=F64) * 2 - 1).to(device).requires_grad_()
    w = torch.rand(6, generator=g, dtype=F64).to(device)
    loss = (op(x) * w).sum()
    grads = [torch.autograd.grad(loss, x, retain_graph=True)[0] for _ in range(3)]
    reference = torch.autograd.grad((math(x, shift) * w).sum(), x)[0]
    for k, grad in enumerate(grads):
        torch.testing.assert_close(grad, reference, msg=lambda m, k=k: f"backward call {k}: {m}")


@pytest.mark.parametrize("op, math, shift", CASES, ids=IDS)
def test_views_of_one_temporary_pass_gradcheck(op, math, shift, device):
    x = torch.linspace(-1.0, 1.5, 5, dtype=F64, device=device).requires_grad_()
    assert torch.autograd.gradcheck(op, (x,), nondet_tol=0.0)


@wpt.op(outputs={"y": "x"})
def drawn_windows(x: wp.array(dtype=wp.float64), windows: wp.array(dtype=wp.int64), y: wp.array(dtype=wp.float64)):
    """t[w:w+n] = x^2, y = t[a:a+n] * t[b:b+n] over a temporary t of n + s elements; windows = (s, w, a, b)."""
    n = x.shape[0]
    s, w, a, b = (int(v) for v in windows.numpy())
    t = wp.zeros(n + s, dtype=wp.float64, requires_grad=True, device=x.device)
    wp.launch(K.square_into, dim=n, inputs=[x, t[w : w + n]], device=x.device)
    wp.launch(K.multiply, dim=n, inputs=[t[a : a + n], t[b : b + n], y], device=x.device)


@given(n=st.integers(1, 6), s=st.integers(0, 4), data=st.data())
def test_drawn_overlapping_windows_match_torch_on_every_backward(n, s, data, device):
    w, a, b = (data.draw(st.integers(0, s)) for _ in range(3))
    x = torch.linspace(-1.0, 1.25, n, dtype=F64, device=device).requires_grad_()
    windows = torch.tensor([s, w, a, b], dtype=torch.int64, device=device)
    loss = (drawn_windows(x, windows) * torch.arange(1.0, n + 1, dtype=F64, device=device)).sum()
    grads = [torch.autograd.grad(loss, x, retain_graph=True)[0] for _ in range(2)]
    t = torch.zeros(n + s, dtype=F64, device=device).index_put((torch.arange(w, w + n, device=device),), x * x)
    reference = torch.autograd.grad(
        (t[a : a + n] * t[b : b + n] * torch.arange(1.0, n + 1, dtype=F64, device=device)).sum(), x
    )[0]
    for grad in grads:
        torch.testing.assert_close(grad, reference)


# ------------------------------------------------------------------------------------------------------------
# Item 2: contiguous tensors with an unusual stride on a size-1 dimension

vec_norm2 = wpt.kernel_op(K.vec_norm2, outputs={"y": lambda v: v.shape[0]})
cube_1d = wpt.kernel_op(K.cube_1d, outputs={"y": "x"})
cube_2d = wpt.kernel_op(K.cube_2d, outputs={"y": "x"})
cube_3d = wpt.kernel_op(K.cube_3d, outputs={"y": "x"})


def _rows_as_vec3(leaf):  # (3, 1).t(): shape (1, 3), strides (1, 1)
    return leaf.t()


def _expanded_scalar(leaf):  # a 0-d tensor expanded to (1,): stride (0,)
    return leaf.expand(1)


def _column_transposed(leaf):  # (3, 1).t() to a 2-D parameter
    return leaf.t()


def _one_channel_hwc(leaf):  # CHW with C = 1 permuted to HWC: shape (2, 3, 1), strides (3, 1, 6)
    return leaf.permute(1, 2, 0)


ODD = {
    "vec3d-from-transposed-column": (vec_norm2, lambda v: (v * v).sum(-1), (3, 1), _rows_as_vec3),
    "expanded-0d": (cube_1d, lambda x: x**3, (), _expanded_scalar),
    "transposed-column-2d": (cube_2d, lambda x: x**3, (3, 1), _column_transposed),
    "one-channel-permute-3d": (cube_3d, lambda x: x**3, (1, 2, 3), _one_channel_hwc),
}


@pytest.mark.parametrize("case", ODD)
def test_size_one_dimension_with_odd_stride_takes_gradients(case, device):
    op, math, shape, make = ODD[case]
    leaf = torch.linspace(0.5, 1.5, max(1, torch.Size(shape).numel()), dtype=F64).reshape(shape).to(device)
    leaf.requires_grad_()
    tensor = make(leaf)
    assert tensor.is_contiguous() and tensor.stride() != torch.empty(tensor.shape).stride()
    (op(tensor) * 1.5).sum().backward()
    grad = leaf.grad.clone()
    leaf.grad = None
    (math(make(leaf)) * 1.5).sum().backward()
    torch.testing.assert_close(grad, leaf.grad)
    assert torch.autograd.gradcheck(lambda t: op(make(t)), (leaf.detach().clone().requires_grad_(),), nondet_tol=0.0)


@pytest.mark.parametrize("case", ODD)
def test_size_one_dimension_with_odd_stride_without_grad_is_unchanged(case, device):
    """Negative twin: the same tensors without requires_grad gave the right values before and still do."""
    op, math, shape, make = ODD[case]
    leaf = torch.linspace(0.5, 1.5, max(1, torch.Size(shape).numel()), dtype=F64).reshape(shape).to(device)
    torch.testing.assert_close(op(make(leaf)), math(make(leaf)))
