"""mm, bmm, addmm, mv and linear against the float64 reference, transposed operands too."""

from __future__ import annotations

import gems_kernels
import pytest
import torch
import torch.nn.functional as F
from gems_kernels import accuracy

SHAPES = [(1, 1, 1), (5, 7, 3), (33, 17, 40), (64, 48, 70)]


@pytest.mark.parametrize(("m", "k", "n", "dtype"), accuracy.dtype_variants(SHAPES))
def test_mm(m: int, k: int, n: int, dtype: torch.dtype) -> None:
    a = accuracy.make_tensor((m, k), dtype, low=-1, high=1)
    b = accuracy.make_tensor((n, k), dtype, low=-1, high=1).t()
    accuracy.check_op(torch.mm, a, b, overloads=["mm"], reduce_size=k)


@pytest.mark.parametrize("dtype", accuracy.FLOAT_DTYPES, ids=str)
def test_bmm_addmm_mv(dtype: torch.dtype) -> None:
    a = accuracy.make_tensor((3, 9, 20), dtype, low=-1, high=1)
    b = accuracy.make_tensor((3, 20, 6), dtype, low=-1, high=1)
    accuracy.check_op(torch.bmm, a, b, overloads=["bmm"], reduce_size=20)
    bias = accuracy.make_tensor((6,), dtype)
    accuracy.check_op(
        lambda x, y, z: torch.addmm(x, y, z, beta=0.5, alpha=2.0),
        bias,
        a[0],
        b[0],
        overloads=["addmm"],
        reduce_size=20,
    )
    accuracy.check_op(torch.mv, a[1], b[1, :, 0], overloads=["mv"], reduce_size=20)


def test_linear_forward_and_backward() -> None:
    x = accuracy.make_tensor((4, 10), torch.float32, low=-1, high=1)
    weight = accuracy.make_tensor((6, 10), torch.float32, low=-1, high=1)
    bias = accuracy.make_tensor((6,), torch.float32)

    def run(*tensors: torch.Tensor) -> tuple[torch.Tensor, ...]:
        leaves = [t.detach().requires_grad_() for t in tensors]
        y = F.linear(*leaves)
        y.backward(torch.ones_like(y))
        return (y, *(leaf.grad for leaf in leaves))

    accuracy.check_op(run, x, weight, bias, overloads=["addmm", "mm"], reduce_size=10)


def test_float64_stays_in_aten() -> None:
    from gems_kernels import use_gems

    with use_gems(include=["mm"], record=True) as session:
        torch.mm(torch.ones(2, 2, dtype=torch.float64), torch.ones(2, 2, dtype=torch.float64))
    assert session.recorder is not None and not session.recorder.seen


def test_gpu_block_choice_is_tuned_once_per_bucket(monkeypatch: pytest.MonkeyPatch) -> None:
    """The GPU path of block selection, with the device and timings faked (no GPU here)."""
    from gems_kernels.backends import VENDORS
    from gems_kernels.ops import matmul

    monkeypatch.setattr(matmul, "current_vendor", lambda: VENDORS["nvidia"])
    monkeypatch.setattr(torch.cuda, "get_device_name", lambda: "fake-gpu")
    measured: list[tuple[int, ...]] = []

    def measure(config: tuple[int, ...]) -> float:
        measured.append(config)
        return 1.0 if config == (128, 64, 32, 4) else 2.0

    assert matmul._blocks(100, 60, 70, torch.float16, measure) == (128, 64, 32, 4)
    assert matmul._blocks(120, 64, 128, torch.float16, measure) == (128, 64, 32, 4)
    assert len(measured) == len(matmul._GPU_CANDIDATES)


def test_plans_follow_the_operand_layout(monkeypatch: pytest.MonkeyPatch) -> None:
    """One plan per layout: the same shapes with other strides get their own, and results
    stay right whichever plan a call finds; the plan table stays within its bound."""
    from gems_kernels.ops import matmul

    monkeypatch.setattr(matmul, "_PLANS", {})
    monkeypatch.setattr(matmul, "_MAX_PLANS", 3)
    a, b = torch.randn(5, 7), torch.randn(7, 3)
    layouts = [(a, b), (a.t().contiguous().t(), b), (a, b.t().contiguous().t()), (a, b)]
    expected = [left @ right for left, right in layouts]
    with gems_kernels.use_gems(include=["mm"]):
        for (left, right), want in zip(layouts, expected, strict=True):
            torch.testing.assert_close(torch.mm(left, right), want)
        assert len(matmul._PLANS) == 3
        torch.mm(a.t().contiguous().t(), b.t().contiguous().t())  # a fourth layout: starts over
        assert len(matmul._PLANS) == 1
