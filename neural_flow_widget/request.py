"""A checked call of :func:`~neural_flow_widget.trace`: each argument read and checked, and a
clear error for each thing that cannot run, before anything runs."""

from __future__ import annotations

import warnings
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

import torch

from .capture import CaptureSettings
from .capture.readout import unembedding
from .capture.sharded import SHARDS
from .graph import resolve
from .tracing.interventions import Heads, Interventions, interventions
from .tracing.modules import ModuleTable, uncompiled

__all__ = ["MODES", "Request", "checked", "split_inputs"]

MODES = ("auto", "dataflow", "fx", "sequential")


@dataclass(frozen=True)
class Request:
    """A checked call of :func:`trace`: what to run, on what, and what to keep."""

    model: torch.nn.Module  # (torch.compile's wrapped module: the model's own modules)
    args: tuple
    kwargs: dict
    modules: ModuleTable
    stages: Any
    topology: str
    capture: CaptureSettings | None
    loss: Callable[[Any], torch.Tensor] | None = None  # a backward pass of this loss
    keep_grads: bool = False  # the backward pass leaves the parameters' .grad
    interventions: Interventions | None = None  # stages' outputs replaced (replace=)
    replaced: tuple[str, ...] = ()  # the replacements, in words (for the flow's notes)
    head: torch.nn.Module | None = None  # the unembedding that readouts read through
    norm: torch.nn.Module | None = None  # the final norm before it (None: found in the graph)


def checked(
    model: Any,
    inputs: Any,
    stages: Any,
    topology: str,
    kwargs: Mapping[str, Any] | None,
    capture_device: Any,
    capture: bool,
    attention: bool,
    sample: int,
    budget_bytes: int | None,
    attention_budget_bytes: int | None,
    loss: Callable[[Any], torch.Tensor] | None = None,
    keep_grads: bool = False,
    replace: Mapping[str, Any] | None = None,
    readout: Any = None,
    shards: str = "full",
) -> Request:
    """The checked request; a clear error for each thing that cannot run, before anything runs."""
    if capture_device is not None:
        why = (
            f"capture_device={capture_device!r}: captured summaries and views are kept in "
            f"host memory (the reductions themselves run on each tensor's own device); leave "
            f"capture_device out"
        )
        if str(capture_device) != "cpu":
            raise ValueError(why)
        warnings.warn(why, DeprecationWarning, stacklevel=3)
    if topology not in MODES:
        raise ValueError(f"topology={topology!r}; choose one of {', '.join(MODES)}")
    if not isinstance(model, torch.nn.Module):
        raise TypeError(f"trace() takes an nn.Module, got {type(model).__name__}")
    model = uncompiled(model)  # (torch.compile: the model's own modules, run eagerly)
    args, kw = split_inputs(inputs, kwargs)
    modules = ModuleTable.of(model)
    if stages is not None:
        resolve(stages, modules.infos, (), model)  # bad names fail before running
    if shards not in SHARDS:
        raise ValueError(
            f"shards={shards!r}: a DTensor's summary reads the whole tensor, gathered after the "
            f"pass (shards='full'), or this rank's own shard (shards='local')"
        )
    if loss is not None and not callable(loss):
        raise TypeError(f"loss={loss!r}: pass a function of the model's output, loss(output)")
    if loss is not None and not capture:
        raise ValueError("loss= reduces each stage's gradient, which needs capture=True")
    norm, head = _readout_modules(model, readout) if capture else (None, None)
    settings = (
        CaptureSettings(
            sample,
            budget_bytes,
            attention,
            attention_budget_bytes,
            gradients=loss is not None,
            readout_dim=int(head.weight.shape[-1]) if head is not None else None,
            shards=shards,
        )
        if capture
        else None
    )
    chosen = interventions(replace, modules.names) if replace else None
    said = tuple(f"{stage} -> {_spec_words(spec)}" for stage, spec in (replace or {}).items())
    return Request(
        model, args, kw, modules, stages, topology, settings, loss, keep_grads, chosen, said, head,
        norm,
    )  # fmt: skip


def _readout_modules(model: torch.nn.Module, readout: Any) -> tuple[Any, Any]:
    """(final norm or None, unembedding or None) of ``readout=`` (see :func:`trace`)."""
    if readout is False:
        return None, None
    if isinstance(readout, tuple):
        if (
            len(readout) != 2
            or not all(m is None or isinstance(m, torch.nn.Module) for m in readout)
            or not hasattr(readout[1], "weight")
        ):
            raise TypeError(
                "readout=(final_norm, unembedding): two modules, the norm (or None) and the "
                "layer that makes the logits"
            )
        return readout
    head = unembedding(model)
    if readout is True and head is None:
        raise ValueError(
            f"readout=True: {type(model).__name__} has no get_output_embeddings(); pass "
            f"readout=(final_norm, unembedding)"
        )
    return None, head


def _spec_words(spec: Any) -> str:
    if isinstance(spec, str):
        return spec
    if isinstance(spec, Heads):
        return f"heads {', '.join(map(str, spec.zero))} switched off"
    if isinstance(spec, torch.Tensor):
        return f"a tensor of shape {list(spec.shape)}"
    return getattr(spec, "__name__", type(spec).__name__)


def split_inputs(inputs: Any, kwargs: Mapping[str, Any] | None) -> tuple[tuple, dict]:
    """(positional, keyword) arguments of the model from ``trace``'s ``inputs`` and ``kwargs``."""
    args: tuple
    if isinstance(inputs, Mapping):
        args, kw = (), dict(inputs)
    elif isinstance(inputs, (tuple, list)):
        args, kw = tuple(inputs), {}
    else:
        args, kw = (inputs,), {}
    if kwargs:
        clash = set(kw) & set(kwargs)
        if clash:
            raise ValueError(f"keyword inputs given twice: {sorted(clash)}")
        kw.update(kwargs)
    return args, kw
