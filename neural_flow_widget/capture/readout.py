"""The logit lens: what a causal language model would predict from a stage's output, read
through the model's own final norm and unembedding.

A run of a model with an unembedding (a Hugging Face model's ``get_output_embeddings()``, or
``readout=(norm, head)`` given) keeps, for the batch sample it shows, the whole output of
every block whose output is the model's hidden size along the sequence (``(N, L, D)``: the
residual stream between blocks, and what the attention and MLP sublayers write into it), up
to :data:`READOUT_BUDGET` bytes. :meth:`Readouts.of` then applies the final norm and the
unembedding to one of them: the top-k next tokens and their probabilities at every position.
The last block's readout is the model's own logits.
"""

from __future__ import annotations

import weakref
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import torch

__all__ = ["READOUT_BUDGET", "Readout", "Readouts", "unembedding"]

READOUT_BUDGET = 64 * 2**20  # bytes of hidden states a run keeps for readouts


@dataclass(frozen=True, slots=True, eq=False)
class Readout:
    """A stage's output read as next-token predictions: per position, the ``k`` most likely
    token ids (``ids``, most likely first) and their probabilities."""

    ids: np.ndarray  # (positions, k) int64
    probs: np.ndarray  # (positions, k) float32

    def top(self, position: int = -1) -> list[tuple[int, float]]:
        """(token id, probability) at one position, most likely first."""
        return [(int(i), float(p)) for i, p in zip(self.ids[position], self.probs[position])]


def unembedding(model: torch.nn.Module) -> torch.nn.Module | None:
    """The model's unembedding (``get_output_embeddings()``), or None."""
    get = getattr(model, "get_output_embeddings", None)
    try:
        head = get() if callable(get) else None
    except Exception:  # (a model whose method raises: no readout)
        return None
    return head if isinstance(head, torch.nn.Module) and hasattr(head, "weight") else None


@dataclass(eq=False)
class Readouts:
    """The hidden states a run kept (by call index), and the modules that read them."""

    kept: dict[int, torch.Tensor]  # call -> (L, D) of the sample
    head: Any  # weakref to the unembedding
    norm: Any  # weakref to the final norm, or None (applied before the head)
    _made: dict[tuple[int, int], Readout] = field(default_factory=dict)

    @classmethod
    def of_modules(
        cls, kept: dict[int, torch.Tensor], head: torch.nn.Module, norm: torch.nn.Module | None
    ) -> Readouts:
        return cls(kept, weakref.ref(head), weakref.ref(norm) if norm is not None else None)

    def readout(self, call: int, k: int, position: int | None = None) -> Readout | None:
        """The top-``k`` readout of a kept call's output, at every position or at one (its
        only row); None when none was kept."""
        if call not in self.kept:
            return None
        if position is not None:
            return self._read(self.kept[call][position][None], k)
        if (call, k) not in self._made:
            self._made[(call, k)] = self._read(self.kept[call], k)
        return self._made[(call, k)]

    def _read(self, h: torch.Tensor, k: int) -> Readout:
        head = self.head()
        norm = self.norm() if self.norm is not None else None
        if head is None or (self.norm is not None and norm is None):
            raise ValueError("the model of this run is gone: its unembedding with it")
        with torch.no_grad():
            logits = head(norm(h[None]) if norm is not None else h[None])[0].float()
            top = torch.topk(torch.softmax(logits, dim=-1), min(k, logits.shape[-1]), dim=-1)
        return Readout(top.indices.cpu().numpy(), top.values.cpu().numpy().astype(np.float32))
