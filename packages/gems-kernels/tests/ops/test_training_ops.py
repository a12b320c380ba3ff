"""Ops a training step needs beyond the forward math: optimizer arithmetic, lists of tensors,
fused Adam, gradient scaling, copies, out/in-place forms, losses and random fills."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import gems_kernels
import pytest
import torch
import torch.nn.functional as F
from gems_kernels import accuracy


def _x(*shape: int, dtype: torch.dtype = torch.float32, low: float = -2.0) -> torch.Tensor:
    return accuracy.make_tensor(shape, dtype, low=low)


def _listed(fn: Callable[..., Any]) -> Callable[..., tuple[torch.Tensor, ...]]:
    """A foreach or in-place call turned into a function returning the tensors it wrote."""

    def run(targets: list[torch.Tensor], *args: Any) -> tuple[torch.Tensor, ...]:
        result = fn(targets, *args)
        return tuple(result) if isinstance(result, (list, tuple)) and result else tuple(targets)

    return run


POINTWISE = [
    pytest.param("addcmul", lambda x, a, b: torch.addcmul(x, a, b, value=0.3), id="addcmul"),
    pytest.param(
        "addcdiv", lambda x, a, b: torch.addcdiv(x, a, b.abs() + 1, value=-0.5), id="addcdiv"
    ),
    pytest.param("lerp.Scalar", lambda x, a, b: torch.lerp(x, a, 0.7), id="lerp-scalar"),
    pytest.param("lerp.Tensor", lambda x, a, b: torch.lerp(x, a, b.sigmoid()), id="lerp-tensor"),
    pytest.param("addcmul_", lambda x, a, b: x.addcmul_(a, b, value=2), id="addcmul_"),
    pytest.param("lerp_.Scalar", lambda x, a, b: x.lerp_(a, 0.1), id="lerp_"),
    pytest.param("clamp_min", lambda x, a, b: torch.clamp_min(x, 0.25), id="clamp_min"),
    pytest.param("clamp_max_", lambda x, a, b: x.clamp_max_(0.25), id="clamp_max_"),
    pytest.param(
        "clamp.out", lambda x, a, b: torch.clamp(x, -1, 1, out=x.new_empty(0)), id="clamp-out"
    ),
    pytest.param("clamp_.Tensor", lambda x, a, b: x.clamp_(a, a + 1), id="clamp_-tensor"),
    pytest.param(
        "where.self_out",
        lambda x, a, b: torch.where(x > 0, a, b, out=torch.empty_like(x)),
        id="where-out",
    ),
    pytest.param("pow_.Scalar", lambda x, a, b: x.abs().pow_(1.5), id="pow_"),
    pytest.param(
        "silu_backward", lambda x, a, b: torch.ops.aten.silu_backward(a, x), id="silu_backward"
    ),
    pytest.param(
        "silu.out",
        lambda x, a, b: (
            F.silu(x, inplace=False)
            .clone()
            .copy_(torch.ops.aten.silu.out(x, out=torch.empty_like(x)))
        ),
        id="silu-out",
    ),
    pytest.param(
        "softplus", lambda x, a, b: F.softplus(x * 10, beta=2, threshold=5), id="softplus"
    ),
    pytest.param(
        "softplus_backward",
        lambda x, a, b: torch.ops.aten.softplus_backward(a, x * 10, 2, 5),
        id="softplus_backward",
    ),
    pytest.param(
        "nan_to_num",
        lambda x, a, b: torch.nan_to_num(
            torch.where(x > 1, x / 0, x) * torch.where(x < -1, 0.0, 1.0),
            nan=0.5,
            posinf=3.0,
            neginf=-3.0,
        ),
        id="nan_to_num",
    ),
    pytest.param(
        "copy_",
        lambda x, a, b: torch.empty(4, 5, dtype=torch.bfloat16).copy_(x.t()),
        id="copy_-bf16",
    ),
    pytest.param("_to_copy", lambda x, a, b: x.to(torch.float16), id="to-half"),
    pytest.param("_to_copy", lambda x, a, b: x.t().to(torch.float64), id="to-double-transposed"),
]


@pytest.mark.parametrize(("overload", "fn"), POINTWISE)
def test_pointwise(overload: str, fn: Callable[..., torch.Tensor]) -> None:
    accuracy.check_op(fn, _x(5, 4), _x(5, 4), _x(5, 4), overloads=[overload])


REDUCING = [
    pytest.param("mse_loss", lambda x, y: F.mse_loss(x, y), 20, id="mse_loss-mean"),
    pytest.param(
        "mse_loss", lambda x, y: F.mse_loss(x, y, reduction="none"), 1, id="mse_loss-none"
    ),
    pytest.param("logsumexp", lambda x, y: torch.logsumexp(x, 1), 4, id="logsumexp"),
    pytest.param(
        "logsumexp",
        lambda x, y: torch.logsumexp(torch.where(x > 0, x, -torch.inf), (0, 1), keepdim=True),
        20,
        id="logsumexp-inf",
    ),
    pytest.param(
        "_softmax.out", lambda x, y: torch.softmax(x, 0, out=x.new_empty(1)), 1, id="softmax-out"
    ),
    pytest.param(
        "_log_softmax.out",
        lambda x, y: torch.log_softmax(x, 1, out=x.new_empty(5, 4)),
        1,
        id="log_softmax-out",
    ),
    pytest.param(
        "sum.IntList_out", lambda x, y: torch.sum(x, 1, out=x.new_empty(5)), 4, id="sum-out"
    ),
    pytest.param("cumsum_", lambda x, y: x.clone().cumsum_(0), 5, id="cumsum_"),
    pytest.param(
        "cumsum.out", lambda x, y: torch.cumsum(x, 1, out=x.new_empty(0)), 4, id="cumsum-out"
    ),
    pytest.param("tril_", lambda x, y: x.clone().tril_(1), 1, id="tril_"),
    pytest.param("triu.out", lambda x, y: torch.triu(x, -1, out=x.new_empty(0)), 1, id="triu-out"),
    pytest.param(
        "mm.out",
        lambda x, y: torch.mm(x, y.t(), out=x.new_empty(5, 5).t()),
        4,
        id="mm-out-transposed",
    ),
    pytest.param(
        "bmm.out", lambda x, y: torch.bmm(x[None], y.t()[None], out=x.new_empty(0)), 4, id="bmm-out"
    ),
    pytest.param(
        "addmm_", lambda x, y: x.new_ones(5, 5).addmm_(x, y.t(), beta=0.5, alpha=2), 4, id="addmm_"
    ),
    pytest.param(
        "baddbmm",
        lambda x, y: torch.baddbmm(
            x.new_ones(2, 5, 5), x.expand(2, 5, 4), y.t().expand(2, 4, 5), beta=0.5
        ),
        4,
        id="baddbmm",
    ),
    pytest.param(
        "baddbmm",
        lambda x, y: torch.baddbmm(
            torch.arange(50.0, dtype=x.dtype).view(2, 5, 5),
            x.expand(2, 5, 4),
            y.t().expand(2, 4, 5),
        ),
        4,
        id="baddbmm-batched-bias",
    ),
]


@pytest.mark.parametrize(("overload", "fn", "terms"), REDUCING)
def test_reducing(overload: str, fn: Callable[..., torch.Tensor], terms: int) -> None:
    accuracy.check_op(fn, _x(5, 4), _x(5, 4), overloads=[overload], reduce_size=terms)


def test_mse_loss_backward() -> None:
    x, y = _x(6, 3).requires_grad_(), _x(6, 3)
    grad = accuracy.with_gradients(lambda x, y: F.mse_loss(x, y))
    accuracy.check_op(grad, x, y, torch.tensor(0.7), overloads=["mse_loss_backward"])


FOREACH = [
    pytest.param(
        "_foreach_add_.Scalar", lambda t, o: torch._foreach_add_(t, 0.5), id="add_-scalar"
    ),
    pytest.param(
        "_foreach_add.List", lambda t, o: torch._foreach_add(t, o, alpha=2), id="add-list"
    ),
    pytest.param(
        "_foreach_mul_.Tensor",
        lambda t, o: torch._foreach_mul_(t, torch.tensor(0.3)),
        id="mul_-tensor",
    ),
    pytest.param(
        "_foreach_div_.ScalarList",
        lambda t, o: torch._foreach_div_(t, [2.0, 3.0]),
        id="div_-scalarlist",
    ),
    pytest.param("_foreach_sub_.List", lambda t, o: torch._foreach_sub_(t, o), id="sub_-list"),
    pytest.param("_foreach_lerp_.Scalar", lambda t, o: torch._foreach_lerp_(t, o, 0.1), id="lerp_"),
    pytest.param(
        "_foreach_addcmul_.Scalar",
        lambda t, o: torch._foreach_addcmul_(t, o, o, 0.2),
        id="addcmul_",
    ),
    pytest.param(
        "_foreach_addcdiv_.ScalarList",
        lambda t, o: torch._foreach_addcdiv_(t, o, [u.abs() + 1 for u in o], [0.1, -0.2]),
        id="addcdiv_",
    ),
    pytest.param(
        "_foreach_sqrt", lambda t, o: torch._foreach_sqrt([u.abs() for u in t]), id="sqrt"
    ),
    pytest.param("_foreach_norm.Scalar", lambda t, o: torch._foreach_norm(t), id="norm"),
    pytest.param("_foreach_maximum.List", lambda t, o: torch._foreach_maximum(t, o), id="maximum"),
]


@pytest.mark.parametrize(("overload", "fn"), FOREACH)
def test_foreach(overload: str, fn: Callable[..., Any]) -> None:
    targets = [_x(3, 4), _x(7)]
    others = [_x(3, 4), _x(7)]
    accuracy.check_op(_listed(fn), targets, others, overloads=[overload], reduce_size=12)


@pytest.mark.parametrize("overload", ["_fused_adamw_", "_fused_adam_"])
@pytest.mark.parametrize("with_scale", [False, True], ids=["plain", "grad-scale"])
def test_fused_adam(overload: str, with_scale: bool) -> None:
    def step(params: list[torch.Tensor], grads: list[torch.Tensor]) -> tuple[torch.Tensor, ...]:
        exp_avgs = [torch.full_like(p, 0.1) for p in params]
        exp_avg_sqs = [torch.full_like(p, 0.2) for p in params]
        steps = [torch.tensor(3.0) for _ in params]
        scale = (
            {"grad_scale": torch.tensor(4.0), "found_inf": torch.tensor(0.0)} if with_scale else {}
        )
        getattr(torch, overload)(
            params, grads, exp_avgs, exp_avg_sqs, [], steps, lr=0.01, beta1=0.9, beta2=0.99,
            weight_decay=0.1, eps=1e-8, amsgrad=False, maximize=False, **scale,
        )  # fmt: skip
        return (*params, *exp_avgs, *exp_avg_sqs)

    accuracy.check_op(step, [_x(4, 3), _x(5)], [_x(4, 3), _x(5)], overloads=[overload])


def test_fused_adam_skips_the_step_on_inf() -> None:
    param, grad = _x(6), _x(6)
    before = param.clone()
    with gems_kernels.use_gems(include=["_fused_adamw_"]):
        torch._fused_adamw_(
            [param], [grad], [torch.zeros(6)], [torch.zeros(6)], [], [torch.tensor(1.0)],
            lr=0.1, beta1=0.9, beta2=0.99, weight_decay=0.0, eps=1e-8, amsgrad=False,
            maximize=False, grad_scale=torch.tensor(1.0), found_inf=torch.tensor(1.0),
        )  # fmt: skip
    assert torch.equal(param, before)


@pytest.mark.parametrize("bad", [None, float("inf"), float("nan")], ids=["finite", "inf", "nan"])
def test_amp_unscale(bad: float | None) -> None:
    def unscale(grads: list[torch.Tensor]) -> tuple[torch.Tensor, ...]:
        found_inf = torch.zeros(())
        torch._amp_foreach_non_finite_check_and_unscale_(grads, found_inf, torch.tensor(0.25))
        return (*grads, found_inf)

    grads = [_x(3, 5), _x(4)]
    if bad is not None:
        grads[1][2] = bad
    result = accuracy.check_op(
        unscale, grads, overloads=["_amp_foreach_non_finite_check_and_unscale_"]
    )
    assert result[-1].item() == (0.0 if bad is None else 1.0)


@pytest.mark.parametrize(("tracker", "found_inf"), [(0, 0.0), (1, 0.0), (1, 1.0)])
def test_amp_update_scale(tracker: int, found_inf: float, recorded: Any) -> None:
    def update() -> tuple[torch.Tensor, torch.Tensor]:
        scale, growth = torch.tensor(8.0), torch.tensor(tracker, dtype=torch.int32)
        torch._amp_update_scale_(scale, growth, torch.tensor(found_inf), 2.0, 0.5, 2)
        return scale, growth

    expected = update()
    with gems_kernels.use_gems(include=["_amp_update_scale_"], record=True, record_path=recorded):
        actual = update()
    assert recorded.read_text().split() == ["_amp_update_scale_"]
    assert all(torch.equal(a, e) for a, e in zip(actual, expected, strict=True))


def test_one_hot_and_isfinite() -> None:
    accuracy.check_op(
        lambda t: F.one_hot(t, 5), torch.tensor([[0, 3], [4, 1]]), overloads=["one_hot"]
    )
    accuracy.check_op(lambda t: F.one_hot(t), torch.tensor([2, 0]), overloads=["one_hot"])
    x = torch.tensor([1.0, float("inf"), float("nan"), -float("inf"), 0.0])
    accuracy.check_op(torch.isfinite, x, overloads=["isfinite"])


@pytest.mark.parametrize(
    ("overload", "fill", "mean", "std"),
    [
        pytest.param("uniform_", lambda t: t.uniform_(-1, 3), 1.0, 4 / 12**0.5, id="uniform_"),
        pytest.param("normal_", lambda t: t.normal_(2, 0.5), 2.0, 0.5, id="normal_"),
        pytest.param(
            "bernoulli_.float", lambda t: t.bernoulli_(0.25), 0.25, 0.75**0.5 * 0.5, id="bernoulli_"
        ),
    ],
)
def test_random_fills(
    overload: str, fill: Callable[..., Any], mean: float, std: float, recorded: Any
) -> None:
    with gems_kernels.use_gems(include=[overload], record=True, record_path=recorded):
        torch.manual_seed(3)
        first = fill(torch.empty(4000))
        torch.manual_seed(3)
        again = fill(torch.empty(4000))
    assert overload in recorded.read_text().split()
    assert torch.equal(first, again)  # the seed comes from torch's generator
    assert abs(float(first.mean()) - mean) < 4 * std / 4000**0.5
    assert abs(float(first.std()) - std) < 0.05 * std


@pytest.mark.parametrize(
    ("overload", "fn"),
    [
        pytest.param("nonzero", lambda x, m: torch.nonzero(x * m), id="nonzero"),
        pytest.param("nonzero", lambda x, m: torch.nonzero((x * m).t()), id="nonzero-transposed"),
        pytest.param("nonzero", lambda x, m: torch.nonzero(m[0]), id="nonzero-bool-1d"),
        pytest.param("masked_select", lambda x, m: torch.masked_select(x, m.bool()), id="select"),
        pytest.param(
            "masked_select", lambda x, m: torch.masked_select(x, m[0].bool()), id="broadcast"
        ),
    ],
)
def test_nonzero_and_masked_select(overload: str, fn: Callable[..., torch.Tensor]) -> None:
    mask = (torch.rand(4, 6) > 0.5).to(torch.float32)
    accuracy.check_op(fn, _x(4, 6), mask, overloads=[overload])
