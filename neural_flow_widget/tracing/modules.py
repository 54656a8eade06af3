"""A model's modules as a run sees them: the model left out, and the wrappers that
``torch.compile`` puts around submodules seen through (their ``_orig_mod`` drops out of the
names). Walked once per trace (:class:`ModuleTable`) and shared by its runs.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

from ..graph import ModuleInfo
from .structure import is_leaf

__all__ = [
    "ModuleTable",
    "compiled_names",
    "dtype_name",
    "module_infos",
    "named_modules",
    "uncompiled",
]


def uncompiled(model: torch.nn.Module) -> torch.nn.Module:
    """The module that ``torch.compile`` wrapped, or ``model`` itself: a trace watches the
    model's own Python code run (eagerly), so that the ids are the ones the user named."""
    inner = getattr(model, "_orig_mod", None)
    return inner if _is_compiled(model) and isinstance(inner, torch.nn.Module) else model


def _is_compiled(module: torch.nn.Module) -> bool:
    return type(module).__name__ == "OptimizedModule" and "_orig_mod" in module._modules


def named_modules(model: torch.nn.Module) -> list[tuple[str, torch.nn.Module]]:
    """``model.named_modules()`` less the model itself and the wrappers that ``torch.compile``
    put around submodules (their ``_orig_mod`` drops out of the names)."""
    return [
        (compiled_names(name), module)
        for name, module in model.named_modules()
        if name and not _is_compiled(module)
    ]


def module_infos(named: list[tuple[str, torch.nn.Module]]) -> tuple[ModuleInfo, ...]:
    """What the stage selection reads of each module of :func:`named_modules`."""
    return tuple(ModuleInfo(n, type(m).__name__, n.count(".") + 1, is_leaf(m)) for n, m in named)


@dataclass(frozen=True, slots=True)
class ModuleTable:
    """A model's modules as a run sees them (:func:`named_modules`): walked once per trace and
    shared by its runs (the traced one, a fallback, the NaN-origin one)."""

    names: list[str]
    modules: list[torch.nn.Module]
    infos: tuple[ModuleInfo, ...]  # what the stage selection and the Stage records read

    @classmethod
    def of(cls, model: torch.nn.Module) -> ModuleTable:
        named = named_modules(model)
        return cls([n for n, _ in named], [m for _, m in named], module_infos(named))


def compiled_names(name: str) -> str:
    """A module name without the ``_orig_mod`` parts of ``torch.compile``'s wrappers."""
    if "_orig_mod" not in name:
        return name
    return ".".join(part for part in name.split(".") if part != "_orig_mod")


def dtype_name(dtype: torch.dtype) -> str:
    """``torch.float32`` -> ``"float32"`` (cached: read for every call of every trace)."""
    name = _DTYPE_NAMES.get(dtype)
    if name is None:
        name = _DTYPE_NAMES[dtype] = str(dtype).removeprefix("torch.")
    return name


_DTYPE_NAMES: dict[torch.dtype, str] = {}
