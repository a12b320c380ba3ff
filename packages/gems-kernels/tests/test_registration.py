"""The registration table resolves against torch.ops.aten and selects by name."""

from __future__ import annotations

import pytest
import torch
from gems_kernels import registration


def test_every_entry_resolves_to_an_aten_overload() -> None:
    unresolved = [
        entry.overload
        for entry in registration.REGISTRATIONS
        if not hasattr(getattr(torch.ops.aten, entry.op_name, None), entry.overload_name)
    ]
    assert unresolved == []


def test_overloads_are_unique() -> None:
    names = registration.all_registered_ops()
    assert len(names) == len(set(names))


@pytest.mark.parametrize(
    ("include", "exclude", "expected"),
    [
        pytest.param(["maximum"], None, ["maximum"], id="by-op-name"),
        pytest.param(["add.out"], None, ["add.out"], id="by-overload"),
        pytest.param(
            ["add"],
            ["add_.Scalar", "add.out"],
            ["add.Tensor", "add.Scalar", "add_.Tensor"],
            id="exclude-overload",
        ),
    ],
)
def test_select(include: list[str], exclude: list[str] | None, expected: list[str]) -> None:
    assert [e.overload for e in registration.select(include, exclude)] == expected


def test_backend_entries_have_a_backend_kernel_to_override() -> None:
    """Entries at the backend key must not be composites that ATen decomposes above it (an
    op with its own autograd kernel, such as silu_backward, reaches the backend all the same)."""

    def decomposed_above_backend(overload: str) -> bool:
        table = torch._C._dispatch_dump_table(f"aten::{overload}").splitlines()
        return any(line.startswith("AutogradCPU:") and "[math kernel]" in line for line in table)

    composite = [
        entry.overload
        for entry in registration.REGISTRATIONS
        if not entry.autograd and decomposed_above_backend(entry.overload)
    ]
    assert composite == []
