"""Small models whose runs go wrong, for the browser tests of what the widget says about it.

``NanNet``: ``block.log`` takes the log of a signed convolution, so its negatives become NaN
(the first NaN of the run), which ``block.norm`` and ``head`` carry on; ``pos`` is a learned
bias that receives no data (an "order" edge: it runs after ``block``). ``ShapeBug``: the
classic classifier whose ``Linear`` expects the flattened size of another input: the forward
raises at ``classifier.0``. ``ConvNet``: a division by zero in its own forward, between
``block3`` and ``block4``, so that ``block4.0`` is the first stage to return NaN/Inf, which it
only received.
"""

from __future__ import annotations

import torch
from torch import nn


class Log(nn.Module):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.log(x)  # NaN where x < 0, -Inf where x == 0


class Block(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.conv = nn.Conv2d(8, 8, 3, padding=1)
        self.log = Log()
        self.norm = nn.BatchNorm2d(8)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.norm(self.log(self.conv(x)))


class Bias(nn.Module):
    """A learned bias: called with no input, so no data reaches it from another stage."""

    def __init__(self) -> None:
        super().__init__()
        self.weight = nn.Parameter(torch.linspace(-0.5, 0.5, 8).reshape(1, 8, 1, 1))

    def forward(self) -> torch.Tensor:
        return self.weight * 1.0


class NanNet(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.stem = nn.Conv2d(1, 8, 3, padding=1)
        self.act = nn.ReLU()
        self.block = Block()
        self.pos = Bias()
        self.head = nn.Conv2d(8, 4, 1)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = self.block(self.act(self.stem(x)))
        return self.head(h + self.pos())


class ShapeBug(nn.Module):
    """Built for 34x34 images; a 36x36 one makes ``classifier.0`` raise on the shape."""

    def __init__(self) -> None:
        super().__init__()
        self.features = nn.Sequential(nn.Conv2d(3, 8, 3), nn.ReLU(), nn.MaxPool2d(2))
        self.flatten = nn.Flatten()
        self.classifier = nn.Sequential(nn.Linear(8 * 16 * 16, 32), nn.ReLU(), nn.Linear(32, 10))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.classifier(self.flatten(self.features(x)))


class ConvNet(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.stem = nn.Conv2d(1, 8, 3, padding=1)
        self.block3 = nn.Sequential(nn.Conv2d(8, 8, 3, padding=1), nn.ReLU())
        self.block4 = nn.Sequential(nn.Conv2d(8, 8, 3, padding=1), nn.ReLU())
        self.head = nn.Conv2d(8, 4, 1)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = self.block3(self.stem(x))
        x = x / (x - x)  # Inf where x > 0, NaN where the ReLU gave 0
        x = self.block4(x)
        return self.head(x)


def conv_net() -> tuple[nn.Module, torch.Tensor]:
    torch.manual_seed(0)
    return ConvNet(), torch.randn(1, 1, 24, 24)


def nan_net() -> tuple[nn.Module, torch.Tensor]:
    torch.manual_seed(0)
    return NanNet(), torch.randn(1, 1, 24, 24)


def shape_bug() -> tuple[nn.Module, torch.Tensor]:
    torch.manual_seed(0)
    return ShapeBug(), torch.randn(1, 3, 36, 36)


def meta_net() -> tuple[nn.Module, torch.Tensor]:
    return NanNet().to("meta"), torch.empty(1, 1, 24, 24, device="meta")
