"""Attention maps recorded during a forward pass: the recorder that watches the attention ops
(:mod:`.recorder`, what it does with each: :mod:`.handlers`), the maths that makes the
probabilities from their arguments (:mod:`.probabilities`, :mod:`.mha`) and the records
(:mod:`.maps`)."""

from .maps import AttentionMap, DeviceMap
from .probabilities import PendingMap, attention_probs
from .recorder import INTERESTING, AttentionRecorder, AttentionTracer

__all__ = [
    "INTERESTING",
    "AttentionMap",
    "AttentionRecorder",
    "AttentionTracer",
    "DeviceMap",
    "PendingMap",
    "attention_probs",
]
