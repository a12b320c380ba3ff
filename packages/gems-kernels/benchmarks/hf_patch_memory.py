"""Peak memory of one training step of a Hugging Face Llama: as built, and patched with
``gems_kernels.fused.patch_hf_model`` (RMSNorm, rotary, SwiGLU and the fused linear +
cross-entropy loss on gems), side by side in one run.

    TRITON_INTERPRET=1 python packages/gems-kernels/benchmarks/hf_patch_memory.py
    python packages/gems-kernels/benchmarks/hf_patch_memory.py --batch 8 --seq 2048  # a GPU

A step: forward with labels, backward, AdamW. Each variant runs in its own process on the same
seeded weights and tokens, after a warm-up step on 8 tokens (imports, the interpreter, AdamW's
state). Peak: on a GPU ``torch.cuda.max_memory_allocated`` above what is allocated before the
step; on the CPU the process's peak resident memory (``ru_maxrss``) above its resident memory
before the step. The parent checks that loss and gradients agree (relative to the largest
magnitude, 1e-5 in float32) and prints the table; exit status 1 when they do not, or when the
patched peak is over ``--target`` times the unpatched one.
"""

from __future__ import annotations

import argparse
import resource
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))

import torch
from fused_loss import _relative, _resident_kib, run_variants
from gems_kernels.fused import patch_hf_model

VARIANTS = ("unpatched", "patched")


def _model(args: argparse.Namespace, device: torch.device) -> Any:
    import transformers

    config = transformers.LlamaConfig(
        vocab_size=args.vocab, hidden_size=args.hidden, intermediate_size=2 * args.hidden,
        num_hidden_layers=args.layers, num_attention_heads=4, num_key_value_heads=2,
        max_position_embeddings=args.seq, tie_word_embeddings=False,
    )  # fmt: skip
    torch.manual_seed(0)
    return transformers.LlamaForCausalLM(config).to(device)


def _step(model: Any, optimizer: torch.optim.Optimizer, ids: torch.Tensor) -> torch.Tensor:
    optimizer.zero_grad(set_to_none=False)
    loss = model(input_ids=ids, labels=ids).loss
    loss.backward()
    optimizer.step()
    return loss.detach()


def _allocated(device: torch.device) -> int:
    if device.type == "cuda":
        torch.cuda.synchronize()
        return torch.cuda.memory_allocated()
    return _resident_kib() * 1024


def _peak(device: torch.device) -> int:
    if device.type == "cuda":
        torch.cuda.synchronize()
        return torch.cuda.max_memory_allocated()
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024


def run_variant(variant: str, args: argparse.Namespace, result_path: Path) -> None:
    """One variant in this process: warm-up, one measured step; saves loss, gradients, peak."""
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    model = _model(args, device)
    if variant == "patched":
        patch_hf_model(model, chunk_size=args.chunk)
    optimizer = torch.optim.AdamW(model.parameters(), lr=0.0)  # lr 0: the same weights each step
    generator = torch.Generator().manual_seed(1)
    ids = torch.randint(0, args.vocab, (args.batch, args.seq), generator=generator).to(device)
    _step(model, optimizer, ids[:1, :8])
    if device.type == "cuda":
        torch.cuda.reset_peak_memory_stats()
    base = _allocated(device)
    loss = _step(model, optimizer, ids)
    peak = _peak(device) - base
    grads = {name: p.grad.cpu() for name, p in model.named_parameters() if p.grad is not None}
    torch.save(
        {"loss": loss.cpu(), "grads": grads, "peak": peak, "device": device.type}, result_path
    )


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--vocab", type=int, default=32000)
    parser.add_argument("--hidden", type=int, default=64)
    parser.add_argument("--layers", type=int, default=2)
    parser.add_argument("--batch", type=int, default=2)
    parser.add_argument("--seq", type=int, default=512)
    parser.add_argument("--chunk", type=int, default=4096)
    parser.add_argument("--target", type=float, default=0.6)
    args, results = run_variants(parser, VARIANTS, run_variant, __file__, argv)
    if results is None:
        return 0
    plain, patched = results["unpatched"], results["patched"]
    loss_error = _relative(patched["loss"], plain["loss"])
    scale = max(float(g.abs().max()) for g in plain["grads"].values())
    grad_error = max(
        float((g.double() - plain["grads"][name].double()).abs().max()) / scale
        for name, g in patched["grads"].items()
    )
    agrees = (
        patched["grads"].keys() == plain["grads"].keys() and max(loss_error, grad_error) <= 1e-5
    )
    ratio = patched["peak"] / plain["peak"]
    print(
        f"Llama training step (forward, backward, AdamW): vocab {args.vocab}, hidden {args.hidden},"
        f" {args.layers} layers, {args.batch} x {args.seq} tokens, float32, on {plain['device']}"
    )
    print(f"{'variant':<10} {'loss':>10} {'peak MiB':>10} {'peak / unpatched':>17}")
    for name, result in results.items():
        mib, share = result["peak"] / 2**20, result["peak"] / plain["peak"]
        print(f"{name:<10} {float(result['loss']):>10.6f} {mib:>10.1f} {share:>17.3f}")
    print(
        f"patched vs unpatched: loss {loss_error:.2e}, gradients {grad_error:.2e} relative to the "
        f"largest ({'agree' if agrees else 'DISAGREE'} within 1e-5); peak ratio {ratio:.3f} "
        f"(target <= {args.target})"
    )
    return 0 if agrees and ratio <= args.target else 1


if __name__ == "__main__":
    raise SystemExit(main())
