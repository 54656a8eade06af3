"""Train the built-in demo models and write their weights into the package.

Usage (from the repository root)::

    python scripts/train_demos.py                 # all demos
    python scripts/train_demos.py unet resnet     # only these

Each demo starts from the fixed random init of ``demos.load(name, pretrained=False)`` and trains
on fresh synthetic batches from ``neural_flow_widget.demos.data`` (batch k uses seed
``data.TRAIN_SEED_BASE + k``), with Adam and a cosine learning-rate schedule, on one CPU thread.
The weights go to ``neural_flow_widget/demos/weights/<name>.pt`` as a state dict with floats in
float16. The script then loads each file back through ``demos.load`` and prints the metrics on
held-out data (``data.EVAL_SEED``): the numbers the tests check. Same seeds, same torch build,
same weights; all four demos train in a few minutes on a laptop core.
"""

from __future__ import annotations

import argparse
import dataclasses
import math
import sys
import time
from collections.abc import Callable
from pathlib import Path

import torch
import torch.nn.functional as F
from torch import nn

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from neural_flow_widget import demos
from neural_flow_widget.demos import data


@dataclasses.dataclass(frozen=True, slots=True)
class Recipe:
    """How to train one demo: batches, loss, and optimiser settings."""

    steps: int  # optimiser steps
    batch_size: int  # examples per step
    lr: float  # peak learning rate (linear warm-up over 5% of the steps, then cosine to 0)
    loss: Callable[[nn.Module, int, int], torch.Tensor]  # (model, batch_size, seed) -> loss
    weight_decay: float = 0.0  # decoupled (AdamW) weight decay


def unet_loss(model: nn.Module, n: int, seed: int) -> torch.Tensor:
    """Pixel-wise binary cross-entropy plus soft Dice (Dice keeps small shapes from vanishing)."""
    images, masks = data.shapes_batch(n, seed=seed)
    logits = model(images)
    probs = logits.sigmoid()
    dice = 1 - (2 * (probs * masks).sum() + 1) / (probs.sum() + masks.sum() + 1)
    return F.binary_cross_entropy_with_logits(logits, masks) + dice


def fusion_loss(model: nn.Module, n: int, seed: int) -> torch.Tensor:
    """Cross-entropy of the diagnosis plus mean squared error of the severity."""
    image, clinical, diagnosis, severity = data.clinical_batch(n, seed=seed)
    out = model(image, clinical)
    return F.cross_entropy(out["diagnosis"], diagnosis) + F.mse_loss(out["severity"], severity)


def resnet_loss(model: nn.Module, n: int, seed: int) -> torch.Tensor:
    """Cross-entropy of the stripe orientation."""
    images, labels = data.stripes_batch(n, seed=seed)
    return F.cross_entropy(model(images), labels)


def vit_loss(model: nn.Module, n: int, seed: int) -> torch.Tensor:
    """Cross-entropy of the cell the shape lies in."""
    images, labels = data.shape_place_batch(n, seed=seed)
    return F.cross_entropy(model(images), labels)


def _sequence_codes(tokens: torch.Tensor) -> torch.Tensor:
    """One integer per sequence from its first ``REVERSAL_DIGITS`` tokens (the digits)."""
    powers = 10 ** torch.arange(data.REVERSAL_DIGITS, dtype=torch.long)
    return (tokens[:, : data.REVERSAL_DIGITS] * powers).sum(dim=1)


_HELD_OUT = _sequence_codes(data.reversal_batch(1000, seed=data.EVAL_SEED)[0])


def transformer_loss(model: nn.Module, n: int, seed: int) -> torch.Tensor:
    """Next-token cross-entropy on the reversed half; evaluation sequences are never trained on."""
    tokens, targets = data.reversal_batch(n, seed=seed)
    keep = ~torch.isin(_sequence_codes(tokens), _HELD_OUT)
    logits = model(tokens[keep])
    return F.cross_entropy(logits.flatten(0, 1), targets[keep].flatten(), ignore_index=-100)


RECIPES: dict[str, Recipe] = {
    "unet": Recipe(steps=500, batch_size=16, lr=3e-3, loss=unet_loss),
    "fusion": Recipe(steps=2000, batch_size=64, lr=3e-3, loss=fusion_loss),
    "resnet": Recipe(steps=300, batch_size=32, lr=3e-3, loss=resnet_loss),
    "transformer": Recipe(
        steps=800, batch_size=128, lr=2e-3, loss=transformer_loss, weight_decay=0.01
    ),
    "vit": Recipe(steps=1500, batch_size=64, lr=2e-3, loss=vit_loss, weight_decay=0.05),
}


def _learning_rate(recipe: Recipe, step: int) -> float:
    warmup = max(1, recipe.steps // 20)
    if step < warmup:
        return recipe.lr * (step + 1) / warmup
    progress = (step - warmup) / max(1, recipe.steps - warmup)
    return recipe.lr * 0.5 * (1 + math.cos(math.pi * progress))


def train(name: str, recipe: Recipe) -> nn.Module:
    """Train demo ``name`` from its fixed init; returns the model in eval mode."""
    model = demos.load(name, pretrained=False).model.train()
    optimiser = torch.optim.AdamW(
        model.parameters(), lr=recipe.lr, weight_decay=recipe.weight_decay
    )
    for step in range(recipe.steps):
        for group in optimiser.param_groups:
            group["lr"] = _learning_rate(recipe, step)
        loss = recipe.loss(model, recipe.batch_size, data.TRAIN_SEED_BASE + step)
        optimiser.zero_grad(set_to_none=True)
        loss.backward()
        optimiser.step()
        if step % max(1, recipe.steps // 5) == 0 or step == recipe.steps - 1:
            print(f"  {name} step {step:5d}/{recipe.steps}  loss {loss.item():.4f}", flush=True)
    return model.eval()


def save(name: str, model: nn.Module) -> Path:
    """Write the state dict with floats as float16 into the package's weights folder."""
    path = Path(str(demos.weights_file(name)))
    path.parent.mkdir(parents=True, exist_ok=True)
    state = {k: v.half() if v.is_floating_point() else v for k, v in model.state_dict().items()}
    torch.save(state, path)
    return path


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    choices = ", ".join(demos.DEMOS)
    parser.add_argument("names", nargs="*", help=f"demos to train (default: all of {choices})")
    args = parser.parse_args(argv)
    unknown = sorted(set(args.names) - set(demos.DEMOS))
    if unknown:
        parser.error(f"unknown demo(s) {', '.join(unknown)}; choose from {choices}")
    names = args.names or list(demos.DEMOS)
    torch.set_num_threads(1)
    torch.manual_seed(0)
    results = []
    start = time.perf_counter()
    for name in names:
        began = time.perf_counter()
        print(f"training {name} ...", flush=True)
        fresh = train(name, RECIPES[name])
        metrics_float32 = demos.evaluate(name, fresh)
        path = save(name, fresh)
        metrics = demos.evaluate(name)  # reads the file back, as users and tests do
        seconds = time.perf_counter() - began
        results.append((name, seconds, path.stat().st_size, metrics, metrics_float32))
    print(f"\nheld-out metrics of the shipped (float16) weights, seed {data.EVAL_SEED}:")
    for name, seconds, size, metrics, metrics_float32 in results:
        shown = ", ".join(f"{k} {v:.4f}" for k, v in metrics.items())
        before = ", ".join(f"{v:.4f}" for v in metrics_float32.values())
        print(f"  {name:12s} {shown}  (float32: {before})  {size / 1024:.0f} KiB  {seconds:.0f} s")
    print(f"total {time.perf_counter() - start:.0f} s")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
