"""Attention maps recorded during a forward pass: the recorder that watches the attention ops
(:mod:`.recorder`) and the maths that makes the probabilities from their arguments
(:mod:`.maps`)."""

from .maps import AttentionMap, PendingMap, attention_probs
from .recorder import INTERESTING, AttentionRecorder, AttentionTracer

__all__ = ["INTERESTING", "AttentionMap", "AttentionRecorder", "AttentionTracer", "PendingMap",
           "attention_probs"]
