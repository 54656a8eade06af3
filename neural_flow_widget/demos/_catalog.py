"""The demo catalogue: which demos exist, how to load them with their weights."""

from __future__ import annotations

import dataclasses
import importlib.resources
from importlib.abc import Traversable
from types import ModuleType

import torch
from torch import nn

from . import data, fusion, resnet, transformer, unet, vit  # noqa: F401  (data: generators)

_MODULES: dict[str, ModuleType] = {
    "unet": unet,
    "fusion": fusion,
    "resnet": resnet,
    "transformer": transformer,
    "vit": vit,
}
DEMOS: tuple[str, ...] = tuple(_MODULES)

_INIT_SEED = 0  # pretrained=False models are random, but the same random on every call


@dataclasses.dataclass(frozen=True, slots=True)
class Demo:
    """A demo model in eval mode with the sample input to pass it.

    >>> demo = load("fusion", pretrained=False)
    >>> demo.name, demo.task
    ('fusion', 'multimodal classification + regression')
    >>> sorted(demo.run())
    ['diagnosis', 'severity']

    ``inputs`` is a tensor, or a tuple of tensors for multi-input models: call
    ``model(*inputs)`` for a tuple and ``model(inputs)`` otherwise, or use :meth:`run`.
    """

    name: str  # one of DEMOS
    model: nn.Module  # in eval mode, on the CPU, float32
    inputs: torch.Tensor | tuple[torch.Tensor, ...]  # the sample input shown in the widget
    description: str  # one sentence for a reader
    task: str  # a few words, e.g. "binary segmentation"

    def run(self):
        """The model's output on the sample input, without autograd.

        >>> tuple(load("resnet", pretrained=False).run().shape)
        (1, 4)
        """
        args = self.inputs if isinstance(self.inputs, tuple) else (self.inputs,)
        with torch.no_grad():
            return self.model(*args)


def _module(name: str) -> ModuleType:
    try:
        return _MODULES[name]
    except KeyError:
        raise ValueError(f"unknown demo {name!r}; choose one of {', '.join(DEMOS)}") from None


def weights_file(name: str) -> Traversable:
    """Where the shipped weights of demo ``name`` live inside the package.

    >>> weights_file("unet").name
    'unet.pt'
    """
    _module(name)
    return importlib.resources.files(__package__).joinpath("weights").joinpath(f"{name}.pt")


def _read_state_dict(name: str) -> dict[str, torch.Tensor]:
    path = weights_file(name)
    if not path.is_file():
        raise FileNotFoundError(
            f"demo {name!r}: weights file {path} is missing; run "
            f"`python scripts/train_demos.py {name}` to produce it, or pass pretrained=False"
        )
    with path.open("rb") as f:
        state = torch.load(f, map_location="cpu", weights_only=True)
    # Stored at reduced precision to keep the package small; compute in float32.
    return {key: t.float() if t.is_floating_point() else t for key, t in state.items()}


def load(name: str, *, pretrained: bool = True) -> Demo:
    """Build demo ``name`` in eval mode, with its trained weights unless ``pretrained=False``.

    >>> demo = load("transformer")
    >>> demo.model.training, tuple(demo.inputs.shape)
    (False, (1, 16))

    With ``pretrained=False`` the weights are a fixed random initialisation (the same on
    every call), for tests that need a model but no training.
    """
    module = _module(name)
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(_INIT_SEED)
        model = module.build()
    if pretrained:
        model.load_state_dict(_read_state_dict(name))
    model.eval()
    return Demo(
        name=name,
        model=model,
        inputs=module.sample_inputs(),
        description=module.DESCRIPTION,
        task=module.TASK,
    )


def evaluate(name: str, model: nn.Module | None = None, **kwargs) -> dict[str, float]:
    """Metrics of demo ``name`` on fresh held-out data (``data.EVAL_SEED``).

    >>> metrics = evaluate("resnet")
    >>> metrics["accuracy"] > 0.9
    True

    ``model`` defaults to the shipped pretrained one; ``kwargs`` (``n``, ``seed``) go to the
    demo module's ``evaluate``. The keys differ per demo: ``iou`` and ``pixel_accuracy``
    (unet), ``accuracy`` (resnet, fusion; fusion adds ``severity_mse`` and its baselines),
    ``token_accuracy`` and ``sequence_accuracy`` (transformer), ``accuracy`` (vit).
    """
    module = _module(name)
    if model is None:
        model = load(name).model
    return module.evaluate(model, **kwargs)
