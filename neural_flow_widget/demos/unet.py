"""A small U-Net that segments bright shapes in noisy grayscale images.

>>> from neural_flow_widget.demos import unet
>>> model = unet.build().eval()
>>> tuple(model(unet.sample_inputs()).shape)
(1, 1, 64, 64)

The encoder halves the resolution three times (64 -> 32 -> 16 -> 8) while doubling the channels
(8 -> 16 -> 32 -> 64); the decoder mirrors it, and each decoder stage receives
``torch.cat([upsampled, skip], dim=1)``: the skip connections a flow graph should show.
"""

from __future__ import annotations

import torch
from torch import nn

from . import data

__all__ = ["DESCRIPTION", "TASK", "ConvBlock", "UNet", "build", "evaluate", "sample_inputs"]

TASK = "binary segmentation"
DESCRIPTION = (
    "A small U-Net that outlines the bright ellipses, rectangles and triangles in a noisy "
    "64x64 grayscale image, one logit per pixel."
)


class ConvBlock(nn.Module):
    """Two rounds of 3x3 convolution, batch norm and ReLU; keeps the spatial size.

    >>> tuple(ConvBlock(1, 8)(torch.zeros(2, 1, 16, 16)).shape)
    (2, 8, 16, 16)
    """

    def __init__(self, in_channels: int, out_channels: int) -> None:
        super().__init__()
        self.conv1 = nn.Conv2d(in_channels, out_channels, 3, padding=1, bias=False)
        self.bn1 = nn.BatchNorm2d(out_channels)
        self.relu1 = nn.ReLU()
        self.conv2 = nn.Conv2d(out_channels, out_channels, 3, padding=1, bias=False)
        self.bn2 = nn.BatchNorm2d(out_channels)
        self.relu2 = nn.ReLU()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = self.relu1(self.bn1(self.conv1(x)))
        return self.relu2(self.bn2(self.conv2(x)))


class UNet(nn.Module):
    """Encoder ``enc1..enc3``, ``bottleneck``, decoder ``up3/dec3 .. up1/dec1``, 1x1 ``head``.

    >>> logits = UNet()(torch.zeros(2, 1, 64, 64))
    >>> tuple(logits.shape)
    (2, 1, 64, 64)

    Input ``(N, 1, H, W)`` with H and W divisible by 8; output ``(N, 1, H, W)`` logits
    (apply ``sigmoid`` for the probability that a pixel belongs to a shape).
    """

    def __init__(self, in_channels: int = 1, width: int = 8) -> None:
        super().__init__()
        c1, c2, c3, c4 = width, 2 * width, 4 * width, 8 * width
        self.enc1 = ConvBlock(in_channels, c1)
        self.pool1 = nn.MaxPool2d(2)
        self.enc2 = ConvBlock(c1, c2)
        self.pool2 = nn.MaxPool2d(2)
        self.enc3 = ConvBlock(c2, c3)
        self.pool3 = nn.MaxPool2d(2)
        self.bottleneck = ConvBlock(c3, c4)
        self.up3 = nn.ConvTranspose2d(c4, c3, kernel_size=2, stride=2)
        self.dec3 = ConvBlock(2 * c3, c3)
        self.up2 = nn.ConvTranspose2d(c3, c2, kernel_size=2, stride=2)
        self.dec2 = ConvBlock(2 * c2, c2)
        self.up1 = nn.ConvTranspose2d(c2, c1, kernel_size=2, stride=2)
        self.dec1 = ConvBlock(2 * c1, c1)
        self.head = nn.Conv2d(c1, 1, kernel_size=1)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        skip1 = self.enc1(x)
        skip2 = self.enc2(self.pool1(skip1))
        skip3 = self.enc3(self.pool2(skip2))
        x = self.bottleneck(self.pool3(skip3))
        x = self.dec3(torch.cat([self.up3(x), skip3], dim=1))
        x = self.dec2(torch.cat([self.up2(x), skip2], dim=1))
        x = self.dec1(torch.cat([self.up1(x), skip1], dim=1))
        return self.head(x)


def build() -> UNet:
    """A randomly initialised demo U-Net (1 input channel, widths 8/16/32/64).

    >>> sum(p.numel() for p in build().parameters()) > 0
    True
    """
    return UNet()


def sample_inputs() -> torch.Tensor:
    """The fixed sample image shown in the widget: ``(1, 1, 64, 64)``.

    >>> sample_inputs().shape
    torch.Size([1, 1, 64, 64])
    """
    images, _ = data.shapes_batch(1, seed=data.SAMPLE_SEED)
    return images


@torch.no_grad()
def evaluate(model: nn.Module, n: int = 64, seed: int = data.EVAL_SEED) -> dict[str, float]:
    """Intersection over union of the thresholded prediction on ``n`` fresh images.

    >>> sorted(evaluate(build().eval(), n=2))
    ['iou', 'pixel_accuracy']

    IoU is pooled over the whole batch: shape pixels predicted and true, over pixels in either.
    """
    images, masks = data.shapes_batch(n, seed=seed)
    predicted = model(images) > 0
    truth = masks > 0.5
    union = (predicted | truth).sum().item()
    iou = (predicted & truth).sum().item() / max(union, 1)
    accuracy = (predicted == truth).float().mean().item()
    return {"iou": iou, "pixel_accuracy": accuracy}
