"""Interventions: a run in which chosen stages' outputs are replaced (``trace(replace=...)``).

    >>> import torch, neural_flow_widget as nfw
    >>> model = torch.nn.Sequential(torch.nn.Linear(2, 2), torch.nn.ReLU())
    >>> flow = nfw.trace(model, torch.ones(1, 2), replace={"0": "zero"})
    >>> flow.summary("1")[0].max
    0.0

A spec is one of ``"zero"`` (zeros of the output's shape), ``"mean"`` (the output's mean over
the batch, for every sample), a tensor (the output itself, cast to the output's dtype and
device; it must broadcast to its shape), a callable ``out -> out``, or :func:`heads`
(``nfw.heads(zero=[2, 5])``: those attention heads' outputs zeroed before the output
projection, in the stage's ``F.scaled_dot_product_attention`` calls, for
``nn.MultiheadAttention`` by zeroing those heads' columns of the output projection passed to
``F.multi_head_attention_forward``, and in a hand-written attention by zeroing those heads'
probabilities (the softmax of a ``(batch, heads, queries, keys)`` tensor); the module's own
weights are never touched; a stage in which no attention runs is refused).

A stage id names one call (``"block#1"``: the second call of ``block``); a module's name
names every call of it. The replacement runs inside the call, under the tracer, so the
replaced output is what later stages read, what capture summarises, and is made from the
call's output (``zero`` keeps the stage edge: ``zeros_like`` reads it).
"""

from __future__ import annotations

import difflib
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import torch
import torch.nn.functional as F
from torch.overrides import TorchFunctionMode

from .pytree import map_tensors

__all__ = [
    "Heads",
    "HeadsMode",
    "InterventionError",
    "Interventions",
    "heads",
    "interventions",
    "replacing",
]

Spec = Any  # "zero" | "mean" | torch.Tensor | Callable[[Any], Any] | Heads


class InterventionError(ValueError):
    """A replacement that does not fit the output it replaces (found while the model runs)."""


@dataclass(frozen=True, slots=True)
class Heads:
    """Attention heads to switch off in a stage (see :func:`heads`)."""

    zero: tuple[int, ...]


def heads(*, zero: Sequence[int]) -> Heads:
    """A ``replace=`` spec that zeroes these attention heads' outputs in a stage, before its
    output projection: ``nfw.trace(model, x, replace={"h.3.attn": nfw.heads(zero=[2, 5])})``."""
    chosen = tuple(int(h) for h in zero)
    if not chosen or any(h < 0 for h in chosen):
        raise ValueError(f"heads(zero={list(zero)!r}): give one or more head indices (>= 0)")
    return Heads(chosen)


@dataclass(frozen=True, slots=True)
class Interventions:
    """The replacements of one run, by (module index, call of it; None: every call)."""

    outputs: Mapping[tuple[int, int | None], Callable[[Any], Any]]
    heads: Mapping[tuple[int, int | None], Heads]

    def output_of(self, module: int, k: int) -> Callable[[Any], Any] | None:
        return self.outputs.get((module, k)) or self.outputs.get((module, None))

    def heads_of(self, module: int, k: int) -> Heads | None:
        return self.heads.get((module, k)) or self.heads.get((module, None))

    @property
    def modules(self) -> frozenset[int]:
        return frozenset(m for m, _ in (*self.outputs, *self.heads))


def replacing(
    module: int,
    original: Callable,
    chosen: Interventions,
    mode: HeadsMode | None,
    hooks: tuple[Callable, Callable, Callable],
) -> Callable:
    """The forward of a module that an intervention names, for the call tracker: the
    tracker's ``(begin, end, fail)`` around the original forward, with the heads it names
    switched off (in ``mode``) and its output replaced, in the calls it names (one wrapper
    per module and run: ``calls`` counts the module's calls so far)."""
    begin, end, fail = hooks
    calls = 0

    def forward(*args: Any, **kwargs: Any) -> Any:
        nonlocal calls
        begin(module, args, kwargs)
        k, calls = calls, calls + 1
        off = chosen.heads_of(module, k) if mode is not None else None
        if off is not None:
            mode.active.append(off)  # type: ignore[union-attr]
            mode.hits.append(0)  # type: ignore[union-attr]
        try:
            output = original(*args, **kwargs)
            if off is not None and not mode.hits[-1]:  # type: ignore[union-attr]
                raise InterventionError(
                    f"heads(zero={list(off.zero)}): no attention ran in this call (heads are "
                    f"found in F.scaled_dot_product_attention, F.multi_head_attention_forward "
                    f"and a softmax over (batch, heads, queries, keys)); name the stage of the "
                    f"attention module itself"
                )
            replace = chosen.output_of(module, k)
            if replace is not None:
                output = replace(output)
        except BaseException as error:
            fail(error)
            raise
        finally:
            if off is not None:
                mode.active.pop()  # type: ignore[union-attr]
                mode.hits.pop()  # type: ignore[union-attr]
        end(output)
        return output

    forward.__wrapped__ = original  # type: ignore[attr-defined]  # (inspect.signature)
    return forward


def interventions(replace: Mapping[str, Spec], names: Sequence[str]) -> Interventions:
    """The run's replacements from ``replace=`` (stage id or module name -> spec), checked
    against the model's module names before anything runs."""
    if not isinstance(replace, Mapping):
        raise TypeError(f"replace= takes a dict of stage id -> spec, got {type(replace).__name__}")
    index = {name: i for i, name in enumerate(names)}
    outputs: dict[tuple[int, int | None], Callable[[Any], Any]] = {}
    chosen: dict[tuple[int, int | None], Heads] = {}
    for stage, spec in replace.items():
        name, _, call = str(stage).partition("#")
        if name not in index:
            close = difflib.get_close_matches(name, list(index), n=3)
            raise KeyError(
                f"replace=: no stage {stage!r} in this model; closest: {close or 'none'}"
            )
        if call and not call.isdigit():
            raise KeyError(f"replace=: {stage!r}: a stage id is a module name, or name#k")
        key = (index[name], int(call) if call else None)
        if isinstance(spec, Heads):
            chosen[key] = spec
        else:
            outputs[key] = _replacement(str(stage), spec)
    return Interventions(outputs, chosen)


def _replacement(stage: str, spec: Spec) -> Callable[[Any], Any]:
    if isinstance(spec, str):
        if spec == "zero":
            return lambda out: _each(stage, out, torch.zeros_like)
        if spec == "mean":
            return lambda out: _each(stage, out, _batch_mean)
        raise ValueError(
            f"replace={{{stage!r}: {spec!r}}}: a spec is 'zero', 'mean', a tensor, a function "
            f"out -> out, or nfw.heads(zero=[...])"
        )
    if isinstance(spec, torch.Tensor):
        given = spec.detach()
        return lambda out: _each(stage, out, lambda t: _fitted(stage, given, t))
    if callable(spec):
        return spec
    raise TypeError(f"replace={{{stage!r}: ...}}: got a {type(spec).__name__}; see nfw.trace")


def _batch_mean(t: torch.Tensor) -> torch.Tensor:
    if t.dim() == 0 or not (t.is_floating_point() or t.is_complex()):
        return t
    return t.mean(dim=0, keepdim=True).expand_as(t).clone()


def _fitted(stage: str, given: torch.Tensor, out: torch.Tensor) -> torch.Tensor:
    try:
        return given.to(dtype=out.dtype, device=out.device).expand_as(out).clone()
    except RuntimeError:
        raise InterventionError(
            f"replace={{{stage!r}: tensor}}: a tensor of shape {list(given.shape)} cannot "
            f"stand for the stage's output of shape {list(out.shape)}"
        ) from None


def _each(stage: str, out: Any, fn: Callable[[torch.Tensor], torch.Tensor]) -> Any:
    """``fn`` of every floating tensor of the output (a tensor, tuple, list or dict)."""
    if isinstance(out, torch.Tensor):
        return fn(out)
    if type(out) in (tuple, list, dict):
        return map_tensors(out, lambda _p, t: fn(t) if t.is_floating_point() else t)
    raise TypeError(
        f"replace={{{stage!r}: ...}}: the stage returns a {type(out).__name__}; pass a function "
        f"out -> out that builds it"
    )


class HeadsMode(TorchFunctionMode):
    """Zeroes chosen heads of the attention ops that run inside the calls ``active`` says
    (:class:`Interventions` ``heads``; the call tracker keeps ``active`` up to date): the
    output of ``F.scaled_dot_product_attention`` (per head, before the output projection), the
    output projection's columns of those heads for ``F.multi_head_attention_forward``, and
    the probabilities of a hand-written attention (a softmax over a ``(batch, heads, queries,
    keys)`` tensor: zero probabilities give that head a zero output)."""

    def __init__(self) -> None:
        super().__init__()
        self.active: list[Heads] = []  # the heads of the running calls that asked, innermost last
        self.hits: list[int] = []  # per running call that asked: the attention ops it masked

    def __torch_function__(
        self, func: Any, types: Any, args: tuple = (), kwargs: dict | None = None
    ) -> Any:
        kwargs = kwargs or {}
        if not self.active:
            return func(*args, **kwargs)
        chosen = self.active[-1].zero
        if func is F.scaled_dot_product_attention:
            self.hits[-1] += 1
            out = func(*args, **kwargs)  # (B, H, L, D): the heads' outputs, before projection
            return out * _mask(chosen, out.shape[-3], out, dims=out.dim() - 3)
        if func is F.multi_head_attention_forward:
            self.hits[-1] += 1
            return func(*_mha_masked(chosen, args, kwargs), **kwargs)
        out = func(*args, **kwargs)
        if func in _SOFTMAX and isinstance(out, torch.Tensor) and out.dim() == 4:
            self.hits[-1] += 1  # (B, H, Lq, Lk): a head's probabilities zeroed
            return out * _mask(chosen, out.shape[1], out, dims=1)
        return out


_SOFTMAX = (F.softmax, torch.softmax, torch.Tensor.softmax)


def _mask(chosen: tuple[int, ...], heads: int, like: torch.Tensor, dims: int) -> torch.Tensor:
    if max(chosen) >= heads:
        raise InterventionError(f"heads(zero={list(chosen)}): this attention has {heads} heads")
    mask = torch.ones(heads, dtype=like.dtype, device=like.device)
    mask[list(chosen)] = 0
    return mask.reshape(*([1] * dims), heads, 1, 1)


def _mha_masked(chosen: tuple[int, ...], args: tuple, kwargs: dict) -> tuple:
    """F.multi_head_attention_forward's arguments with the chosen heads' columns of the
    output projection weight zeroed (a copy: the module's weight is not touched)."""
    given = list(args)
    num_heads = given[4] if len(given) > 4 else kwargs["num_heads"]
    weight = given[11] if len(given) > 11 else kwargs["out_proj_weight"]
    if max(chosen) >= num_heads:
        raise InterventionError(f"heads(zero={list(chosen)}): this attention has {num_heads} heads")
    per = weight.shape[1] // num_heads
    masked = weight.clone()
    for h in chosen:
        masked[:, h * per : (h + 1) * per] = 0
    if len(given) > 11:
        given[11] = masked
    else:
        kwargs["out_proj_weight"] = masked
    return tuple(given)
