"""Sessions register at the vendor's dispatch key and restore the native kernels on exit."""

from __future__ import annotations

from pathlib import Path

import gems_kernels
import pytest
import torch
from gems_kernels import dispatch, registration
from gems_kernels.backends import current_vendor


def kernel_at_key(overload: str) -> str:
    """The dispatcher table's line for the vendor's backend key of ``aten::<overload>``."""
    key = current_vendor().dispatch_key
    table = torch._C._dispatch_dump_table(f"aten::{overload}")
    lines = [line for line in table.splitlines() if line.startswith(f"{key}:")]
    assert len(lines) == 1, table
    return lines[0]


def is_gems(overload: str) -> bool:
    return "gems_kernels" in kernel_at_key(overload)


def recorded_ops(path: Path) -> list[str]:
    return path.read_text().split() if path.exists() else []


def test_use_gems_registers_inside_and_restores_native_after() -> None:
    before = kernel_at_key("add.Tensor")
    assert not is_gems("add.Tensor")
    with gems_kernels.use_gems(include=["add"]):
        assert is_gems("add.Tensor")
        assert is_gems("add_.Scalar")
        assert not is_gems("mul.Tensor")
    assert kernel_at_key("add.Tensor") == before


def test_nested_sessions_unwind_in_order() -> None:
    with gems_kernels.use_gems(include=["add"]):
        with gems_kernels.use_gems(include=["mul", "add"]):
            assert is_gems("mul.Tensor") and is_gems("add.Tensor")
        assert is_gems("add.Tensor")
        assert not is_gems("mul.Tensor")
    assert not is_gems("add.Tensor")


def test_enable_then_use_keeps_enable_until_disable() -> None:
    gems_kernels.enable(unused=["mul"])
    try:
        assert is_gems("add.Tensor") and not is_gems("mul.Tensor")
        with gems_kernels.use_gems(include=["mul"]):
            assert is_gems("mul.Tensor")
        assert is_gems("add.Tensor") and not is_gems("mul.Tensor")
    finally:
        gems_kernels.disable()
    assert not is_gems("add.Tensor")


def test_only_enable_registers_only_the_named_ops() -> None:
    session = gems_kernels.only_enable(["relu", "sub.Tensor"])
    try:
        assert session.overloads == ("sub.Tensor", "relu", "relu_")
        assert is_gems("relu") and is_gems("sub.Tensor") and not is_gems("sub.Scalar")
    finally:
        gems_kernels.disable()
    assert not session.is_open and not is_gems("relu")


def test_exclude_leaves_ops_native() -> None:
    with gems_kernels.use_gems(exclude=["add"]) as session:
        assert "add.Tensor" not in session.overloads
        assert not is_gems("add.Tensor") and is_gems("mul.Tensor")


def test_unknown_include_names_the_argument() -> None:
    with pytest.raises(ValueError, match=r"include: .*'no_such_op'"):
        gems_kernels.use_gems(include=["no_such_op"]).__enter__()


def test_kernels_run_and_match_aten(recorded: Path) -> None:
    x = torch.randn(4, 5)
    expected = torch.nn.functional.gelu(x * 2 + 1)
    with gems_kernels.use_gems(record=True, record_path=recorded):
        actual = torch.nn.functional.gelu(x * 2 + 1)
    torch.testing.assert_close(actual, expected)
    assert recorded_ops(recorded) == ["mul.Tensor", "add.Tensor", "gelu"]


def test_recording_logs_each_op_once(recorded: Path) -> None:
    x = torch.randn(3)
    with gems_kernels.use_gems(include=["add"], record=True, record_path=recorded) as session:
        for _ in range(3):
            x = x + 1
    assert recorded_ops(recorded) == ["add.Tensor"]
    assert session.recorder is not None and session.recorder.seen == {"add.Tensor"}


def test_recording_off_creates_no_recorder() -> None:
    with gems_kernels.use_gems(include=["add"]) as session:
        assert session.recorder is None


def test_condition_false_falls_back_to_aten(recorded: Path) -> None:
    a = torch.tensor([7, -7, 5])
    b = torch.tensor([2, 2, -3])
    with gems_kernels.use_gems(include=["div"], record=True, record_path=recorded):
        floors = torch.div(a, b, rounding_mode="floor")
        halves = torch.div(a.float(), b.float(), rounding_mode="floor")
    assert floors.tolist() == [3, -4, -2]
    assert halves.tolist() == [3.0, -4.0, -2.0]
    assert recorded_ops(recorded) == ["div.Tensor_mode"]


def test_backward_ops_run_under_autograd(recorded: Path) -> None:
    x = torch.randn(6, requires_grad=True)
    with gems_kernels.use_gems(
        include=["gelu", "gelu_backward"], record=True, record_path=recorded
    ):
        torch.nn.functional.gelu(x).sum().backward()
    grad = x.grad
    assert grad is not None
    reference = x.detach().clone().requires_grad_()
    torch.nn.functional.gelu(reference).sum().backward()
    torch.testing.assert_close(grad, reference.grad)
    assert "gelu_backward" in recorded_ops(recorded)


def _outcome(call: object, x: torch.Tensor) -> tuple[str, object]:
    """A call's result as (dtype, values) or its error as (type, first line of the message)."""
    try:
        result = call(x)  # type: ignore[operator]
    except Exception as error:  # compared with ATen's own error
        return type(error).__name__, str(error).splitlines()[0]
    return str(result.dtype), result.tolist()


FALL_THROUGH_CALLS = {
    "mul-int": lambda x: x * 2,
    "radd-int": lambda x: 1 + x,
    "mul-float": lambda x: x * 2.5,
    "where-int": lambda x: torch.where(x.real > 1, x, 0),
    "remainder-int": lambda x: x.remainder(3),
    "full-int": lambda x: torch.full((3,), 2, dtype=x.dtype),
    "fill-int": lambda x: x.clone().fill_(1),
    "sub": lambda x: x - x,
    "neg": lambda x: -x,
    "abs": lambda x: x.abs(),
    "sum": lambda x: x.sum(),
    "cat": lambda x: torch.cat([x, x]),
}


@pytest.mark.parametrize("dtype", [torch.complex64, torch.bool, torch.bfloat16, torch.int8])
@pytest.mark.parametrize("name", FALL_THROUGH_CALLS)
def test_calls_gems_does_not_take_behave_as_in_aten(name: str, dtype: torch.dtype) -> None:
    """Complex tensors, bool operands ATen refuses, and Python numbers in Tensor parameters on
    the way back to ATen: the same result, or the same error, as without gems."""
    call, x = FALL_THROUGH_CALLS[name], torch.tensor([1, 2, 3, 4]).to(dtype)
    expected = _outcome(call, x)
    with gems_kernels.use_gems():
        assert _outcome(call, x) == expected


MIXED_COMPLEX_CALLS = {
    "mul-complex-number": lambda x: x * 1j,
    "add-complex-other": lambda x: x + x.to(torch.complex64),
    "layer_norm-complex-weight": lambda x: torch.nn.functional.layer_norm(
        x, (4,), x.to(torch.complex64)
    ),
    "cat-complex-second": lambda x: torch.cat([x, x.to(torch.complex64)]),
    "where-complex-other": lambda x: torch.where(x > 2, x, x.to(torch.complex64)),
}


@pytest.mark.parametrize("name", MIXED_COMPLEX_CALLS)
def test_a_complex_operand_beside_real_ones_goes_to_aten(name: str) -> None:
    """Every tensor parameter of the schema is looked at (optional ones and lists included),
    and a complex number standing for a tensor counts too."""
    call, x = MIXED_COMPLEX_CALLS[name], torch.tensor([1.0, 2.0, 3.0, 4.0])
    expected = _outcome(call, x)
    with gems_kernels.use_gems():
        assert _outcome(call, x) == expected


def test_the_complex_check_reads_the_schemas_tensor_parameters() -> None:
    entries = {entry.overload: entry for entry in registration.REGISTRATIONS}
    layer_norm = dispatch.tensor_parameters(entries["native_layer_norm"])
    assert layer_norm.positions == (0, 2, 3)  # input, weight?, bias?; not normalized_shape
    assert layer_norm.list_positions == ()
    assert dispatch.tensor_parameters(entries["cat"]).list_positions == (0,)
