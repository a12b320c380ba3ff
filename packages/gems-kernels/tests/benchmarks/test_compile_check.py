"""The sm_90 compile sweep: its launch recorder (always, no compilation) and, opt-in, the sweep.

The recorder runs under the interpreter like every other test here; compiling needs minutes of
CPU, so the sweep runs only when ``GEMS_COMPILE_CHECK=1`` asks for it.
"""

from __future__ import annotations

import importlib
import json
import os
import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
import torch
import triton  # type: ignore[import-untyped]
import triton.language as tl  # type: ignore[import-untyped]


@triton.jit
def _scaled_copy(src, dst, n, scale, FLAG: tl.constexpr, BLOCK: tl.constexpr):
    offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    values = tl.load(src + offsets, mask=offsets < n)
    if FLAG:
        values = values * scale
    tl.store(dst + offsets, values, mask=offsets < n)


def _launch(src: torch.Tensor, n: int, **options: Any) -> None:
    dst = torch.empty_like(src)
    _scaled_copy[(1,)](src, dst, n, 2.0, True, BLOCK=64, **options)


def _only(recorder: Any) -> Any:
    (spec,) = recorder.launches
    return spec


SIGNATURES = [
    pytest.param(torch.float32, 7, {}, ("*fp32", "i32"), {"src": "D", "dst": "D"}, id="fp32-i32"),
    pytest.param(torch.bfloat16, 16, {}, ("*bf16", "i32"),
                 {"src": "D", "dst": "D", "n": "D"}, id="bf16-divisible-by-16"),
    pytest.param(torch.int64, 2**33 + 1, {}, ("*i64", "i64"), {"src": "D", "dst": "D"},
                 id="int64-large-count"),
    pytest.param(torch.float16, 1, {}, ("*fp16", "constexpr"), {"src": "D", "dst": "D"},
                 id="equal-to-one-is-constant"),
]  # fmt: skip


@pytest.mark.parametrize(("dtype", "n", "options", "types", "attrs"), SIGNATURES)
def test_recorder_types_each_argument_as_cuda_would(
    bench: SimpleNamespace, dtype: torch.dtype, n: int, options: dict, types: tuple, attrs: dict
) -> None:
    recorder = bench.compile_check.Recorder()
    with recorder.installed():
        _launch(torch.zeros(64, dtype=dtype), n, **options)
    spec = _only(recorder)
    signature = dict(spec.signature)
    assert (signature["src"], signature["n"]) == types
    assert signature["scale"] == "fp32"
    assert signature["FLAG"] == signature["BLOCK"] == "constexpr"
    constexprs = dict(spec.constexprs)
    assert (constexprs["FLAG"], constexprs["BLOCK"]) == (True, 64)
    assert dict(spec.attrs) == attrs
    assert dict(spec.options) == {"num_warps": 4, "num_stages": 3}
    assert spec.kernel.qualname == "_scaled_copy"


def test_recorder_counts_repeats_and_keeps_launch_options(bench: SimpleNamespace) -> None:
    recorder = bench.compile_check.Recorder()
    with recorder.installed():
        for _ in range(3):
            _launch(torch.zeros(64), 7, num_warps=8, num_stages=2)
        _launch(torch.zeros(64)[1:], 7, num_warps=8, num_stages=2)  # unaligned pointer
    counts = sorted(recorder.launches.values())
    assert counts == [1, 3]
    for spec in recorder.launches:
        assert dict(spec.options) == {"num_warps": 8, "num_stages": 2}
    assert sorted(dict(s.attrs).get("src", "") for s in recorder.launches) == ["", "D"]


def test_recorder_is_removed_on_exit(bench: SimpleNamespace) -> None:
    recorder = bench.compile_check.Recorder()
    with recorder.installed():
        pass
    _launch(torch.zeros(64), 7)
    assert not recorder.launches


def test_gpu_settings_reach_the_ops_not_dispatch(bench: SimpleNamespace) -> None:
    softmax = importlib.import_module("gems_kernels.ops.softmax")
    dispatch = importlib.import_module("gems_kernels.dispatch")
    with bench.compile_check.gpu_settings("nvidia"):
        assert softmax.current_vendor().name == "nvidia"
        assert dispatch.current_vendor().name == "cpu"
    assert softmax.current_vendor().name == "cpu"


def test_generated_kernels_and_constants_survive_json(bench: SimpleNamespace) -> None:
    import gems_kernels

    check = bench.compile_check
    recorder = check.Recorder()
    with recorder.installed():
        gems_kernels.ops.add(torch.ones(8, 8), torch.ones(8, 8).t())
        gems_kernels.ops.softmax(torch.ones(4, 8), -1)
    specs = list(recorder.launches)
    labels = sorted(s.kernel.label for s in specs)
    assert labels == ["ops.softmax._softmax_forward_kernel", "pointwise[_add]"]
    generated = next(s for s in specs if s.kernel.scalar is not None)
    assert "def _pointwise_kernel(" in generated.kernel.source
    restored = [check._from_json(d) for d in json.loads(json.dumps([check._to_json(s)
                                                                    for s in specs]))]  # fmt: skip
    assert restored == specs


@pytest.mark.slow
@pytest.mark.skipif(
    os.environ.get("GEMS_COMPILE_CHECK") != "1",
    reason="compiling for sm_90 takes minutes of CPU: set GEMS_COMPILE_CHECK=1 to run it",
)
def test_smoke_kernels_compile_for_sm90(tmp_path: Path) -> None:
    script = Path(__file__).resolve().parents[2] / "benchmarks" / "compile_check.py"
    env = {k: v for k, v in os.environ.items() if k != "TRITON_INTERPRET"}
    env["TRITON_CACHE_DIR"] = str(tmp_path)
    result = subprocess.run(
        [sys.executable, str(script), "--workload", "bench", "--cases", "softmax", "mm", "add"],
        env=env, capture_output=True, text=True, timeout=1800,
    )  # fmt: skip
    assert result.returncode == 0, result.stdout[-4000:] + result.stderr[-4000:]
    assert "0 failed" in result.stdout
    assert "ops.matmul._matmul_kernel" in result.stdout


def test_never_launched_lists_kernels_not_device_helpers(bench: SimpleNamespace) -> None:
    missed = bench.compile_check.never_launched([])
    assert "ops.softmax._softmax_forward_kernel" in missed
    assert "pointwise[_silu]" in missed
    assert not any("row_max_and_sum_exp" in label for label in missed)  # a device helper


def test_summary_counts_failures_and_shared_memory(bench: SimpleNamespace) -> None:
    check = bench.compile_check
    kernel = check.KernelRef("gems_kernels.ops.softmax", "_softmax_forward_kernel")
    specs = [check.Specialization(kernel, (), (("BLOCK", b),), (), ()) for b in (1, 2, 3)]
    rows = check.summary(specs, [("", 1024), ("CompilationError: bad", 0), ("", 4096)])
    assert rows == [("ops.softmax._softmax_forward_kernel", "3", "2", "1", "4.0",
                     "CompilationError: bad")]  # fmt: skip


def test_dry_recording_runs_nothing_and_flags_grids_cuda_refuses(bench: SimpleNamespace) -> None:
    recorder = bench.compile_check.Recorder(execute=False)
    src, dst = torch.ones(64), torch.zeros(64)
    with recorder.installed():
        _scaled_copy[(1, 70000)](src, dst, 64, 2.0, True, BLOCK=64)
        _scaled_copy[lambda meta: (triton.cdiv(meta["n"], meta["BLOCK"]),)](
            src, dst, 64, 2.0, True, BLOCK=64
        )
    assert not dst.any()  # not executed
    assert sum(recorder.launches.values()) == 2
    (problem,) = recorder.grid_problems
    assert "_scaled_copy: grid (1, 70000, 1) over CUDA's limits" in problem
