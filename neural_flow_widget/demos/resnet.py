"""A small residual CNN that tells the orientation of coloured stripes.

>>> from neural_flow_widget.demos import resnet
>>> model = resnet.build().eval()
>>> tuple(model(resnet.sample_inputs()).shape)
(1, 4)

Layout as in ResNet: a ``stem``, three stages ``layer1..layer3`` of :class:`BasicBlock` (each
ending in ``x + residual``; the first block of a stage that halves the resolution gets a 1x1
``downsample`` shortcut), global ``avgpool`` and a linear ``fc``.
"""

from __future__ import annotations

from collections import OrderedDict

import torch
from torch import nn

from . import data

__all__ = [
    "DESCRIPTION",
    "TASK",
    "BasicBlock",
    "ResNet",
    "Stem",
    "build",
    "evaluate",
    "sample_inputs",
]

TASK = "image classification"
DESCRIPTION = (
    "A small ResNet that classifies 32x32 colour images of stripes by orientation "
    "(horizontal, two diagonals, vertical)."
)


class Stem(nn.Module):
    """3x3 convolution, batch norm, ReLU: lifts RGB to the first stage's width.

    >>> tuple(Stem(3, 16)(torch.zeros(1, 3, 8, 8)).shape)
    (1, 16, 8, 8)
    """

    def __init__(self, in_channels: int, out_channels: int) -> None:
        super().__init__()
        self.conv = nn.Conv2d(in_channels, out_channels, 3, padding=1, bias=False)
        self.bn = nn.BatchNorm2d(out_channels)
        self.relu = nn.ReLU()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.relu(self.bn(self.conv(x)))


class BasicBlock(nn.Module):
    """Two 3x3 convolutions plus a shortcut: ``relu(residual(x) + shortcut(x))``.

    >>> tuple(BasicBlock(16, 32, stride=2)(torch.zeros(1, 16, 8, 8)).shape)
    (1, 32, 4, 4)

    When the block changes the width or the stride, the shortcut is ``downsample`` (a strided
    1x1 ``conv`` and ``bn``); otherwise it is the identity and ``downsample`` is None.
    """

    def __init__(self, in_channels: int, out_channels: int, stride: int = 1) -> None:
        super().__init__()
        self.conv1 = nn.Conv2d(in_channels, out_channels, 3, stride=stride, padding=1, bias=False)
        self.bn1 = nn.BatchNorm2d(out_channels)
        self.relu1 = nn.ReLU()
        self.conv2 = nn.Conv2d(out_channels, out_channels, 3, padding=1, bias=False)
        self.bn2 = nn.BatchNorm2d(out_channels)
        self.relu2 = nn.ReLU()
        self.downsample: nn.Module | None = None
        if stride != 1 or in_channels != out_channels:
            self.downsample = nn.Sequential(
                OrderedDict(
                    conv=nn.Conv2d(in_channels, out_channels, 1, stride=stride, bias=False),
                    bn=nn.BatchNorm2d(out_channels),
                )
            )

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        shortcut = x if self.downsample is None else self.downsample(x)
        residual = self.relu1(self.bn1(self.conv1(x)))
        residual = self.bn2(self.conv2(residual))
        return self.relu2(shortcut + residual)


class ResNet(nn.Module):
    """``stem`` -> ``layer1`` (16 ch, 32x32) -> ``layer2`` (32, 16x16) -> ``layer3`` (64, 8x8).

    >>> tuple(ResNet()(torch.zeros(2, 3, 32, 32)).shape)
    (2, 4)

    Input ``(N, 3, H, W)``; output ``(N, num_classes)`` logits (classes in
    ``data.STRIPE_CLASSES``). Each stage holds ``blocks`` BasicBlocks.
    """

    def __init__(self, num_classes: int = len(data.STRIPE_CLASSES), blocks: int = 1) -> None:
        super().__init__()
        self.stem = Stem(3, 16)
        self.layer1 = self._stage(16, 16, blocks, stride=1)
        self.layer2 = self._stage(16, 32, blocks, stride=2)
        self.layer3 = self._stage(32, 64, blocks, stride=2)
        self.avgpool = nn.AdaptiveAvgPool2d(1)
        self.fc = nn.Linear(64, num_classes)

    @staticmethod
    def _stage(in_channels: int, out_channels: int, blocks: int, stride: int) -> nn.Sequential:
        first = BasicBlock(in_channels, out_channels, stride)
        rest = [BasicBlock(out_channels, out_channels) for _ in range(blocks - 1)]
        return nn.Sequential(first, *rest)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = self.layer3(self.layer2(self.layer1(self.stem(x))))
        return self.fc(self.avgpool(x).flatten(1))


def build() -> ResNet:
    """A randomly initialised demo ResNet (4 classes, one BasicBlock per stage).

    >>> len(build().layer2)
    1
    """
    return ResNet()


def sample_inputs() -> torch.Tensor:
    """The fixed sample image shown in the widget: ``(1, 3, 32, 32)``.

    >>> sample_inputs().shape
    torch.Size([1, 3, 32, 32])
    """
    images, _ = data.stripes_batch(1, seed=data.SAMPLE_SEED)
    return images


@torch.no_grad()
def evaluate(model: nn.Module, n: int = 512, seed: int = data.EVAL_SEED) -> dict[str, float]:
    """Classification accuracy on ``n`` fresh images (chance is about 0.25).

    >>> sorted(evaluate(build().eval(), n=4))
    ['accuracy']
    """
    images, labels = data.stripes_batch(n, seed=seed)
    accuracy = (model(images).argmax(dim=1) == labels).float().mean().item()
    return {"accuracy": accuracy}
