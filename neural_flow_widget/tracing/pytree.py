"""Nested containers of tensors: tuples, lists, dicts, HF ``BatchEncoding`` / ``ModelOutput``,
dataclasses and NamedTuples (by field name)."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Iterator, Mapping
from typing import Any

import torch

Tensor = torch.Tensor


def leaves(obj: Any, path: str = "") -> Iterator[tuple[str, Tensor]]:
    """``(dotted path, tensor)`` for every tensor in ``obj``; other leaves are skipped.

    >>> [p for p, _ in leaves({"a": torch.ones(1), "b": (torch.ones(1), 3)})]
    ['a', 'b.0']
    """
    if isinstance(obj, Tensor):
        yield path, obj
    elif isinstance(obj, (tuple, list)):
        names = obj._fields if isinstance(obj, tuple) and hasattr(obj, "_fields") else None
        for i, item in enumerate(obj):
            key = names[i] if names is not None else i
            yield from leaves(item, f"{path}.{key}" if path else str(key))
    elif isinstance(obj, Mapping):
        for key, item in obj.items():
            yield from leaves(item, f"{path}.{key}" if path else str(key))
    elif dataclasses.is_dataclass(obj) and not isinstance(obj, type):
        for f in dataclasses.fields(obj):
            yield from leaves(getattr(obj, f.name), f"{path}.{f.name}" if path else f.name)


def output_leaves(output: Any) -> list[tuple[str, Tensor]]:
    """Leaves of a model or stage output; a single tensor is leaf ``"0"``."""
    if isinstance(output, Tensor):
        return [("0", output)]
    return list(leaves(output))


def tensors_in(obj: Any, found: list[Tensor]) -> list[Tensor]:
    """Append every tensor in ``obj`` to ``found`` (fast path for hook arguments)."""
    if isinstance(obj, Tensor):
        found.append(obj)
    elif isinstance(obj, (tuple, list)):
        for item in obj:
            if isinstance(item, Tensor):
                found.append(item)
            elif item is not None and not isinstance(item, (int, float, str)):
                tensors_in(item, found)
    elif isinstance(obj, Mapping):
        for item in obj.values():
            tensors_in(item, found)
    elif dataclasses.is_dataclass(obj) and not isinstance(obj, type):
        for f in dataclasses.fields(obj):
            tensors_in(getattr(obj, f.name), found)
    return found


def map_tensors(obj: Any, fn: Callable[[str, Tensor], Tensor], path: str = "") -> Any:
    """A copy of the containers of ``obj`` with each tensor replaced by ``fn(path, tensor)``.

    Mappings come back as plain dicts, so HF ``BatchEncoding`` works with ``model(**inputs)``.
    """
    if isinstance(obj, Tensor):
        return fn(path, obj)
    if isinstance(obj, (tuple, list)):
        items = [
            map_tensors(item, fn, f"{path}.{i}" if path else str(i)) for i, item in enumerate(obj)
        ]
        if isinstance(obj, tuple) and hasattr(obj, "_fields"):  # a namedtuple
            return type(obj)(*items)
        return type(obj)(items) if type(obj) in (tuple, list) else items
    if isinstance(obj, Mapping):
        return {
            key: map_tensors(item, fn, f"{path}.{key}" if path else str(key))
            for key, item in obj.items()
        }
    return obj


def among(tensor: Tensor, tensors: list[Tensor]) -> bool:
    """Whether ``tensor`` is one of ``tensors``, by identity (``in`` would compare values).

    >>> x = torch.ones(1)
    >>> among(x, [torch.ones(1), x]), among(x, [torch.ones(1)])
    (True, False)
    """
    for t in tensors:  # noqa: SIM110 - a loop: on the hot path, any() and a generator cost more
        if t is tensor:
            return True
    return False
