"""Runs over several processes (``torch.distributed``): what one rank must not do alone.

A model sharded over ranks (FSDP2, tensor parallelism) runs collectives in its forward pass:
every rank must run it, together. ``trace()`` runs it once on every rank (each rank calls it);
what would run it again on one rank only (a widget's attention zoom or intervention, asked for
by a click on rank 0; the second run that looks for where a NaN was made, which only the ranks
that saw one would start) would wait forever for the others, so it is refused, with this
reason.

>>> alone() is None  # (no process group here)
True
"""

from __future__ import annotations

import sys

__all__ = ["alone"]


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
