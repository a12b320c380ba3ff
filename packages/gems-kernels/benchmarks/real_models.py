"""Real model code on gems: Hugging Face Llama, Qwen2, Mistral, GPT-2, BERT and ViT built from
small configs with random weights, and the ``torch.nn`` vision blocks of ``vision_models``.

Per model and dtype, one forward with its loss and one backward, three times on the same weights
and inputs: in float64 (the reference), on ATen and under ``use_gems()``. The weights and inputs
are drawn once, rounded to the dtype, and the float64 run takes those rounded values, so every
error below is the arithmetic's own. Printed per model: the ATen overloads that ran on gems and
natively (``NativeOpTrace`` of the gems run), and for the logits and the gradients the largest
error relative to the reference's largest magnitude (gradients: over all parameters, relative to
the model's largest gradient), for gems and for ATen, and their ratio (the issue's bfloat16
target: gems / ATen <= 1.1).

    TRITON_INTERPRET=1 python packages/gems-kernels/benchmarks/real_models.py
    TRITON_INTERPRET=1 python packages/gems-kernels/benchmarks/real_models.py --models llama vit
"""

from __future__ import annotations

import argparse
import copy
import sys
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import gems_kernels
import torch
import torch.nn.functional as F
from gems_kernels.coverage import NativeOpTrace
from torch import nn

sys.path.insert(0, str(Path(__file__).resolve().parent))
import vision_models

__all__ = ["MODELS", "ModelError", "compare", "format_table", "main"]

BATCH, LENGTH, VOCAB = 2, 16, 96
_LM = {"vocab_size": VOCAB, "hidden_size": 32, "intermediate_size": 64, "num_hidden_layers": 2,
       "num_attention_heads": 4, "num_key_value_heads": 2, "max_position_embeddings": 64,
       "attention_dropout": 0.0}  # fmt: skip
_ENCODER = {"hidden_size": 32, "intermediate_size": 64, "num_hidden_layers": 2,
            "num_attention_heads": 4, "hidden_dropout_prob": 0.0,
            "attention_probs_dropout_prob": 0.0}  # fmt: skip


@dataclass
class Case:
    """A model and one batch of inputs; ``loss(model, inputs)`` is what the step differentiates."""

    model: nn.Module
    inputs: dict[str, torch.Tensor]
    loss: Callable[[nn.Module, dict[str, torch.Tensor]], tuple[torch.Tensor, torch.Tensor]]


def _hf_loss(
    model: nn.Module, inputs: dict[str, torch.Tensor]
) -> tuple[torch.Tensor, torch.Tensor]:
    output = model(**inputs)
    return output.loss, output.logits


def _tokens() -> dict[str, torch.Tensor]:
    ids = torch.randint(0, VOCAB, (BATCH, LENGTH))
    return {"input_ids": ids, "labels": ids}


def _hf(name: str) -> Case:
    import transformers

    if name == "gpt2":
        config: Any = transformers.GPT2Config(
            vocab_size=VOCAB, n_embd=32, n_layer=2, n_head=4, n_positions=64,
            resid_pdrop=0.0, embd_pdrop=0.0, attn_pdrop=0.0,
        )  # fmt: skip
        return Case(transformers.GPT2LMHeadModel(config), _tokens(), _hf_loss)
    if name == "bert":
        config = transformers.BertConfig(vocab_size=VOCAB, num_labels=3, **_ENCODER)
        inputs = {"input_ids": torch.randint(0, VOCAB, (BATCH, LENGTH)),
                  "attention_mask": torch.ones(BATCH, LENGTH, dtype=torch.long),
                  "labels": torch.randint(0, 3, (BATCH,))}  # fmt: skip
        inputs["attention_mask"][0, LENGTH // 2 :] = 0  # padding: the mask's .bool() and where
        return Case(transformers.BertForSequenceClassification(config), inputs, _hf_loss)
    if name == "vit-hf":
        config = transformers.ViTConfig(image_size=16, patch_size=4, num_labels=10, **_ENCODER)
        inputs = {"pixel_values": torch.randn(BATCH, 3, 16, 16),
                  "labels": torch.randint(0, 10, (BATCH,))}  # fmt: skip
        return Case(transformers.ViTForImageClassification(config), inputs, _hf_loss)
    configs = {"llama": transformers.LlamaConfig, "qwen2": transformers.Qwen2Config,
               "mistral": transformers.MistralConfig}  # fmt: skip
    model = getattr(transformers, {"llama": "LlamaForCausalLM", "qwen2": "Qwen2ForCausalLM",
                                   "mistral": "MistralForCausalLM"}[name])  # fmt: skip
    return Case(model(configs[name](**_LM)), _tokens(), _hf_loss)


def _vision_loss(
    model: nn.Module, inputs: dict[str, torch.Tensor]
) -> tuple[torch.Tensor, torch.Tensor]:
    logits = model(inputs["images"])
    return F.cross_entropy(logits, inputs["labels"]), logits


def _vision(name: str) -> Case:
    build, size = vision_models.MODELS[name]
    model = build()
    for module in model.modules():
        if isinstance(module, nn.Dropout):
            module.p = 0.0  # gems' masks are not ATen's
    inputs = {"images": torch.randn(BATCH, 3, size, size), "labels": torch.randint(0, 10, (BATCH,))}
    return Case(model, inputs, _vision_loss)


MODELS: dict[str, Callable[[], Case]] = {
    **{
        name: (lambda n=name: _hf(n))
        for name in ("llama", "qwen2", "mistral", "gpt2", "bert", "vit-hf")
    },
    **{name: (lambda n=name: _vision(n)) for name in vision_models.MODELS},
}


@dataclass(frozen=True)
class ModelError:
    """One model in one dtype: errors against float64, and what the gems run left on ATen."""

    model: str
    dtype: str
    gems_logits: float
    aten_logits: float
    gems_grads: float
    aten_grads: float
    gems_ops: int
    native_ops: tuple[str, ...]
    seconds: float


def _cast(case: Case, dtype: torch.dtype) -> Case:
    """A copy of ``case`` with its floating-point weights and inputs in ``dtype``."""
    inputs = {k: v.to(dtype) if v.is_floating_point() else v for k, v in case.inputs.items()}
    return Case(copy.deepcopy(case.model).to(dtype).train(), inputs, case.loss)


def _run(case: Case) -> tuple[torch.Tensor, dict[str, torch.Tensor]]:
    loss, logits = case.loss(case.model, case.inputs)
    loss.backward()
    grads = {name: p.grad for name, p in case.model.named_parameters() if p.grad is not None}
    return logits.detach(), grads


def _error(got: torch.Tensor, expected: torch.Tensor, scale: float) -> float:
    return float((got.double() - expected).abs().max()) / scale


def compare(name: str, dtype: torch.dtype, seed: int = 0) -> ModelError:
    """Errors of gems and of ATen in ``dtype`` against float64 on one model."""
    torch.manual_seed(seed)
    rounded = _cast(MODELS[name](), dtype)  # built outside gems, as ATen would initialise it
    reference_logits, reference = _run(_cast(rounded, torch.float64))
    aten_logits, aten = _run(_cast(rounded, dtype))
    started = time.perf_counter()
    on_gems = _cast(rounded, dtype)
    with gems_kernels.use_gems(), NativeOpTrace() as trace:
        gems_logits, gems = _run(on_gems)
    seconds = time.perf_counter() - started
    logit_scale = float(reference_logits.abs().max())
    grad_scale = max(float(g.abs().max()) for g in reference.values())
    return ModelError(
        model=name,
        dtype=str(dtype).removeprefix("torch."),
        gems_logits=_error(gems_logits, reference_logits, logit_scale),
        aten_logits=_error(aten_logits, reference_logits, logit_scale),
        gems_grads=max(_error(gems[k], g, grad_scale) for k, g in reference.items()),
        aten_grads=max(_error(aten[k], g, grad_scale) for k, g in reference.items()),
        gems_ops=len(trace.gems),
        native_ops=tuple(sorted(trace.native)),
        seconds=seconds,
    )


def _ratio(gems: float, aten: float) -> str:
    return "-" if aten == 0 else f"{gems / aten:.2f}"


def _worst_ratio(row: ModelError) -> float:
    """The larger of the logits' and the gradients' gems / ATen error ratios."""
    return max(
        row.gems_logits / max(row.aten_logits, 1e-30), row.gems_grads / max(row.aten_grads, 1e-30)
    )


def format_table(rows: list[ModelError]) -> Iterator[str]:
    """A Markdown table of ``rows``."""
    yield ("| model | dtype | ops on gems | native ops | logits gems | logits ATen | ratio "
           "| grads gems | grads ATen | ratio | gems run s |")  # fmt: skip
    yield "| --- | --- | ---: | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |"
    for r in rows:
        native = ", ".join(r.native_ops) or "none"
        yield (
            f"| {r.model} | {r.dtype} | {r.gems_ops} | {native} | {r.gems_logits:.2e} "
            f"| {r.aten_logits:.2e} | {_ratio(r.gems_logits, r.aten_logits)} "
            f"| {r.gems_grads:.2e} | {r.aten_grads:.2e} | {_ratio(r.gems_grads, r.aten_grads)} "
            f"| {r.seconds:.0f} |"
        )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--models", nargs="+", choices=sorted(MODELS), default=list(MODELS))
    parser.add_argument(
        "--dtypes", nargs="+", choices=["bfloat16", "float32"], default=["bfloat16"]
    )
    parser.add_argument(
        "--target",
        type=float,
        default=1.1,
        help="exit 1 when a bfloat16 gems/ATen ratio is over it",
    )
    args = parser.parse_args(argv)
    rows = []
    for dtype in args.dtypes:
        for name in args.models:
            rows.append(compare(name, getattr(torch, dtype)))
            print(f"{name} {dtype}: done in {rows[-1].seconds:.0f} s", file=sys.stderr, flush=True)
    print("\n".join(format_table(rows)))
    over = [r.model for r in rows if r.dtype == "bfloat16" and _worst_ratio(r) > args.target]
    if over:
        print(f"over the {args.target}x target: {', '.join(over)}")
    return 1 if over else 0


if __name__ == "__main__":
    raise SystemExit(main())
