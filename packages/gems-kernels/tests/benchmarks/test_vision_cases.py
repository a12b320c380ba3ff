"""The vision cases of ``run_h200.py`` run in --smoke mode and agree with ATen."""

from __future__ import annotations

from types import SimpleNamespace

import pytest
import torch


@pytest.mark.parametrize("op", ["conv2d_3x3_fwd_bwd", "batch_norm_fwd_bwd", "max_pool2d_fwd_bwd"])
def test_vision_case_agrees_with_aten(bench: SimpleNamespace, op: str) -> None:
    cases = bench.run_h200.h200_cases(True)
    case = next(c for c in cases if c.op == op and c.dtype == torch.float32)
    results, failures = bench.harness.run_cases([case], True, 600.0)
    assert failures == [] and results[0].matches, results
