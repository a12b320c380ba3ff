"""The model zoo: twenty architectures built from configs with random weights, each with one
batch and the loss its training step differentiates.

Hugging Face ``transformers`` models (Llama, Qwen2, Mistral, GPT-2, Gemma, Phi, T5, BERT,
DistilBERT, ViT, CLIP text and vision, a Whisper encoder with its classification head,
ConvNeXt, Swin, ResNet-50), a ``diffusers`` U-Net trained on noise prediction, and the
``torch.nn`` blocks of ``vision_models`` (ResNet-18, MobileNet-V2/V3, ViT). Nothing is
downloaded: configs only. Dropout is off everywhere (gems' masks are not ATen's, and the
benchmarks compare both against float64).

:data:`TINY` keeps each model small enough for Triton's CPU interpreter (width 32, two layers,
16 tokens or 16x16 to 32x32 images), :data:`SMOKE` has one layer; :data:`GPU` sizes them for
timing a step on one GPU.
"""

from __future__ import annotations

import copy
import dataclasses
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Final

import torch
import torch.nn.functional as F
import vision_models
from torch import nn

__all__ = ["GPU", "MODELS", "SMOKE", "TINY", "Case", "Size", "build"]

Loss = Callable[[nn.Module, dict[str, torch.Tensor]], tuple[torch.Tensor, torch.Tensor]]


@dataclass(frozen=True)
class Size:
    """What the builders scale: transformer widths, batch shapes, image sizes, conv stages."""

    width: int
    ffn: int
    layers: int
    heads: int
    kv_heads: int
    vocab: int
    batch: int
    length: int
    image: int
    """Images of the vision transformers (ViT, CLIP)."""
    patch: int
    conv_image: int
    """Images of the convolutional and windowed models (ResNet, ConvNeXt, Swin)."""
    latent: int
    """The U-Net's samples (8x8 under TINY: its interpreter step in tens of seconds)."""
    channels: tuple[int, ...]
    """Stage widths of the convolutional models (ResNet-50's bottleneck widths are 4x)."""
    depths: tuple[int, ...]
    window: int
    """Swin's attention window."""


TINY: Final = Size(
    width=32, ffn=64, layers=2, heads=4, kv_heads=2, vocab=96, batch=2, length=16, image=16,
    patch=4, conv_image=32, latent=8, channels=(8, 16), depths=(1, 1), window=4,
)  # fmt: skip
SMOKE: Final = dataclasses.replace(TINY, layers=1, conv_image=16, window=2)
"""One layer, 16x16 images, Swin windows of 2x2 tokens (still shifted): the test suite's runs."""
GPU: Final = Size(
    width=1024, ffn=2816, layers=4, heads=16, kv_heads=4, vocab=32000, batch=8, length=512,
    image=224, patch=16, conv_image=224, latent=64, channels=(64, 128, 256, 512),
    depths=(3, 4, 6, 3), window=7,
)  # fmt: skip
CLASSES: Final = 10


@dataclass
class Case:
    """A model and one batch of inputs; ``loss(model, inputs)`` is what the step differentiates,
    returned with the model's output (logits, or the U-Net's prediction)."""

    model: nn.Module
    inputs: dict[str, torch.Tensor]
    loss: Loss

    def to(self, dtype: torch.dtype, device: torch.device | str = "cpu") -> Case:
        """A copy with its floating-point weights and inputs in ``dtype`` on ``device``."""
        inputs = {
            key: value.to(device, dtype) if value.is_floating_point() else value.to(device)
            for key, value in self.inputs.items()
        }
        return Case(copy.deepcopy(self.model).to(device, dtype).train(), inputs, self.loss)


def _hf_loss(model: nn.Module, inputs: dict[str, torch.Tensor]) -> tuple[torch.Tensor, Any]:
    output = model(**inputs)
    return output.loss, output.logits


def _clip_loss(model: nn.Module, inputs: dict[str, torch.Tensor]) -> tuple[torch.Tensor, Any]:
    output = model(**inputs, return_loss=True)
    return output.loss, output.logits_per_image


def _noise_loss(model: nn.Module, inputs: dict[str, torch.Tensor]) -> tuple[torch.Tensor, Any]:
    prediction = model(inputs["sample"], inputs["timestep"]).sample
    return F.mse_loss(prediction, inputs["noise"]), prediction


def _vision_loss(model: nn.Module, inputs: dict[str, torch.Tensor]) -> tuple[torch.Tensor, Any]:
    logits = model(inputs["images"])
    return F.cross_entropy(logits, inputs["labels"]), logits


def _tokens(size: Size) -> dict[str, torch.Tensor]:
    ids = torch.randint(0, size.vocab, (size.batch, size.length))
    return {"input_ids": ids, "labels": ids}


def _padded_mask(size: Size) -> torch.Tensor:
    """All ones but the second half of the first sequence (padding reaches the mask ops)."""
    mask = torch.ones(size.batch, size.length, dtype=torch.long)
    mask[0, size.length // 2 :] = 0
    return mask


def _images(size: Size, pixels: int, key: str = "pixel_values") -> dict[str, torch.Tensor]:
    return {key: torch.randn(size.batch, 3, pixels, pixels),
            "labels": torch.randint(0, CLASSES, (size.batch,))}  # fmt: skip


def _decoder(name: str, size: Size) -> Case:
    import transformers

    common = {"vocab_size": size.vocab, "hidden_size": size.width,
              "intermediate_size": size.ffn, "num_hidden_layers": size.layers,
              "num_attention_heads": size.heads, "max_position_embeddings": 2 * size.length,
              "attention_dropout": 0.0}  # fmt: skip
    if name == "gpt2":
        config: Any = transformers.GPT2Config(
            vocab_size=size.vocab, n_embd=size.width, n_layer=size.layers, n_head=size.heads,
            n_positions=2 * size.length, resid_pdrop=0.0, embd_pdrop=0.0, attn_pdrop=0.0,
        )  # fmt: skip
        return Case(transformers.GPT2LMHeadModel(config), _tokens(size), _hf_loss)
    if name == "phi":
        # Phi: LayerNorm, one residual for attention and MLP in parallel, gelu_new, rotary
        # embedding on half of each head (partial_rotary_factor).
        config = transformers.PhiConfig(**common, num_key_value_heads=size.heads,
                                        resid_pdrop=0.0, embd_pdrop=0.0,
                                        partial_rotary_factor=0.5)  # fmt: skip
        return Case(transformers.PhiForCausalLM(config), _tokens(size), _hf_loss)
    classes = {
        "llama": (transformers.LlamaConfig, transformers.LlamaForCausalLM, {}),
        "qwen2": (transformers.Qwen2Config, transformers.Qwen2ForCausalLM, {}),
        "mistral": (transformers.MistralConfig, transformers.MistralForCausalLM, {}),
        # Gemma: embeddings scaled by sqrt(width), RMSNorm with (1 + weight), GeGLU (tanh).
        "gemma": (transformers.GemmaConfig, transformers.GemmaForCausalLM,
                  {"head_dim": size.width // size.heads}),
    }  # fmt: skip
    config_class, model_class, extra = classes[name]
    config = config_class(**common, num_key_value_heads=size.kv_heads, **extra)
    return Case(model_class(config), _tokens(size), _hf_loss)


def _encoder(name: str, size: Size) -> Case:
    import transformers

    inputs = {"input_ids": torch.randint(0, size.vocab, (size.batch, size.length)),
              "attention_mask": _padded_mask(size),
              "labels": torch.randint(0, 3, (size.batch,))}  # fmt: skip
    if name == "distilbert":
        config: Any = transformers.DistilBertConfig(
            vocab_size=size.vocab, dim=size.width, hidden_dim=size.ffn, n_layers=size.layers,
            n_heads=size.heads, dropout=0.0, attention_dropout=0.0, seq_classif_dropout=0.0,
            max_position_embeddings=2 * size.length, num_labels=3,
        )  # fmt: skip
        return Case(transformers.DistilBertForSequenceClassification(config), inputs, _hf_loss)
    config = transformers.BertConfig(
        vocab_size=size.vocab, hidden_size=size.width, intermediate_size=size.ffn,
        num_hidden_layers=size.layers, num_attention_heads=size.heads,
        max_position_embeddings=2 * size.length, hidden_dropout_prob=0.0,
        attention_probs_dropout_prob=0.0, num_labels=3,
    )  # fmt: skip
    return Case(transformers.BertForSequenceClassification(config), inputs, _hf_loss)


def _t5(size: Size) -> Case:
    """T5: RMS-style layer norm without mean, relative position buckets added to the scores
    (one bias table, its gradient through the attention's mask), a decoder with cross-attention
    fed the labels shifted right."""
    import transformers

    config = transformers.T5Config(
        vocab_size=size.vocab, d_model=size.width, d_kv=size.width // size.heads, d_ff=size.ffn,
        num_layers=size.layers, num_decoder_layers=size.layers, num_heads=size.heads,
        dropout_rate=0.0, relative_attention_num_buckets=8,
        relative_attention_max_distance=size.length, decoder_start_token_id=0, pad_token_id=0,
    )  # fmt: skip
    inputs = {"input_ids": torch.randint(0, size.vocab, (size.batch, size.length)),
              "attention_mask": _padded_mask(size),
              "labels": torch.randint(0, size.vocab, (size.batch, size.length // 2))}  # fmt: skip
    return Case(transformers.T5ForConditionalGeneration(config), inputs, _hf_loss)


def _clip(size: Size) -> Case:
    """CLIP's text and vision towers (quick GELU; the text tower pools at each sequence's end
    token, found by argmax) and the contrastive loss over the batch."""
    import transformers

    tower = {"hidden_size": size.width, "intermediate_size": size.ffn,
             "num_hidden_layers": size.layers, "num_attention_heads": size.heads}  # fmt: skip
    config = transformers.CLIPConfig(
        text_config={**tower, "vocab_size": size.vocab, "max_position_embeddings": size.length,
                     "bos_token_id": size.vocab - 2, "eos_token_id": size.vocab - 1},
        vision_config={**tower, "image_size": size.image, "patch_size": size.patch},
        projection_dim=size.width // 2,
    )  # fmt: skip
    ids = torch.randint(0, size.vocab - 2, (size.batch, size.length))
    ids[:, -1] = size.vocab - 1
    inputs = {"input_ids": ids, "pixel_values": torch.randn(size.batch, 3, size.image, size.image)}
    return Case(transformers.CLIPModel(config), inputs, _clip_loss)


def _whisper(size: Size) -> Case:
    """Whisper's encoder (two 1-D convolutions over mel frames, sinusoidal positions,
    pre-norm blocks) with the audio-classification head."""
    import transformers

    config = transformers.WhisperConfig(
        num_mel_bins=8, d_model=size.width, encoder_layers=size.layers,
        encoder_attention_heads=size.heads, encoder_ffn_dim=size.ffn,
        max_source_positions=size.length, num_labels=CLASSES, decoder_layers=1,
        decoder_attention_heads=size.heads, decoder_ffn_dim=size.ffn,
    )  # fmt: skip
    inputs = {"input_features": torch.randn(size.batch, 8, 2 * size.length),
              "labels": torch.randint(0, CLASSES, (size.batch,))}  # fmt: skip
    return Case(transformers.WhisperForAudioClassification(config), inputs, _hf_loss)


def _vision_hf(name: str, size: Size) -> Case:
    import transformers

    stages = {"num_labels": CLASSES, "depths": list(size.depths)}
    if name == "vit-hf":
        config: Any = transformers.ViTConfig(
            image_size=size.image, patch_size=size.patch, hidden_size=size.width,
            intermediate_size=size.ffn, num_hidden_layers=size.layers,
            num_attention_heads=size.heads, num_labels=CLASSES,
        )  # fmt: skip
        return Case(transformers.ViTForImageClassification(config), _images(size, size.image),
                    _hf_loss)  # fmt: skip
    if name == "resnet50":
        config = transformers.ResNetConfig(
            embedding_size=size.channels[0], hidden_sizes=[4 * c for c in size.channels],
            layer_type="bottleneck", **stages,
        )  # fmt: skip
        model: nn.Module = transformers.ResNetForImageClassification(config)
    elif name == "convnext":
        # Depthwise 7x7, channels-last LayerNorm between permutes, layer scale.
        config = transformers.ConvNextConfig(
            num_stages=len(size.channels), hidden_sizes=list(size.channels),
            image_size=size.conv_image, **stages,
        )  # fmt: skip
        model = transformers.ConvNextForImageClassification(config)
    else:
        # Shifted windows (roll), relative position bias, patch merging.
        config = transformers.SwinConfig(
            image_size=size.conv_image, patch_size=4, embed_dim=size.channels[0],
            num_heads=[max(c // 32, 2) for c in size.channels], window_size=size.window,
            drop_path_rate=0.0, **{**stages, "depths": [2, *size.depths[1:]]},
        )  # fmt: skip
        model = transformers.SwinForImageClassification(config)
    return Case(model, _images(size, size.conv_image), _hf_loss)


def _unet(size: Size) -> Case:
    """A diffusers UNet2DModel (group norm, SiLU, time embedding, attention at the lower
    resolution, nearest upsampling, skip connections) trained to predict the noise."""
    import diffusers

    channels = size.channels
    down = ("DownBlock2D", *("AttnDownBlock2D",) * (len(channels) - 1))
    up = (*("AttnUpBlock2D",) * (len(channels) - 1), "UpBlock2D")
    model = diffusers.UNet2DModel(
        sample_size=size.latent, in_channels=3, out_channels=3, layers_per_block=1,
        block_out_channels=channels, down_block_types=down, up_block_types=up,
        norm_num_groups=min(channels) // 2, attention_head_dim=channels[0],
    )  # fmt: skip
    shape = (size.batch, 3, size.latent, size.latent)
    inputs = {"sample": torch.randn(shape), "noise": torch.randn(shape),
              "timestep": torch.randint(0, 1000, (size.batch,))}  # fmt: skip
    return Case(model, inputs, _noise_loss)


def _torch_vision(name: str, size: Size) -> Case:
    build, pixels = vision_models.MODELS[name]
    if size is GPU:
        pixels = size.conv_image
        gpu_widths: dict[str, Callable[[], nn.Module]] = {
            "resnet18": lambda: vision_models.resnet18(width=64),
            "mobilenet_v2": lambda: vision_models.mobilenet_v2(width=32),
            "mobilenet_v3": lambda: vision_models.mobilenet_v3(width=32),
            "vit": lambda: vision_models.ViT(image=pixels, patch=16, width=768, heads=12),
        }
        build = gpu_widths[name]
    model = build()
    for module in model.modules():
        if isinstance(module, nn.Dropout):
            module.p = 0.0
    return Case(model, _images(size, pixels, key="images"), _vision_loss)


MODELS: Final[dict[str, Callable[[Size], Case]]] = {
    **{name: (lambda s, n=name: _decoder(n, s))
       for name in ("llama", "qwen2", "mistral", "gpt2", "gemma", "phi")},
    "t5": _t5,
    **{name: (lambda s, n=name: _encoder(n, s)) for name in ("bert", "distilbert")},
    "clip": _clip,
    "whisper": _whisper,
    **{name: (lambda s, n=name: _vision_hf(n, s))
       for name in ("vit-hf", "convnext", "swin", "resnet50")},
    "unet": _unet,
    **{name: (lambda s, n=name: _torch_vision(n, s)) for name in vision_models.MODELS},
}  # fmt: skip
"""Builder per model name, in the order the tables list them."""


def build(name: str, size: Size = TINY) -> Case:
    """Model ``name`` of :data:`MODELS` at ``size``, weights and inputs drawn from torch's
    global generator (seed it first)."""
    if name not in MODELS:
        raise ValueError(f"name: expected one of {sorted(MODELS)}, got {name!r}")
    return MODELS[name](size)
