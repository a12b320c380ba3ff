"""Peak memory and time of one training step's loss through the LM head as TRL's trainers
compute it (per-token log-probs of the labels, their entropy and whether each label is the top
token; the loss minus the mean log-prob, backward): the full logits, TRL 1.16's chunked head
(``trl.kernels.ChunkedLogProbFunction``) and gems' ``fused.linear_log_probs``, in one run.

    python packages/gems-kernels/benchmarks/log_prob_head.py     # 2048 x 32000 x 512, float32
    python packages/gems-kernels/benchmarks/log_prob_head.py --tokens 8192 --hidden 2048  # a GPU

Each variant runs in its own process on identical seeded inputs (``fused_loss.run_variants``):
peak is ``torch.cuda.max_memory_allocated`` above the inputs on a GPU, the peak resident memory
above the inputs on the CPU; time the best of ``--repeat`` steps, after a warm-up step on 8
tokens (imports, first calls). The parent checks log-probs, entropy and the gradients of the
hidden states and the head's weight against the full logits' (relative to the largest
magnitude, 1e-5 in float32) and is_top1 for equality, and prints the table; exit status 1
when they disagree. Needs ``trl`` (the hatch environment).
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))

import torch
import torch.nn.functional as F
from fused_loss import _relative, measure, run_variants
from gems_kernels.fused import linear_log_probs
from trl.kernels import ChunkedLogProbFunction

VARIANTS = ("full", "trl", "gems")
FIELDS = ("log_probs", "entropy", "is_top1")


def _fields(variant: str, hidden: torch.Tensor, weight: torch.Tensor,
            target: torch.Tensor, chunk: int) -> tuple[torch.Tensor, ...]:  # fmt: skip
    if variant == "full":
        logits = F.linear(hidden, weight)
        log_p = torch.log_softmax(logits, dim=1)
        with torch.no_grad():  # logged beside the loss, as the trainers do without a fused head
            entropy = -(log_p.exp() * log_p).sum(dim=1)
            is_top1 = logits.argmax(dim=1) == target
        return log_p.gather(1, target[:, None])[:, 0], entropy, is_top1
    if variant == "trl":
        log_probs, entropy, _, _, is_top1 = ChunkedLogProbFunction.apply(
            hidden, weight, None, target, 1.0, 32768, None, 1.0, FIELDS
        )
        return log_probs, entropy, is_top1
    result = linear_log_probs(hidden, weight, target, chunk_size=chunk, outputs=FIELDS[1:])
    return result.log_probs, result.entropy, result.is_top1  # type: ignore[return-value]


def _step(variant: str, args: argparse.Namespace, inputs: Sequence[torch.Tensor]) -> Any:
    hidden, weight, target = inputs
    hidden.grad = weight.grad = None
    fields = _fields(variant, hidden, weight, target, args.chunk)
    (-fields[0].mean()).backward()
    return [field.detach() for field in fields]


def run_variant(variant: str, args: argparse.Namespace, result_path: Path) -> None:
    """One variant in this process: warm-up, timed steps, peak memory; saves the results."""
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    generator = torch.Generator().manual_seed(0)
    hidden = torch.randn(args.tokens, args.hidden, generator=generator) * 0.5
    weight = torch.randn(args.vocab, args.hidden, generator=generator) / args.hidden**0.5
    target = torch.randint(0, args.vocab, (args.tokens,), generator=generator)
    inputs = (
        hidden.to(device).requires_grad_(),
        weight.to(device).requires_grad_(),
        target.to(device),
    )
    # warm-up on 8 tokens: imports and first-call allocations stay out of the peak
    _step(variant, args, (inputs[0][:8].detach().requires_grad_(), inputs[1], inputs[2][:8]))
    fields, peak, times = measure(device, lambda: _step(variant, args, inputs), args.repeat)
    saved = dict(zip(FIELDS, (field.cpu() for field in fields), strict=True))
    saved |= {"grad_hidden": inputs[0].grad.cpu(), "grad_weight": inputs[1].grad.cpu()}  # type: ignore[union-attr]
    saved |= {"peak": peak, "seconds": min(times), "device": device.type}
    torch.save(saved, result_path)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tokens", type=int, default=2048)
    parser.add_argument("--vocab", type=int, default=32000)
    parser.add_argument("--hidden", type=int, default=512)
    parser.add_argument("--chunk", type=int, default=4096)
    parser.add_argument("--repeat", type=int, default=1)
    args, results = run_variants(parser, VARIANTS, run_variant, __file__, argv)
    if results is None:
        return 0
    full = results["full"]
    compared = ("log_probs", "entropy", "grad_hidden", "grad_weight")
    errors = {
        (name, field): _relative(results[name][field], full[field])
        for name in ("trl", "gems")
        for field in compared
    }
    top1_equal = all(torch.equal(results[name]["is_top1"], full["is_top1"]) for name in results)
    agrees = top1_equal and all(error <= 1e-5 for error in errors.values())
    shape = f"{args.tokens} tokens x {args.vocab} vocab x {args.hidden} hidden, float32"
    print(
        f"LM head loss step (log-probs, entropy, is_top1; backward), {shape}, on {full['device']}"
    )
    print(f"{'variant':<6} {'peak MiB':>10} {'time s':>8} {'peak / full':>12}")
    for name, result in results.items():
        share = result["peak"] / full["peak"]
        print(f"{name:<6} {result['peak'] / 2**20:>10.1f} {result['seconds']:>8.2f} {share:>12.3f}")
    for name in ("trl", "gems"):
        listed = ", ".join(f"{field} {errors[name, field]:.1e}" for field in compared)
        print(f"{name} vs full logits, relative to the largest magnitude: {listed}")
    print(f"is_top1 {'equal' if top1_equal else 'DIFFERS'}; {'agree' if agrees else 'DISAGREE'}")
    return 0 if agrees else 1


if __name__ == "__main__":
    raise SystemExit(main())
