"""Built-in demo models with trained weights, for teaching and for trying the widget offline.

>>> from neural_flow_widget import demos
>>> demos.DEMOS
('unet', 'fusion', 'resnet', 'transformer', 'vit')
>>> demo = demos.load("unet")
>>> tuple(demo.run().shape)
(1, 1, 64, 64)

Each demo is a plain PyTorch model defined in its own module (``unet``, ``fusion``, ``resnet``,
``transformer``, ``vit``) and trained on seeded synthetic data from ``data`` by
``scripts/train_demos.py``. The weights ship inside the package (``weights/<name>.pt``, state
dicts with floats stored as float16) and are read with ``torch.load(weights_only=True)``;
nothing is downloaded.

Every demo module provides ``TASK``, ``DESCRIPTION``, ``build()`` (random init),
``sample_inputs()`` and ``evaluate(model, n, seed) -> dict`` of metrics.
"""

from . import data
from ._catalog import DEMOS, Demo, evaluate, load, weights_file

__all__ = ["DEMOS", "Demo", "data", "evaluate", "load", "weights_file"]
