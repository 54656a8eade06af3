"""Wrapper tensor subclasses whose data one plain tensor inside them holds: a DTensor's local
shard. The dataflow tracer treats such a wrapper and its inner tensor as one value.

A DTensor's ops run below ``__torch_function__`` (its ``__torch_dispatch__`` calls the ops on
the local shards), and it is made and unwrapped by autograd functions that the tracer's mode
never sees: ``DTensor.from_local(x)`` wraps a view of ``x`` that the mode saw made, and
``dtensor.to_local()`` (under ``no_grad``) returns the very tensor the DTensor wraps. So the
tracer tags a wrapper's inner tensor with the wrapper's tag, and reads an untagged wrapper's
tag from its inner tensor: a tensor-parallel ``Linear``'s output keeps its producer when a
hook turns it into a plain tensor, and a plain tensor wrapped by a hook keeps its own.

Classes are registered by qualified name (never imported here: ``torch.distributed`` may not
be built in, and importing it costs); a subclass of a registered class counts too.
Registering a name twice is an error.

>>> import torch
>>> inner_of(torch.ones(1)) is None
True
"""

from __future__ import annotations

import torch

__all__ = ["inner_of", "is_wrapper", "register_wrapper"]

_ATTRIBUTES: dict[str, str] = {}  # "module.QualName" -> the attribute holding the inner tensor
_BY_TYPE: dict[type, str | None] = {}  # tensor type -> its inner attribute (None: not a wrapper)


def register_wrapper(name: str, attribute: str) -> None:
    """Register the wrapper subclass ``name`` (``"module.QualName"``) whose instances hold their
    data in the plain tensor ``getattr(t, attribute)``."""
    if name in _ATTRIBUTES:
        raise ValueError(f"{name!r} is registered already")
    _ATTRIBUTES[name] = attribute
    _BY_TYPE.clear()


def _attribute(kind: type) -> str | None:
    """The inner attribute of tensor type ``kind``: its own or a registered base class's."""
    for base in kind.__mro__:
        if base is torch.Tensor:
            return None
        found = _ATTRIBUTES.get(f"{base.__module__}.{base.__qualname__}")
        if found is not None:
            return found
    return None


def inner_of(tensor: torch.Tensor) -> torch.Tensor | None:
    """The plain tensor that holds ``tensor``'s data when it is a registered wrapper, else None
    (cheap for every other tensor: one dict read per type)."""
    kind = type(tensor)
    if kind is torch.Tensor:
        return None
    try:
        attribute = _BY_TYPE[kind]
    except KeyError:
        attribute = _BY_TYPE[kind] = _attribute(kind)
    if attribute is None:
        return None
    inner = getattr(tensor, attribute, None)
    return inner if isinstance(inner, torch.Tensor) else None


def is_wrapper(tensor: torch.Tensor) -> bool:
    """Whether ``tensor`` is an instance of a registered wrapper class (a DTensor)."""
    return inner_of(tensor) is not None


register_wrapper("torch.distributed.tensor.DTensor", "_local_tensor")
