"""Benchmark models: a ResNet-50-like CNN, a U-Net, transformers models from configs."""

from __future__ import annotations

import torch
from torch import nn


class Bottleneck(nn.Module):
    def __init__(self, cin: int, mid: int, stride: int = 1) -> None:
        super().__init__()
        cout = mid * 4
        self.conv1, self.bn1 = nn.Conv2d(cin, mid, 1, bias=False), nn.BatchNorm2d(mid)
        self.conv2 = nn.Conv2d(mid, mid, 3, stride, 1, bias=False)
        self.bn2 = nn.BatchNorm2d(mid)
        self.conv3, self.bn3 = nn.Conv2d(mid, cout, 1, bias=False), nn.BatchNorm2d(cout)
        self.relu = nn.ReLU(inplace=True)
        self.downsample = None
        if stride != 1 or cin != cout:
            self.downsample = nn.Sequential(
                nn.Conv2d(cin, cout, 1, stride, bias=False), nn.BatchNorm2d(cout)
            )

    def forward(self, x):
        identity = x if self.downsample is None else self.downsample(x)
        out = self.relu(self.bn1(self.conv1(x)))
        out = self.relu(self.bn2(self.conv2(out)))
        return self.relu(self.bn3(self.conv3(out)) + identity)


class ResNet50Like(nn.Module):
    """The ResNet-50 layout: a stem and [3, 4, 6, 3] bottleneck blocks."""

    def __init__(self, classes: int = 1000) -> None:
        super().__init__()
        self.conv1 = nn.Conv2d(3, 64, 7, 2, 3, bias=False)
        self.bn1, self.relu = nn.BatchNorm2d(64), nn.ReLU(inplace=True)
        self.maxpool = nn.MaxPool2d(3, 2, 1)
        layers, cin = [], 64
        for mid, blocks, stride in ((64, 3, 1), (128, 4, 2), (256, 6, 2), (512, 3, 2)):
            stage = []
            for i in range(blocks):
                stage.append(Bottleneck(cin, mid, stride if i == 0 else 1))
                cin = mid * 4
            layers.append(nn.Sequential(*stage))
        self.layer1, self.layer2, self.layer3, self.layer4 = layers
        self.avgpool = nn.AdaptiveAvgPool2d(1)
        self.fc = nn.Linear(2048, classes)

    def forward(self, x):
        x = self.maxpool(self.relu(self.bn1(self.conv1(x))))
        x = self.layer4(self.layer3(self.layer2(self.layer1(x))))
        return self.fc(torch.flatten(self.avgpool(x), 1))


def gpt2(n_layer: int = 12, n_embd: int = 768, n_head: int = 12, attn: str = "sdpa"):
    from transformers import GPT2Config, GPT2LMHeadModel

    config = GPT2Config(
        n_layer=n_layer, n_embd=n_embd, n_head=n_head, bos_token_id=0, eos_token_id=0
    )
    config._attn_implementation = attn
    return GPT2LMHeadModel(config).eval()


def bert_base(attn: str = "sdpa"):
    from transformers import BertConfig, BertModel

    config = BertConfig()
    config._attn_implementation = attn
    return BertModel(config).eval()


def vit_base(attn: str = "sdpa"):
    from transformers import ViTConfig, ViTModel

    config = ViTConfig()
    config._attn_implementation = attn
    return ViTModel(config).eval()


class _Double(nn.Module):
    def __init__(self, cin: int, cout: int) -> None:
        super().__init__()
        self.conv1, self.bn1 = nn.Conv2d(cin, cout, 3, padding=1), nn.BatchNorm2d(cout)
        self.conv2, self.bn2 = nn.Conv2d(cout, cout, 3, padding=1), nn.BatchNorm2d(cout)
        self.relu = nn.ReLU(inplace=True)

    def forward(self, x):
        return self.relu(self.bn2(self.conv2(self.relu(self.bn1(self.conv1(x))))))


class UNet(nn.Module):
    """A four-level U-Net (16 -> 128 channels) with ``torch.cat`` skips."""

    def __init__(self, cin: int = 3, width: int = 16) -> None:
        super().__init__()
        w = [width * 2**i for i in range(4)]
        self.enc1, self.enc2 = _Double(cin, w[0]), _Double(w[0], w[1])
        self.enc3, self.bottleneck = _Double(w[1], w[2]), _Double(w[2], w[3])
        self.pool = nn.MaxPool2d(2)
        self.up3, self.dec3 = nn.ConvTranspose2d(w[3], w[2], 2, 2), _Double(2 * w[2], w[2])
        self.up2, self.dec2 = nn.ConvTranspose2d(w[2], w[1], 2, 2), _Double(2 * w[1], w[1])
        self.up1, self.dec1 = nn.ConvTranspose2d(w[1], w[0], 2, 2), _Double(2 * w[0], w[0])
        self.head = nn.Conv2d(w[0], 1, 1)

    def forward(self, x):
        e1 = self.enc1(x)
        e2 = self.enc2(self.pool(e1))
        e3 = self.enc3(self.pool(e2))
        b = self.bottleneck(self.pool(e3))
        d3 = self.dec3(torch.cat([self.up3(b), e3], 1))
        d2 = self.dec2(torch.cat([self.up2(d3), e2], 1))
        return self.head(self.dec1(torch.cat([self.up1(d2), e1], 1)))
