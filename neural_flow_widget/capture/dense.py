"""Reading a tensor's values once: a checked, detached, dense plain tensor, whatever the
stage returned (a tensor subclass, a wrapper subclass around its data), or a ``TypeError``
that names the fix (sparse, quantized and meta tensors; wrappers of several tensors).

>>> import torch
>>> read_dense(torch.ones(2, 3)).shape
(2, 3)
"""

from __future__ import annotations

import math
from typing import NamedTuple

import torch

__all__ = ["Dense", "check_dense", "plain_values", "read_dense", "unreadable"]


_QUANTIZED = frozenset(
    getattr(torch, name)
    for name in ("quint8", "qint8", "qint32", "quint4x2", "quint2x4")
    if hasattr(torch, name)
)


class Dense(NamedTuple):
    """A checked, detached dense tensor and what was read from it (each attribute read
    is a torch call under a TorchFunctionMode, so summary and retention share one read)."""

    t: torch.Tensor  # detached
    shape: tuple[int, ...]
    numel: int
    dtype: torch.dtype
    device: torch.device


def read_dense(t: object, *, who: str = "summarise()") -> Dense:
    """Check ``t`` (see :func:`check_dense`) and read it once.

    >>> import torch
    >>> read_dense(torch.ones(2, 3)).numel
    6
    """
    if not isinstance(t, torch.Tensor):
        raise TypeError(f"{who} needs a torch.Tensor, got {type(t).__name__}")
    if type(t) is not torch.Tensor:
        t = plain_values(t, who)
    try:
        layout, dtype, device = t.layout, t.dtype, t.device
        if layout is not torch.strided:
            raise TypeError(
                f"{who} needs a dense tensor, got layout {layout}; "
                "convert it with t.to_dense() before it leaves the stage"
            )
        if dtype in _QUANTIZED:
            raise TypeError(
                f"{who} cannot read a quantized tensor ({dtype}); use t.dequantize() first"
            )
        if device.type == "meta":
            raise TypeError(f"{who} got a meta tensor, which has no data to summarise")
        shape = tuple(t.shape)
        return Dense(t.detach(), shape, math.prod(shape), dtype, device)
    except (RuntimeError, NotImplementedError) as err:
        raise unreadable(t, err, who) from err


def plain_values(t: torch.Tensor, who: str = "summarise()") -> torch.Tensor:
    """The plain tensor that holds a tensor subclass's values: the subclass's own storage seen
    as a ``torch.Tensor``, or, for a wrapper subclass (``__tensor_flatten__``) around one
    tensor of its shape, that tensor. ``TypeError`` naming the fix for a wrapper around other
    tensors (a quantised weight's data and scales, say), whose values no one tensor holds.

    >>> class Tagged(torch.Tensor):
    ...     pass
    >>> type(plain_values(torch.ones(2).as_subclass(Tagged))).__name__
    'Tensor'
    """
    flatten = getattr(t, "__tensor_flatten__", None)
    if flatten is None:
        return t.as_subclass(torch.Tensor)
    names, _ = flatten()
    inner = [getattr(t, name) for name in names]
    if len(inner) == 1 and isinstance(inner[0], torch.Tensor) and inner[0].shape == t.shape:
        found = inner[0]
        return found if type(found) is torch.Tensor else plain_values(found, who)
    raise TypeError(
        f"{who} cannot read this {type(t).__name__}: a tensor subclass that holds "
        f"{len(inner)} tensors ({', '.join(names)}) rather than its values; return a plain "
        f"tensor from the stage (e.g. t.dequantize() or t.to_dense()) to see them"
    )


def unreadable(t: object, err: BaseException, who: str = "summarise()") -> TypeError:
    return TypeError(
        f"{who} cannot read this {type(t).__name__} ({type(err).__name__}: {err}); "
        "return a plain dense tensor from the stage (e.g. t.as_subclass(torch.Tensor), "
        "t.float()) or leave the stage unsummarised"
    )


def check_dense(t: object, *, who: str = "summarise()") -> torch.Tensor:
    """Raise a ``TypeError`` naming the fix unless ``t`` is a dense tensor with data.

    >>> import torch
    >>> check_dense(torch.ones(2)).shape
    torch.Size([2])
    """
    read_dense(t, who=who)
    return t  # type: ignore[return-value]
