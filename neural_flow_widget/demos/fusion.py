"""A two-branch multimodal model: a lesion image and clinical numbers meet in one fusion MLP.

>>> from neural_flow_widget.demos import fusion
>>> model = fusion.build().eval()
>>> out = model(*fusion.sample_inputs())
>>> tuple(out["diagnosis"].shape), tuple(out["severity"].shape)
((1, 4), (1,))

The image branch ``image_encoder`` and the tabular branch ``clinical_mlp`` run independently;
``fusion`` concatenates their features, and two heads read the fused vector. Neither branch
alone can solve the task (see :func:`neural_flow_widget.demos.data.clinical_batch`), so the
merge edge into ``fusion`` carries the interesting part of the flow.
"""

from __future__ import annotations

import torch
from torch import nn

from . import data

__all__ = [
    "DESCRIPTION",
    "MLP",
    "TASK",
    "FusionNet",
    "ImageEncoder",
    "build",
    "evaluate",
    "sample_inputs",
]

TASK = "multimodal classification + regression"
DESCRIPTION = (
    "A lesion image (32x32) and 8 clinical features go through separate branches, are fused, "
    "and give a 4-way diagnosis (lesion shape x marker level) and a severity score."
)


class ImageEncoder(nn.Module):
    """Three conv-ReLU stages and global max pooling: ``(N, 1, 32, 32) -> (N, 32)``.

    >>> tuple(ImageEncoder()(torch.zeros(2, 1, 32, 32)).shape)
    (2, 32)

    Max rather than average pooling at the end: one corner anywhere in the image is enough to
    call a lesion angular, and averaging would dilute it for small lesions.
    """

    def __init__(self, in_channels: int = 1, features: int = 32) -> None:
        super().__init__()
        self.conv1 = nn.Conv2d(in_channels, 8, 3, padding=1)
        self.relu1 = nn.ReLU()
        self.pool1 = nn.MaxPool2d(2)
        self.conv2 = nn.Conv2d(8, 16, 3, padding=1)
        self.relu2 = nn.ReLU()
        self.pool2 = nn.MaxPool2d(2)
        self.conv3 = nn.Conv2d(16, features, 3, padding=1)
        self.relu3 = nn.ReLU()
        self.pool3 = nn.AdaptiveMaxPool2d(1)

    def forward(self, image: torch.Tensor) -> torch.Tensor:
        x = self.pool1(self.relu1(self.conv1(image)))
        x = self.pool2(self.relu2(self.conv2(x)))
        x = self.pool3(self.relu3(self.conv3(x)))
        return x.flatten(1)


class MLP(nn.Module):
    """Two linear-ReLU layers; used for the ``clinical_mlp`` branch and for ``fusion``.

    >>> tuple(MLP(8, 32, 16)(torch.zeros(2, 8)).shape)
    (2, 16)
    """

    def __init__(self, in_features: int, hidden: int, out_features: int) -> None:
        super().__init__()
        self.fc1 = nn.Linear(in_features, hidden)
        self.relu1 = nn.ReLU()
        self.fc2 = nn.Linear(hidden, out_features)
        self.relu2 = nn.ReLU()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.relu2(self.fc2(self.relu1(self.fc1(x))))


class FusionNet(nn.Module):
    """``image_encoder`` + ``clinical_mlp`` -> ``fusion`` -> ``diagnosis_head``, ``severity_head``.

    >>> out = FusionNet()(torch.zeros(2, 1, 32, 32), torch.zeros(2, 8))
    >>> sorted(out), tuple(out["diagnosis"].shape), tuple(out["severity"].shape)
    (['diagnosis', 'severity'], (2, 4), (2,))

    ``forward(image, clinical)`` takes ``(N, 1, 32, 32)`` and ``(N, 8)`` and returns a dict:
    ``"diagnosis"`` logits ``(N, 4)`` (classes in ``data.DIAGNOSES``) and ``"severity"`` ``(N,)``.
    """

    def __init__(self) -> None:
        super().__init__()
        self.image_encoder = ImageEncoder()
        self.clinical_mlp = MLP(len(data.CLINICAL_FEATURES), 32, 16)
        self.fusion = MLP(32 + 16, 64, 32)
        self.diagnosis_head = nn.Linear(32, len(data.DIAGNOSES))
        self.severity_head = nn.Linear(32, 1)

    def forward(self, image: torch.Tensor, clinical: torch.Tensor) -> dict[str, torch.Tensor]:
        image_features = self.image_encoder(image)
        clinical_features = self.clinical_mlp(clinical)
        fused = self.fusion(torch.cat([image_features, clinical_features], dim=1))
        return {
            "diagnosis": self.diagnosis_head(fused),
            "severity": self.severity_head(fused).squeeze(1),
        }


def build() -> FusionNet:
    """A randomly initialised demo fusion model.

    >>> type(build().fusion).__name__
    'MLP'
    """
    return FusionNet()


def sample_inputs() -> tuple[torch.Tensor, torch.Tensor]:
    """The fixed sample patient: ``(image (1, 1, 32, 32), clinical (1, 8))``.

    >>> [tuple(t.shape) for t in sample_inputs()]
    [(1, 1, 32, 32), (1, 8)]
    """
    image, clinical, _, _ = data.clinical_batch(1, seed=data.SAMPLE_SEED)
    return image, clinical


@torch.no_grad()
def evaluate(model: nn.Module, n: int = 512, seed: int = data.EVAL_SEED) -> dict[str, float]:
    """Diagnosis accuracy and severity MSE on ``n`` fresh patients, with their baselines.

    >>> sorted(evaluate(build().eval(), n=4))
    ['accuracy', 'chance_accuracy', 'mean_baseline_mse', 'severity_mse']

    ``chance_accuracy`` is the share of the most frequent class; ``mean_baseline_mse`` is the
    MSE of always predicting the mean severity (the variance of the targets).
    """
    image, clinical, diagnosis, severity = data.clinical_batch(n, seed=seed)
    out = model(image, clinical)
    accuracy = (out["diagnosis"].argmax(dim=1) == diagnosis).float().mean().item()
    chance = torch.bincount(diagnosis, minlength=len(data.DIAGNOSES)).max().item() / n
    mse = (out["severity"] - severity).pow(2).mean().item()
    baseline = (severity - severity.mean()).pow(2).mean().item()
    return {
        "accuracy": accuracy,
        "chance_accuracy": chance,
        "severity_mse": mse,
        "mean_baseline_mse": baseline,
    }
