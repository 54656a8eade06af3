"""Runs over several processes (``torch.distributed``): what one rank must not do alone, and
the gradients of an FSDP2 model's parameters.

A model sharded over ranks (FSDP2, tensor parallelism) runs collectives in its forward pass:
every rank must run it, together. ``trace()`` runs it once on every rank (each rank calls it);
what would run it again on one rank only (a widget's attention zoom or intervention, asked for
by a click on rank 0; the second run that looks for where a NaN was made, which only the ranks
that saw one would start) would wait forever for the others, so it is refused, with this
reason.

FSDP2 (``fully_shard``) runs its forward pass on gathered copies of its parameters, never on
the parameters themselves, so ``torch.autograd.grad`` with respect to them finds nothing: only
``.backward()`` reaches them (FSDP2's own hooks reduce the copies' gradients into them). A
backward pass of ``trace(loss=...)`` without ``keep_grads`` runs ``.backward()`` for such a
model and then puts every ``.grad`` back as it was (:func:`backward_leaving_grads`); the
gradients are read by name after the backward pass (before it, a module may hold FSDP2's
gathered copy of a parameter rather than the parameter), with ``keep_grads`` too.

>>> alone() is None  # (no process group here)
True
"""

from __future__ import annotations

import sys

import torch

#: an FSDP2 model's parameters and their ``.grad`` before a run (:func:`held_grads`)
Held = list[tuple[torch.nn.Parameter, object]] | None

__all__ = ["Held", "alone", "backward_leaving_grads", "held_grads"]


def alone() -> str | None:
    """Why this process must not run the model again by itself (it is one rank of several in
    an initialised process group), or None. ``torch.distributed`` is never imported here."""
    dist = sys.modules.get("torch.distributed")
    if dist is None or not dist.is_available() or not dist.is_initialized():
        return None
    ranks = dist.get_world_size()
    if ranks < 2:
        return None
    return (
        f"this process is rank {dist.get_rank()} of {ranks} (torch.distributed): running the "
        f"model again on this rank alone would wait forever for the other ranks' collectives; "
        f"call it on every rank (e.g. widget.intervene(...) or nfw.trace(..., replace=...) in "
        f"the script every rank runs)"
    )


def _fully_sharded(model: torch.nn.Module) -> list[torch.nn.Module]:
    """The FSDP2 modules (``fully_shard``) of ``model``; ``torch.distributed`` is never
    imported here."""
    fsdp = sys.modules.get("torch.distributed.fsdp")
    kind = getattr(fsdp, "FSDPModule", None)
    return [m for m in model.modules() if isinstance(m, kind)] if kind is not None else []


def held_grads(model: torch.nn.Module) -> Held:
    """For an FSDP2 model, before its forward pass: each parameter and its ``.grad``, once its
    sharded parameters are in its modules (``reshard()``: a forward pass without a backward one
    leaves FSDP2's gathered copies there); None for any other model."""
    modules = _fully_sharded(model)
    if not modules:
        return None
    for module in modules:
        module.reshard()  # type: ignore[operator]  # (local: frees the gathered copies)
    return [(p, p.grad) for p in model.parameters()]


def backward_leaving_grads(
    loss: torch.Tensor, model: torch.nn.Module, held: Held
) -> list[tuple[str, torch.Tensor]]:
    """The parameters' gradients of ``loss`` by ``.backward()`` (every rank runs it: FSDP2's
    hooks reduce over the ranks), read by name once FSDP2 has put its sharded parameters back;
    each ``.grad`` of :func:`held_grads` left as it was."""
    assert held is not None
    for p, _ in held:
        p.grad = None
    try:
        loss.backward()
        found = model.named_parameters()
        return [(n, p.grad) for n, p in found if p.requires_grad and p.grad is not None]
    finally:
        for p, grad in held:
            p.grad = grad  # type: ignore[assignment]
