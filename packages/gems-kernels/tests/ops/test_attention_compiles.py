"""The attention kernels compile for an NVIDIA GPU (sm_90) on a machine without one.

Triton's wheel carries ptxas, so ``triton.compile`` can build cubins with no driver. The kernels
must be plain ``@triton.jit`` functions for that, not the interpreter's, so the compilation runs
in a child process without ``TRITON_INTERPRET``. It takes minutes of CPU, so it runs only when
``GEMS_COMPILE_CHECK=1`` asks for it.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

# (dtype, causal, mask kind, head dim): every kernel is compiled for each.
VARIANTS = [
    ("bf16", True, 0, 128),
    ("fp16", False, 1, 64),
    ("bf16", False, 2, 24),
    ("fp32", False, 0, 256),
]


def compile_all() -> list[str]:
    """Compile every attention kernel for each variant; the failures, one line each."""
    import triton
    from gems_kernels.ops import attention
    from triton.backends.compiler import GPUTarget
    from triton.compiler import ASTSource

    pointer_types = {name: "*fp32" for name in ("lse", "row_max", "row_inv_sum", "delta",
                                                "grad_mask")}  # fmt: skip
    failures = []
    for dtype, causal, mask_kind, head_dim in VARIANTS:
        blocks = attention._blocks(interpreted=False, head_dim=head_dim)
        dims = max(16, triton.next_power_of_2(head_dim))
        shared = {"CAUSAL": causal, "MASK": mask_kind, "UPCAST": False, "BLOCK_D": dims,
                  "PRECISION": "ieee" if dtype == "fp32" else "tf32", "BLOCK_DV": dims}  # fmt: skip
        kernels = [
            (attention._attention_forward_kernel, blocks.forward, shared),
            (attention._attention_backward_kv_kernel, blocks.grad_kv, shared),
            (attention._attention_backward_q_kernel, blocks.grad_q,
             {**shared, "STATS": False, "GRAD_MASK": mask_kind == 2}),
            (attention._attention_backward_q_kernel, blocks.grad_q,
             {**shared, "STATS": True, "GRAD_MASK": False}),
        ]  # fmt: skip
        mask_type = {0: f"*{dtype}", 1: "*u8", 2: f"*{dtype}"}[mask_kind]
        for kernel, (block_m, block_n), constants in kernels:
            constants = {**constants, "BLOCK_M": block_m}
            if "BLOCK_N" in kernel.arg_names:
                constants["BLOCK_N"] = block_n
            signature = {
                name: "constexpr" if name in constants
                else "fp32" if name == "scale"
                else mask_type if name == "mask"
                else pointer_types.get(name, f"*{dtype}") if name in _POINTERS
                else "i32"
                for name in kernel.arg_names
            }  # fmt: skip
            try:
                triton.compile(
                    ASTSource(kernel, signature, constants),
                    target=GPUTarget("cuda", 90, 32),
                    options={"num_warps": blocks.num_warps},
                )
            except Exception as error:  # every failing variant is reported, not just the first
                failures.append(f"{kernel.__name__} {dtype} causal={causal} mask={mask_kind} "
                                f"head_dim={head_dim}: {error}")  # fmt: skip
    return failures


_POINTERS = {"q", "k", "v", "mask", "out", "lse", "grad_out", "row_max", "row_inv_sum",
             "delta", "grad_k", "grad_v", "grad_q", "grad_mask"}  # fmt: skip


@pytest.mark.slow
@pytest.mark.skipif(
    os.environ.get("GEMS_COMPILE_CHECK") != "1",
    reason="compiling for sm_90 takes minutes of CPU: set GEMS_COMPILE_CHECK=1 to run it",
)
def test_attention_kernels_compile_for_sm90(tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items() if k != "TRITON_INTERPRET"}
    env["TRITON_CACHE_DIR"] = str(tmp_path)
    result = subprocess.run(
        [sys.executable, __file__], env=env, capture_output=True, text=True, timeout=1800
    )
    assert result.returncode == 0, result.stdout[-4000:] + result.stderr[-4000:]


if __name__ == "__main__":
    problems = compile_all()
    print("\n".join(problems) or "all attention kernels compiled for sm_90")
    sys.exit(1 if problems else 0)
