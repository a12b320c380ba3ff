"""Generated kernel source for a spec."""

from __future__ import annotations

import ast

import pytest
from gems_kernels.pointwise.codegen import KernelSpec, render_kernel


def spec(**changes: object) -> KernelSpec:
    base = dict(
        rank=2,
        kinds=("tensor", "scalar", "param"),
        casts=(True, True, False),
        num_outputs=2,
        compute_dtype="tl.float32",
        index64=False,
    )
    base.update(changes)
    return KernelSpec(**base)  # type: ignore[arg-type]


@pytest.mark.parametrize("rank", [1, 2, 5])
def test_source_parses_and_names_every_dimension(rank: int) -> None:
    source = render_kernel(spec(rank=rank))
    ast.parse(source)
    assert all(f"shape{d}" in source for d in range(rank))
    assert f"shape{rank}" not in source


def test_tensors_are_loaded_scalars_filled_params_passed() -> None:
    source = render_kernel(spec())
    assert (
        "value0 = tl.load(in0 + (index0 * in0_stride0 + index1 * in0_stride1), mask=mask, other=1)"
        ".to(tl.float32)" in source
    )
    assert "value1 = tl.full([BLOCK], in1, tl.float32)" in source
    assert "value2 = in2" in source
    assert "result0, result1 = _scalar_fn(value0, value1, value2)" in source


def test_int64_indexing_widens_the_offsets() -> None:
    assert "pid.to(tl.int64)" in render_kernel(spec(index64=True))
    assert "tl.int64" not in render_kernel(spec(index64=False))
