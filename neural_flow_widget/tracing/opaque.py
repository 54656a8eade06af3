"""Leaf modules that the dataflow tracer records as one op instead of following inside.

A call of such a module (``nn.Linear``, ``nn.LayerNorm``, an activation, ...) computes its
output from its tensor arguments and its own parameters and nothing else: no in-place write,
no tensor kept for later, no attention. Followed op by op, every torch call inside it
(``x.size()``, ``x.view``, the ``addmm`` of a transformers ``Conv1D``, the eight ops of a tanh
GELU) goes through the tracer's mode and adds nothing to the stage graph: the ops of a call
whose inputs come from outside condense into one node of that call. So the call tracker runs
such a call with the tracer lifted off the mode stack and records the call as that one node
(:class:`~.calls.CallTracker`); the stage edges are the same, and the dispatch of the ops
inside (a few microseconds each; a 48-layer GPT-2 runs ~1,500 of them in such leaves) is saved.

The registry holds classes whose ``forward`` is known to be such a function. A subclass
counts when the class that defines its ``forward`` is registered; a module whose instance
``forward`` was replaced, that has children, or that writes into its own weights
(``nn.Embedding`` with ``max_norm``, which renormalises its weight) is followed as usual. An
activation with ``inplace=True`` writes into its input and returns it: the call tracker
records that write as the mode would.
Classes of other libraries are registered by qualified name, so that they are never
imported here.
"""

from __future__ import annotations

from collections.abc import Callable

from torch import nn

_CLASSES: set[type] = set()
_NAMES: set[str] = set()  # "module.QualName" of classes in other libraries
_UNLESS: dict[type, Callable[[nn.Module], bool]] = {}  # class -> when an instance is not opaque


def register(*classes: type | str, unless: Callable[[nn.Module], bool] | None = None) -> None:
    """Register leaf module classes (or ``"module.QualName"`` strings) whose forward is a pure
    function of its tensor arguments and own parameters; ``unless(module)`` excludes
    instances (of class objects only). Registering a class twice is an error."""
    for cls in classes:
        if cls in _NAMES or cls in _CLASSES:
            raise ValueError(f"{cls!r} is registered already")
        if isinstance(cls, str):
            _NAMES.add(cls)
        else:
            _CLASSES.add(cls)
            if unless is not None:
                _UNLESS[cls] = unless
    _BY_TYPE.clear()


_BY_TYPE: dict[type, type | None] = {}  # module type -> the registered class behind its forward


def _registered_forward(kind: type) -> type | None:
    """The registered class whose forward ``kind`` runs: the first registered class of its
    MRO, when the forward ``kind`` runs is that class's own or one it inherits (BatchNorm2d
    runs _BatchNorm.forward); None when a class below it overrides forward."""
    if kind not in _BY_TYPE:
        mro = kind.__mro__
        owner = next((i for i, k in enumerate(mro) if "forward" in k.__dict__), len(mro))
        _BY_TYPE[kind] = next(
            (
                k
                for k in mro[: owner + 1]
                if k in _CLASSES or f"{k.__module__}.{k.__qualname__}" in _NAMES
            ),
            None,
        )
    return _BY_TYPE[kind]


def is_opaque(module: nn.Module) -> bool:
    """Whether a call of ``module`` may be recorded as one op (see the module docstring)."""
    owner = _registered_forward(type(module))
    if owner is None or "forward" in module.__dict__:
        return False
    if module._modules and any(c is not None for c in module._modules.values()):
        return False
    unless = _UNLESS.get(owner)
    return unless is None or not unless(module)


def _torch_classes(*names: str) -> list[type]:
    """The torch.nn classes of these names that this torch has."""
    return [getattr(nn, n) for n in names if hasattr(nn, n)]


register(
    *_torch_classes(
        "Linear",
        "Bilinear",
        "Conv1d",
        "Conv2d",
        "Conv3d",
        "ConvTranspose1d",
        "ConvTranspose2d",
        "ConvTranspose3d",
        "LayerNorm",
        "GroupNorm",
        "RMSNorm",
        "LocalResponseNorm",
        "BatchNorm1d",
        "BatchNorm2d",
        "BatchNorm3d",
        "InstanceNorm1d",
        "InstanceNorm2d",
        "InstanceNorm3d",
        "Dropout",
        "Dropout1d",
        "Dropout2d",
        "Dropout3d",
        "AlphaDropout",
        "ReLU",
        "ReLU6",
        "LeakyReLU",
        "PReLU",
        "ELU",
        "SELU",
        "CELU",
        "GELU",
        "SiLU",
        "Mish",
        "Sigmoid",
        "Tanh",
        "Hardtanh",
        "Hardswish",
        "Hardsigmoid",
        "Softplus",
        "Softsign",
        "Tanhshrink",
        "LogSigmoid",
        "MaxPool1d",
        "MaxPool2d",
        "MaxPool3d",
        "AvgPool1d",
        "AvgPool2d",
        "AvgPool3d",
        "AdaptiveAvgPool1d",
        "AdaptiveAvgPool2d",
        "AdaptiveAvgPool3d",
        "AdaptiveMaxPool1d",
        "AdaptiveMaxPool2d",
        "AdaptiveMaxPool3d",
        "Flatten",
        "Unflatten",
        "Upsample",
        "PixelShuffle",
        "PixelUnshuffle",
        "Identity",
        "ZeroPad1d",
        "ZeroPad2d",
        "ZeroPad3d",
        "ConstantPad1d",
        "ConstantPad2d",
        "ConstantPad3d",
        "ReflectionPad1d",
        "ReflectionPad2d",
        "ReflectionPad3d",
        "ReplicationPad1d",
        "ReplicationPad2d",
        "ReplicationPad3d",
    )
)
register(nn.Embedding, unless=lambda m: m.max_norm is not None)  # (renorms its weight in place)
register(
    "transformers.pytorch_utils.Conv1D",
    *(
        f"transformers.activations.{n}"
        for n in (
            "GELUTanh",
            "PytorchGELUTanh",
            "NewGELUActivation",
            "GELUActivation",
            "SiLUActivation",
            "FastGELUActivation",
            "QuickGELUActivation",
            "ClippedGELUActivation",
            "AccurateGELUActivation",
            "MishActivation",
            "LinearActivation",
            "LaplaceActivation",
            "ReLUSquaredActivation",
            "SqrtSoftplusActivation",
        )
    ),
)
