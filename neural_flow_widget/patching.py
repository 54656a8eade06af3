"""Activation patching: which stage carries what makes the clean run's answer.

    >>> import torch, neural_flow_widget as nfw
    >>> model = torch.nn.Sequential(torch.nn.Linear(2, 2), torch.nn.Linear(2, 1))
    >>> clean, corrupted = torch.ones(1, 2), torch.zeros(1, 2)
    >>> found = nfw.patch(model, clean, corrupted, ["0"], lambda out: float(out.sum()))
    >>> bool(found.scores[0] == found.clean)
    True

``patch(model, clean, corrupted, stages, metric)`` runs the model on the corrupted inputs
once per stage, with that stage's output restored from the clean run, and measures
``metric(output)`` each time (a stage whose output is a tuple, a Hugging Face attention's
``(output, weights)``, has its first tensor restored); with ``positions`` (the default for
stages whose output is a sequence ``(N, L, ...)``), once per stage and position too,
restoring only that position: the causal-tracing heat map (Meng et al., 2022). A stage whose
restoration brings the metric back to the clean run's carries what the corruption removed. The
runs are plain forwards (no tracer, no capture) in eval mode under ``no_grad``; the model is
left as it was.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import torch

from .request import split_inputs
from .tracing.context import ModeObserver, RunContext
from .tracing.interventions import interventions
from .tracing.modules import ModuleTable, uncompiled

__all__ = ["Patching", "patch"]


@dataclass(frozen=True, slots=True)
class Patching:
    """What restoring each stage (and position) from the clean run does to the metric."""

    stages: tuple[str, ...]
    scores: np.ndarray  # (stages,): the metric with the stage's whole output restored
    clean: float  # the metric of the clean run
    corrupted: float  # the metric of the corrupted run
    positions: int = 0  # sequence positions patched one by one (0: none)
    by_position: np.ndarray | None = None  # (stages, positions), or None

    def restored(self) -> np.ndarray:
        """Per stage, how much of the gap between the corrupted and the clean run restoring it
        closes (1: all of it; 0: none; the heat map's colour, per position when patched)."""
        gap = self.clean - self.corrupted
        values = self.by_position if self.by_position is not None else self.scores
        return (values - self.corrupted) / gap if gap else np.zeros_like(values)


def patch(
    model: torch.nn.Module,
    clean: Any,
    corrupted: Any,
    stages: Sequence[str],
    metric: Callable[[Any], Any],
    *,
    positions: bool | None = None,
    kwargs: Mapping[str, Any] | None = None,
) -> Patching:
    """Activation patching of ``stages`` (stage ids or module names, as ``trace(replace=)``
    takes them) between a ``clean`` and a ``corrupted`` input (see the module docstring).
    ``metric(output) -> number``; ``positions``: patch each sequence position on its own too
    (None: where the stage's output is a sequence)."""
    model = uncompiled(model)
    table = ModuleTable.of(model)
    names = list(stages)
    interventions(dict.fromkeys(names, "zero"), table.names)  # (bad names fail first)
    kept: dict[str, torch.Tensor] = {}

    def keep(name: str) -> Callable[[Any], Any]:
        def store(out: Any) -> Any:
            kept[name] = _first(name, out).detach().clone()
            return out

        return store

    clean_out = _run(model, table, clean, kwargs, {n: keep(n) for n in names})
    corrupted_out = _run(model, table, corrupted, kwargs, {})
    base, worst = _number(metric(clean_out)), _number(metric(corrupted_out))
    scores = []
    for name in names:
        out = _run(model, table, corrupted, kwargs, {name: _with(name, _whole(kept[name]))})
        scores.append(_number(metric(out)))
    sequence = all(kept[n].dim() >= 3 for n in names)
    by_position = None
    length = kept[names[0]].shape[1] if names and sequence else 0
    if (positions or (positions is None and sequence)) and length:
        grid = np.zeros((len(names), length))
        for i, name in enumerate(names):
            for p in range(length):
                given = {name: _with(name, _at(kept[name], p))}
                grid[i, p] = _number(metric(_run(model, table, corrupted, kwargs, given)))
        by_position = grid
    return Patching(tuple(names), np.array(scores), base, worst, length, by_position)


def _first(name: str, out: Any) -> torch.Tensor:
    """The tensor a stage's output is patched in: itself, or the first of a tuple or list
    (a Hugging Face attention's ``(output, weights)``)."""
    if isinstance(out, torch.Tensor):
        return out
    if isinstance(out, (tuple, list)) and out and isinstance(out[0], torch.Tensor):
        return out[0]
    raise TypeError(f"patch(): stage {name!r} returns a {type(out).__name__}, not a tensor")


def _with(name: str, make: Callable[[torch.Tensor], torch.Tensor]) -> Callable[[Any], Any]:
    """A replacement that puts ``make(the stage's tensor)`` where :func:`_first` found it."""

    def replace(out: Any) -> Any:
        made = make(_first(name, out))
        if isinstance(out, torch.Tensor):
            return made
        return type(out)([made, *out[1:]]) if type(out) in (tuple, list) else (made, *out[1:])

    return replace


def _whole(clean: torch.Tensor) -> Callable[[torch.Tensor], torch.Tensor]:
    return lambda _out: clean


def _at(clean: torch.Tensor, p: int) -> Callable[[torch.Tensor], torch.Tensor]:
    def restore(out: torch.Tensor) -> torch.Tensor:
        out = out.clone()
        out[:, p] = clean[:, p]
        return out

    return restore


def _run(
    model: torch.nn.Module,
    table: ModuleTable,
    inputs: Any,
    kwargs: Mapping[str, Any] | None,
    replace: Mapping[str, Any],
) -> Any:
    args, kw = split_inputs(inputs, kwargs)
    chosen = interventions(replace, table.names) if replace else None
    run: RunContext[ModeObserver] = RunContext(model, table, interventions=chosen)
    with run:
        ran = run.forward(args, kw)
    if ran.error is not None:
        raise ran.error
    return ran.output


def _number(value: Any) -> float:
    if isinstance(value, torch.Tensor):
        if value.numel() != 1:
            raise ValueError(
                f"patch(): metric(output) returned a tensor of shape {list(value.shape)}; "
                f"return one number"
            )
        return float(value.detach())
    return float(value)
