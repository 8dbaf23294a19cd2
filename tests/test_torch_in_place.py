"""The PyTorch bridge with kernels that write their inputs: no silent mutation of a caller's tensor, no lost gradient.

A kernel_op over a kernel that writes an input is refused by name unless the input is declared ``in_out``; then the
op updates a copy, returns it, leaves the caller's tensor as it was, and the gradient flows through the update,
whether or not the in-out input requires grad. References: PyTorch autograd of the same math in float64.
"""

from __future__ import annotations

import warnings

import pytest

torch = pytest.importorskip("torch", reason="warp_zerostore.torch needs PyTorch: pip install 'warp_zerostore[torch]'")

from helpers import kernels_torch_inplace as K  # noqa: E402

import warp_zerostore as wp  # noqa: E402
import warp_zerostore.torch as wpt  # noqa: E402

F64 = torch.float64
Y0, X0 = [2.0, 0.5], [3.0, 0.25]


def _reference(y, x):
    return y + x, (y + x) ** 2


@pytest.mark.parametrize("kernel", [K.step, K.step_flagged], ids=["unflagged", "flagged"])
def test_a_kernel_writing_an_input_is_refused_by_name_unless_it_is_declared_in_out(kernel):
    with pytest.raises(ValueError, match=r"writes its input 'y'.*in_out=\('y',\)"):
        wpt.kernel_op(kernel, outputs={"out": "x"})


@pytest.mark.parametrize("kernel", [K.step, K.step_flagged], ids=["unflagged", "flagged"])
@pytest.mark.parametrize("y_requires_grad", [False, True], ids=["y constant", "y requires grad"])
def test_in_out_leaves_the_callers_tensor_and_the_gradient_flows_through_the_update(kernel, y_requires_grad):
    op = wpt.kernel_op(kernel, outputs={"out": "x"}, in_out=("y",))
    y = torch.tensor(Y0, dtype=F64, requires_grad=y_requires_grad)
    x = torch.tensor(X0, dtype=F64, requires_grad=True)
    y_new, out = op(y, x)
    (out.sum() + 3 * y_new.sum()).backward()
    assert y.tolist() == Y0  # the caller's tensor is unchanged
    yr = torch.tensor(Y0, dtype=F64, requires_grad=True)
    xr = torch.tensor(X0, dtype=F64, requires_grad=True)
    y_ref, out_ref = _reference(yr, xr)
    (out_ref.sum() + 3 * y_ref.sum()).backward()
    torch.testing.assert_close(y_new, y_ref.detach())
    torch.testing.assert_close(out, out_ref.detach())
    torch.testing.assert_close(x.grad, xr.grad)  # was [0, 0] (y had no gradient buffer) or [16, 2] (flagged)
    if y_requires_grad:
        torch.testing.assert_close(y.grad, yr.grad)


@pytest.mark.parametrize("kernel", [K.step, K.step_flagged], ids=["unflagged", "flagged"])
def test_gradcheck_of_an_in_out_op(kernel):
    op = wpt.kernel_op(kernel, outputs={"out": "x"}, in_out=("y",))
    y = torch.tensor(Y0, dtype=F64, requires_grad=True)
    x = torch.tensor(X0, dtype=F64, requires_grad=True)
    assert torch.autograd.gradcheck(lambda a, b: op(a, b), (y, x))


def test_a_flagged_in_out_op_is_exact_for_a_read_before_the_update():
    # y <- y^2 reads y before writing it: the flagged kernel's backward runs on the values from before the op
    op = wpt.kernel_op(K.square_in_place_flagged, outputs={"out": "y"}, in_out=("y",))
    y = torch.tensor(Y0, dtype=F64, requires_grad=True)
    y_new, out = op(y)
    out.sum().backward()
    assert y.tolist() == Y0
    torch.testing.assert_close(y.grad, 2 * torch.tensor(Y0, dtype=F64))
    assert torch.autograd.gradcheck(lambda a: op(a), (torch.tensor(Y0, dtype=F64, requires_grad=True),))


def test_an_in_out_function_op_updates_a_copy_too():
    @wpt.op(outputs={"out": "x"}, in_out=("y",))
    def stepped(
        y: wp.array(dtype=wp.float64),
        x: wp.array(dtype=wp.float64),
        out: wp.array(dtype=wp.float64),
    ):
        wp.launch(K.step_flagged, dim=y.shape, inputs=[y, x, out])

    y = torch.tensor(Y0, dtype=F64, requires_grad=True)
    x = torch.tensor(X0, dtype=F64, requires_grad=True)
    y_new, out = stepped(y, x)
    out.sum().backward()
    assert y.tolist() == Y0
    yr = torch.tensor(Y0, dtype=F64, requires_grad=True)
    xr = torch.tensor(X0, dtype=F64, requires_grad=True)
    _reference(yr, xr)[1].sum().backward()
    torch.testing.assert_close(x.grad, xr.grad)
    torch.testing.assert_close(y.grad, yr.grad)


def test_in_out_under_torch_compile_and_opcheck():
    op = wpt.kernel_op(K.step_flagged, outputs={"out": "x"}, in_out=("y",))
    assert op.registered is not None
    y = torch.tensor(Y0, dtype=F64, requires_grad=True)
    x = torch.tensor(X0, dtype=F64, requires_grad=True)
    compiled = torch.compile(lambda a, b: op(a, b)[1].sum(), fullgraph=True, backend="aot_eager")
    compiled(y, x).backward()
    assert y.tolist() == Y0
    torch.testing.assert_close(x.grad, 2 * (torch.tensor(Y0, dtype=F64) + torch.tensor(X0, dtype=F64)))
    torch.library.opcheck(op.registered.forward, (torch.tensor(Y0, dtype=F64), torch.tensor(X0, dtype=F64)))


# -- negative twins


def test_a_kernel_writing_only_its_outputs_is_made_without_a_word_and_behaves_as_before():
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        op = wpt.kernel_op(K.writes_outputs_only, outputs={"out": "x"})
    x = torch.tensor(X0, dtype=F64, requires_grad=True)
    op(x).sum().backward()
    torch.testing.assert_close(x.grad, 2 * torch.tensor(X0, dtype=F64))


def test_a_write_through_a_helper_is_refused_and_a_use_the_bridge_cannot_follow_is_warned():
    with pytest.raises(ValueError, match="writes its input 'x'"):
        wpt.kernel_op(K.writes_through_a_helper, outputs={"out": "x"})
    with pytest.warns(UserWarning, match="may write its input 'x'"):
        wpt.kernel_op(K.may_write, outputs={"out": lambda x: x.shape[0]})
