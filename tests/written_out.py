"""Models written out as torchvision and the recurrent-loop idiom have them (torchvision itself
does not import beside this project's torch build), for the corpus
(``tests/tracing/test_corpus_torchvision.py``) and the edges golden file
(``scripts/make_fixtures.py``)."""

from __future__ import annotations

from typing import ClassVar

import torch
import torch.nn.functional as F
from torch import nn

# -- ResNet bottlenecks, as torchvision writes them --------------------------------------------


class Bottleneck(nn.Module):
    """torchvision's ``Bottleneck``: one in-place ``ReLU`` module called three times, the
    shortcut added in place, a projection (``downsample``) where the shape changes."""

    expansion = 4

    def __init__(
        self, cin: int, width: int, downsample: nn.Module | None = None, stride: int = 1
    ) -> None:
        super().__init__()
        cout = width * self.expansion
        self.conv1, self.bn1 = nn.Conv2d(cin, width, 1, bias=False), nn.BatchNorm2d(width)
        self.conv2 = nn.Conv2d(width, width, 3, stride=stride, padding=1, bias=False)
        self.bn2 = nn.BatchNorm2d(width)
        self.conv3, self.bn3 = nn.Conv2d(width, cout, 1, bias=False), nn.BatchNorm2d(cout)
        self.relu = nn.ReLU(inplace=True)
        self.downsample = downsample

    def forward(self, x):
        identity = x
        out = self.relu(self.bn1(self.conv1(x)))
        out = self.relu(self.bn2(self.conv2(out)))
        out = self.bn3(self.conv3(out))
        if self.downsample is not None:
            identity = self.downsample(x)
        out += identity
        return self.relu(out)


class ResNet(nn.Module):
    """torchvision's ``ResNet`` of bottlenecks: a stem, ``layers[i]`` bottlenecks of width
    ``width * 2**i`` (the first of each projected by ``downsample``, stride 2 from the second
    layer on), average pooling and a classifier. By default a tiny one (one layer of two
    blocks); :func:`resnet50` is ResNet-50."""

    def __init__(
        self, layers: tuple[int, ...] = (2,), stem: int = 8, width: int = 4, classes: int = 5
    ) -> None:
        super().__init__()
        self.conv1 = nn.Conv2d(3, stem, 7, stride=2, padding=3, bias=False)
        self.bn1, self.relu = nn.BatchNorm2d(stem), nn.ReLU(inplace=True)
        self.maxpool = nn.MaxPool2d(3, stride=2, padding=1)
        cin = stem
        for i, blocks in enumerate(layers):
            planes, stride = width * 2**i, 1 if i == 0 else 2
            cout = planes * Bottleneck.expansion
            project = nn.Sequential(
                nn.Conv2d(cin, cout, 1, stride=stride, bias=False), nn.BatchNorm2d(cout)
            )
            first = Bottleneck(cin, planes, project, stride)
            rest = (Bottleneck(cout, planes) for _ in range(blocks - 1))
            setattr(self, f"layer{i + 1}", nn.Sequential(first, *rest))
            cin = cout
        self.layers = len(layers)
        self.avgpool = nn.AdaptiveAvgPool2d((1, 1))
        self.fc = nn.Linear(cin, classes)

    def forward(self, x):
        x = self.maxpool(self.relu(self.bn1(self.conv1(x))))
        for i in range(self.layers):
            x = getattr(self, f"layer{i + 1}")(x)
        return self.fc(torch.flatten(self.avgpool(x), 1))


def resnet50(classes: int = 1000) -> ResNet:
    """ResNet-50 as torchvision builds it: [3, 4, 6, 3] bottlenecks of width 64 to 512
    (25.6 M parameters with 1,000 classes), random weights."""
    return ResNet(layers=(3, 4, 6, 3), stem=64, width=64, classes=classes)


# -- DenseNet, as torchvision writes it: each layer receives the list of earlier features -----


class DenseLayer(nn.Module):
    def __init__(self, cin: int, growth: int, bn_size: int = 2) -> None:
        super().__init__()
        self.norm1, self.relu1 = nn.BatchNorm2d(cin), nn.ReLU(inplace=True)
        self.conv1 = nn.Conv2d(cin, bn_size * growth, 1, bias=False)
        self.norm2, self.relu2 = nn.BatchNorm2d(bn_size * growth), nn.ReLU(inplace=True)
        self.conv2 = nn.Conv2d(bn_size * growth, growth, 3, padding=1, bias=False)

    def forward(self, input):  # a tensor or a list of tensors, as in torchvision
        prev = [input] if isinstance(input, torch.Tensor) else input
        bottleneck = self.conv1(self.relu1(self.norm1(torch.cat(prev, 1))))
        return self.conv2(self.relu2(self.norm2(bottleneck)))


class DenseBlock(nn.ModuleDict):
    def __init__(self, layers: int, cin: int, growth: int) -> None:
        super().__init__()
        for i in range(layers):
            self.add_module(f"denselayer{i + 1}", DenseLayer(cin + i * growth, growth))

    def forward(self, init_features):
        features = [init_features]
        for layer in self.values():
            features.append(layer(features))
        return torch.cat(features, 1)


class Transition(nn.Sequential):
    def __init__(self, cin: int, cout: int) -> None:
        super().__init__()
        self.add_module("norm", nn.BatchNorm2d(cin))
        self.add_module("relu", nn.ReLU(inplace=True))
        self.add_module("conv", nn.Conv2d(cin, cout, 1, bias=False))
        self.add_module("pool", nn.AvgPool2d(2, stride=2))


class DenseNet(nn.Module):
    def __init__(self, growth: int = 4, layers: int = 3) -> None:
        super().__init__()
        c = 8
        self.features = nn.Sequential()
        self.features.add_module("conv0", nn.Conv2d(3, c, 3, padding=1, bias=False))
        self.features.add_module("norm0", nn.BatchNorm2d(c))
        self.features.add_module("relu0", nn.ReLU(inplace=True))
        self.features.add_module("pool0", nn.MaxPool2d(3, stride=2, padding=1))
        self.features.add_module("denseblock1", DenseBlock(layers, c, growth))
        c += layers * growth
        self.features.add_module("transition1", Transition(c, c // 2))
        self.features.add_module("denseblock2", DenseBlock(layers, c // 2, growth))
        self.features.add_module("norm5", nn.BatchNorm2d(c // 2 + layers * growth))
        self.classifier = nn.Linear(c // 2 + layers * growth, 5)

    def forward(self, x):
        out = F.relu(self.features(x), inplace=True)
        return self.classifier(torch.flatten(F.adaptive_avg_pool2d(out, (1, 1)), 1))


# -- recurrent cells unrolled over an embedding ------------------------------------------------


class EmbeddedLoop(nn.Module):
    """``cell(emb[:, t], state)``; the embedding has the state's width, so only where the
    state came from tells the two arguments apart."""

    def __init__(self, kind: str) -> None:
        super().__init__()
        self.kind = kind
        self.emb = nn.Embedding(10, 8)
        self.cell = nn.GRUCell(8, 8) if kind == "gru" else nn.LSTMCell(8, 8)
        self.head = nn.Linear(8, 10)

    def forward(self, ids):
        e = self.emb(ids)
        h = torch.zeros(ids.shape[0], 8)
        state = h if self.kind == "gru" else (h, torch.zeros_like(h))
        for t in range(ids.shape[1]):
            state = self.cell(e[:, t], state)
        return self.head(state if self.kind == "gru" else state[0])


# -- MobileNetV2, as torchvision writes it ------------------------------------------------------


class Conv2dNormActivation(nn.Sequential):
    """torchvision.ops.Conv2dNormActivation: a convolution, its batch norm and a ReLU6."""

    def __init__(
        self, cin: int, cout: int, kernel: int = 3, stride: int = 1, groups: int = 1
    ) -> None:
        super().__init__(
            nn.Conv2d(cin, cout, kernel, stride, (kernel - 1) // 2, groups=groups, bias=False),
            nn.BatchNorm2d(cout),
            nn.ReLU6(inplace=True),
        )


class InvertedResidual(nn.Module):
    def __init__(self, cin: int, cout: int, stride: int, expand: int) -> None:
        super().__init__()
        hidden = round(cin * expand)
        self.use_res_connect = stride == 1 and cin == cout
        layers: list[nn.Module] = []
        if expand != 1:
            layers.append(Conv2dNormActivation(cin, hidden, kernel=1))
        layers += [
            Conv2dNormActivation(hidden, hidden, stride=stride, groups=hidden),
            nn.Conv2d(hidden, cout, 1, 1, 0, bias=False),
            nn.BatchNorm2d(cout),
        ]
        self.conv = nn.Sequential(*layers)

    def forward(self, x):
        if self.use_res_connect:
            return x + self.conv(x)
        return self.conv(x)


class MobileNetV2(nn.Module):
    #: (expansion, channels, blocks, stride) per stage, torchvision's table
    SETTING: ClassVar[list[tuple[int, int, int, int]]] = [
        (1, 16, 1, 1),
        (6, 24, 2, 2),
        (6, 32, 3, 2),
        (6, 64, 4, 2),
        (6, 96, 3, 1),
        (6, 160, 3, 2),
        (6, 320, 1, 1),
    ]

    def __init__(self, classes: int = 1000) -> None:
        super().__init__()
        features: list[nn.Module] = [Conv2dNormActivation(3, 32, stride=2)]
        cin = 32
        for t, c, n, s in self.SETTING:
            for i in range(n):
                features.append(InvertedResidual(cin, c, s if i == 0 else 1, t))
                cin = c
        features.append(Conv2dNormActivation(cin, 1280, kernel=1))
        self.features = nn.Sequential(*features)
        self.classifier = nn.Sequential(nn.Dropout(0.2), nn.Linear(1280, classes))

    def forward(self, x):
        x = self.features(x)
        x = nn.functional.adaptive_avg_pool2d(x, (1, 1))
        return self.classifier(torch.flatten(x, 1))
