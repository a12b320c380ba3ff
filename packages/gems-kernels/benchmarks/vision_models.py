"""The blocks of ResNet-18, MobileNet-V2, MobileNet-V3 and ViT-B/16, written from plain
``torch.nn`` at small widths (torchvision cannot be installed beside the pinned torch), and one
training step of each: forward, cross-entropy, backward, AdamW (foreach, as on GPUs).

Each model keeps what makes its family's op mix: ResNet's 7x7 stride-2 stem, batch norm, max
pooling, a basic block with and without a strided 1x1 downsample, adaptive average pooling;
MobileNet-V2's inverted residual (1x1 expand, depthwise 3x3, ReLU6, linear 1x1 projection);
MobileNet-V3's hardswish, squeeze-and-excitation with hardsigmoid and its classifier;
ViT's patch embedding (a convolution with kernel = stride), CLS token, position embedding,
pre-norm encoder block (multi-head attention, GELU MLP) and CLS pooling.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

import torch
import torch.nn.functional as F
from torch import nn

__all__ = ["MODELS", "VisionStep", "mobilenet_v2", "mobilenet_v3", "resnet18", "vit"]


def _conv_bn(inputs: int, outputs: int, kernel: int, stride: int = 1, groups: int = 1) -> nn.Module:
    return nn.Sequential(
        nn.Conv2d(inputs, outputs, kernel, stride, kernel // 2, groups=groups, bias=False),
        nn.BatchNorm2d(outputs),
    )


class BasicBlock(nn.Module):
    """ResNet-18's block: two 3x3 convolutions, a 1x1 strided shortcut when the shape changes."""

    def __init__(self, inputs: int, outputs: int, stride: int) -> None:
        super().__init__()
        self.first = _conv_bn(inputs, outputs, 3, stride)
        self.second = _conv_bn(outputs, outputs, 3)
        self.shortcut = (
            _conv_bn(inputs, outputs, 1, stride) if stride != 1 or inputs != outputs else None
        )

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = self.second(F.relu(self.first(x), inplace=True))
        return F.relu(y + (x if self.shortcut is None else self.shortcut(x)), inplace=True)


def resnet18(width: int = 8, classes: int = 10) -> nn.Module:
    """Stem, max pooling, one identity and one downsampling basic block, pooling and the head."""
    return nn.Sequential(
        nn.Conv2d(3, width, 7, 2, 3, bias=False),
        nn.BatchNorm2d(width),
        nn.ReLU(inplace=True),
        nn.MaxPool2d(3, 2, 1),
        BasicBlock(width, width, 1),
        BasicBlock(width, 2 * width, 2),
        nn.AdaptiveAvgPool2d((1, 1)),
        nn.Flatten(),
        nn.Linear(2 * width, classes),
    )


class SqueezeExcite(nn.Module):
    """MobileNet-V3's channel attention: pool, 1x1 down, ReLU, 1x1 up, hardsigmoid, scale."""

    def __init__(self, channels: int, squeezed: int) -> None:
        super().__init__()
        self.down = nn.Conv2d(channels, squeezed, 1)
        self.up = nn.Conv2d(squeezed, channels, 1)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        scale = F.adaptive_avg_pool2d(x, 1)
        scale = F.hardsigmoid(self.up(F.relu(self.down(scale))), inplace=True)
        return x * scale


class InvertedResidual(nn.Module):
    """1x1 expansion, depthwise 3x3, optional squeeze-and-excitation, linear 1x1 projection;
    a residual when the shape is kept."""

    def __init__(
        self,
        inputs: int,
        outputs: int,
        stride: int,
        expand: int,
        activation: Callable[[], nn.Module],
        squeeze: bool = False,
    ) -> None:
        super().__init__()
        hidden = inputs * expand
        layers: list[nn.Module] = [_conv_bn(inputs, hidden, 1), activation()]
        layers += [_conv_bn(hidden, hidden, 3, stride, groups=hidden), activation()]
        if squeeze:
            layers.append(SqueezeExcite(hidden, max(hidden // 4, 1)))
        layers.append(_conv_bn(hidden, outputs, 1))
        self.body = nn.Sequential(*layers)
        self.residual = stride == 1 and inputs == outputs

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = self.body(x)
        return x + y if self.residual else y


def _relu6() -> nn.Module:
    return nn.ReLU6(inplace=True)


def _hardswish() -> nn.Module:
    return nn.Hardswish(inplace=True)


def mobilenet_v2(width: int = 8, classes: int = 10) -> nn.Module:
    """Stem (3x3 stride 2, ReLU6), a strided and a residual inverted block, 1x1 head conv,
    pooling, dropout and the classifier."""
    return nn.Sequential(
        _conv_bn(3, width, 3, 2),
        _relu6(),
        InvertedResidual(width, 2 * width, 2, 4, _relu6),
        InvertedResidual(2 * width, 2 * width, 1, 4, _relu6),
        _conv_bn(2 * width, 4 * width, 1),
        _relu6(),
        nn.AdaptiveAvgPool2d(1),
        nn.Flatten(),
        nn.Dropout(0.2),
        nn.Linear(4 * width, classes),
    )


def mobilenet_v3(width: int = 8, classes: int = 10) -> nn.Module:
    """Stem with hardswish, inverted blocks with squeeze-and-excitation (ReLU and hardswish),
    and V3's classifier (Linear, hardswish, dropout, Linear)."""
    return nn.Sequential(
        _conv_bn(3, width, 3, 2),
        _hardswish(),
        InvertedResidual(width, width, 1, 2, lambda: nn.ReLU(inplace=True), squeeze=True),
        InvertedResidual(width, 2 * width, 2, 3, _hardswish, squeeze=True),
        _conv_bn(2 * width, 4 * width, 1),
        _hardswish(),
        nn.AdaptiveAvgPool2d(1),
        nn.Flatten(),
        nn.Linear(4 * width, 8 * width),
        _hardswish(),
        nn.Dropout(0.2),
        nn.Linear(8 * width, classes),
    )


class EncoderBlock(nn.Module):
    """ViT's pre-norm block: LayerNorm, self-attention, residual; LayerNorm, GELU MLP,
    residual."""

    def __init__(self, width: int, heads: int) -> None:
        super().__init__()
        self.norm1 = nn.LayerNorm(width, eps=1e-6)
        self.attention = nn.MultiheadAttention(width, heads, dropout=0.0, batch_first=True)
        self.norm2 = nn.LayerNorm(width, eps=1e-6)
        self.mlp = nn.Sequential(
            nn.Linear(width, 4 * width), nn.GELU(), nn.Dropout(0.1), nn.Linear(4 * width, width)
        )

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = self.norm1(x)
        x = x + self.attention(y, y, y, need_weights=False)[0]
        return x + self.mlp(self.norm2(x))


class ViT(nn.Module):
    """Patch embedding, CLS token and position embedding, encoder blocks, CLS pooling, head."""

    def __init__(
        self, image: int = 16, patch: int = 4, width: int = 16, heads: int = 2, classes: int = 10
    ) -> None:
        super().__init__()
        self.embed = nn.Conv2d(3, width, patch, patch)
        self.cls = nn.Parameter(torch.zeros(1, 1, width))
        self.position = nn.Parameter(torch.randn(1, (image // patch) ** 2 + 1, width) * 0.02)
        self.dropout = nn.Dropout(0.1)
        self.blocks = nn.Sequential(EncoderBlock(width, heads), EncoderBlock(width, heads))
        self.norm = nn.LayerNorm(width, eps=1e-6)
        self.head = nn.Linear(width, classes)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        tokens = self.embed(x).flatten(2).transpose(1, 2)
        tokens = torch.cat([self.cls.expand(x.shape[0], -1, -1), tokens], dim=1)
        tokens = self.blocks(self.dropout(tokens + self.position))
        return self.head(self.norm(tokens)[:, 0])


def vit(classes: int = 10) -> nn.Module:
    """A two-block ViT on 16x16 images of 4x4 patches."""
    return ViT(classes=classes)


MODELS: dict[str, tuple[Callable[[], nn.Module], int]] = {
    "resnet18": (resnet18, 32),
    "mobilenet_v2": (mobilenet_v2, 16),
    "mobilenet_v3": (mobilenet_v3, 16),
    "vit": (vit, 16),
}
"""Model builder and input image size per model name."""


@dataclass
class VisionStep:
    """One of :data:`MODELS` with its AdamW optimizer and a fixed batch; :meth:`step` trains
    once and returns the loss."""

    name: str
    batch: int = 2
    dtype: torch.dtype = torch.float32
    seed: int = 0
    dropout: bool = True
    """False sets every dropout probability to 0 (to compare with ATen, whose masks differ)."""
    model: nn.Module = field(init=False)

    def __post_init__(self) -> None:
        if self.name not in MODELS:
            raise ValueError(f"name: expected one of {sorted(MODELS)}, got {self.name!r}")
        build, size = MODELS[self.name]
        generator = torch.Generator().manual_seed(self.seed)
        torch.manual_seed(self.seed)
        self.model = build().to(self.dtype).train()
        for module in self.model.modules():
            if isinstance(module, nn.Dropout) and not self.dropout:
                module.p = 0.0
        self.images = torch.randn(self.batch, 3, size, size, generator=generator).to(self.dtype)
        self.labels = torch.randint(0, 10, (self.batch,), generator=generator)
        self.optimizer = torch.optim.AdamW(self.model.parameters(), lr=1e-3, foreach=True)
        self._dropout_seed = self.seed

    def gradients(self) -> tuple[torch.Tensor, dict[str, torch.Tensor]]:
        """The loss of one forward and each parameter's gradient (no optimizer step)."""
        self.optimizer.zero_grad(set_to_none=True)
        loss = F.cross_entropy(self.model(self.images), self.labels)
        loss.backward()
        named = self.model.named_parameters()
        return loss.detach(), {name: p.grad for name, p in named if p.grad is not None}

    def step(self) -> torch.Tensor:
        """Forward, loss, backward and an optimizer step; dropout masks repeat per step index."""
        torch.manual_seed(self._dropout_seed)
        self._dropout_seed += 1
        self.optimizer.zero_grad(set_to_none=True)
        loss = F.cross_entropy(self.model(self.images), self.labels)
        loss.backward()
        self.optimizer.step()
        return loss.detach()
