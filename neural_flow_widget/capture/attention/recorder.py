"""Attention maps recorded during a forward pass, attributed to the module call that ran them.

    >>> import torch, torch.nn.functional as F
    >>> from neural_flow_widget.capture.attention import AttentionTracer
    >>> q = k = v = torch.randn(1, 2, 5, 8)
    >>> with AttentionTracer() as tracer:
    ...     out = F.scaled_dot_product_attention(q, k, v, is_causal=True)
    >>> tracer.maps[0][0].weights.shape
    (2, 5, 5)

Three sources of maps, one registry of handlers (:mod:`.handlers`):

* ``"sdpa"``: ``F.scaled_dot_product_attention`` -- the probabilities are recomputed from its
  arguments by :func:`attention_probs`, in query blocks.
* ``"mha"``: ``F.multi_head_attention_forward`` (what ``nn.MultiheadAttention`` calls) -- the
  per-head weights ``need_weights=True, average_attn_weights=False`` would have returned.
* ``"softmax"``: hand-written attention. A side table keyed weakly by tensor identity tags
  matmul outputs as *scores*; elementwise ops, casts and dropout carry the tag; a softmax over
  the last axis of a tagged tensor with ndim >= 3 is a *candidate*; a matmul whose first operand
  is a candidate confirms it and the softmax output becomes a map.

Every op runs unchanged, with its own arguments; maps are computed afterwards, without
gradients, for one batch ``sample`` only. Dropout is ignored: maps are pre-dropout
probabilities. Rows whose keys are all masked are zeros (as SDPA's math backend returns), except
on the softmax path, which keeps whatever the model computed.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from torch import Tensor
from torch.overrides import TorchFunctionMode

from ...tracing.protocols import WriteLog
from ..sharded import is_sharded
from .handlers import FOLLOWERS, HANDLERS, INTERESTING, Held, Pending, Provenance, sdpa_entry
from .maps import AttentionMap
from .probabilities import attention_probs

__all__ = ["INTERESTING", "AttentionMap", "AttentionRecorder", "AttentionTracer", "attention_probs"]


# ------------------------------------------------------------------------ recorder and tracer


class AttentionRecorder:
    """Turns observed ops into AttentionMaps keyed by the module call that ran them.

        >>> import torch, torch.nn.functional as F
        >>> rec = AttentionRecorder(lambda: 7)
        >>> q = torch.randn(1, 2, 4, 8)
        >>> out = F.scaled_dot_product_attention(q, q, q)
        >>> rec.observe(F.scaled_dot_product_attention, (q, q, q), {}, out)
        >>> rec.maps[7][0].source, rec.maps[7][0].weights.shape
        ('sdpa', (2, 4, 4))

    A caller's TorchFunctionMode runs each op itself, then calls ``observe(func, args, kwargs,
    result)`` when ``func in recorder.watched`` (the ops of ``INTERESTING`` that can matter at
    that point of the pass; calling for all of ``INTERESTING`` is correct too); it calls from inside
    ``__torch_function__``, so the maps' own torch ops are not traced. ``current_call()`` names
    the module call an op belongs to. ``maps[call]`` lists maps in the order they were made;
    ``errors[call]`` lists why a map could not be made (``observe`` never raises, so a failing
    map never aborts the forward pass). Call :meth:`forget` when the pass ends. With ``lazy``,
    a CPU SDPA call's entry may be a :class:`~.probabilities.PendingMap` (copies of its
    inputs, no bigger than the map) that makes the map on first ``resolve()``.
    """

    INTERESTING: frozenset = INTERESTING
    __slots__ = (
        "current_call",
        "errors",
        "lazy",
        "maps",
        "max_exact",
        "sample",
        "tags",
        "watched",
        "writes",
    )

    def __init__(
        self,
        current_call: Callable[[], int],
        *,
        sample: int = 0,
        max_exact: int = 512,
        lazy: bool = False,
        writes: WriteLog | None = None,
    ) -> None:
        if sample < 0:
            raise ValueError(f"sample={sample}; pass the index of a batch sample (>= 0)")
        if max_exact < 1:
            raise ValueError(
                f"max_exact={max_exact}; pass max_exact >= 1 (longest axis kept unpooled)"
            )
        self.maps: dict[int, list[Any]] = {}  # AttentionMap, PendingMap, DeviceMap
        self.errors: dict[int, list[str]] = {}
        self.sample, self.max_exact, self.lazy = sample, max_exact, lazy
        self.current_call = current_call
        self.tags = Provenance()
        #: the funcs worth observing now (a caller may hold this set: it changes in place):
        #: INTERESTING less the followers until a product has been tagged in this pass
        self.watched: set = set(INTERESTING - FOLLOWERS)
        #: what sees in-place writes (the dataflow tracer: ``seq``, ``written_since``): with it,
        #: a lazy recorder holds a CPU SDPA call's arguments until :meth:`settle`
        self.writes = writes

    def observe(self, func: Any, args: tuple, kwargs: dict | None, result: Any) -> None:
        """Act on one finished op; a no-op unless ``func`` is in ``INTERESTING``."""
        handler = HANDLERS.get(func)
        if handler is None or _unmapped(args, kwargs):
            return  # (a tensor on the meta device has no values to make a map of)
        try:
            handler(self, args, kwargs or {}, result)
        except Exception as err:  # one failing map marks its call; the forward pass goes on
            name = getattr(func, "__name__", repr(func))
            self.errors.setdefault(self.current_call(), []).append(
                f"attention map for {name} failed: {type(err).__name__}: {err}"
            )

    def follows_any(self, tensors: list) -> bool:
        """Whether one of these tensors carries a tag (scores of a q·kᵀ-like product, or a
        softmax of them): the ops that take it must be observed."""
        tags = self.tags
        return bool(tags) and any(tags.get(t) is not None for t in tensors)

    def forget(self) -> None:
        """Drop the tensor provenance table (at the end of a pass); maps and errors stay."""
        self.settle()
        self.tags.clear()
        self.watched.difference_update(FOLLOWERS)

    def settle(self) -> None:
        """Turn the SDPA arguments held in the pass into maps or pending maps (as the call
        itself would have): at the end of the pass, where Python runs warm, rather than in
        the op's handler, where the same work cost about three times more; or before the
        first op that writes in place.  (A call whose query, key or mask was written in
        place after all gets an error, never a wrong map.)"""
        if self.writes is not None:
            self.writes.before_next_write(None)
        for call, entries in self.maps.items():
            for i, entry in enumerate(entries):
                if type(entry) is not Held:
                    continue
                tensors = [t for t in (entry.q, entry.k, entry.mask) if isinstance(t, Tensor)]
                assert self.writes is not None  # (arguments are held only with one)
                try:
                    if self.writes.failure is not None or any(
                        self.writes.written_since(t, entry.seq) for t in tensors
                    ):
                        raise RuntimeError(
                            "its query, key or mask was (or may have been) "
                            "overwritten in place later in the forward pass"
                        )
                    entries[i] = sdpa_entry(self, entry.q, entry.k, entry.mask, entry.settings)
                except Exception as err:
                    entries[i] = None
                    self.errors.setdefault(call, []).append(
                        f"attention map for scaled_dot_product_attention failed: "
                        f"{type(err).__name__}: {err}"
                    )
            if None in entries:
                entries[:] = [e for e in entries if e is not None]

    def tag(self, tensor: Tensor, tag: object) -> None:
        self.tags.set(tensor, tag)
        if len(self.watched) < len(INTERESTING):  # the first tag of the pass
            self.watched.update(FOLLOWERS)

    def store(self, call: int, amap: Any) -> None:
        self.maps.setdefault(call, []).append(amap)

    def confirm(self, pending: Pending) -> None:
        if pending.done:
            return
        pending.done = True
        if pending.map is not None:
            self.store(pending.call, pending.map)
        if pending.error is not None:
            self.errors.setdefault(pending.call, []).append(pending.error)


def _unmapped(args: tuple, kwargs: dict | None) -> bool:
    """Whether the first tensor argument of an op has no values to map here: it lives on the
    meta device, or it is a DTensor (sharded over ranks: reading it later, on one rank, would
    be a collective that the other ranks never join)."""
    for value in (*args, *(kwargs or {}).values()):
        if isinstance(value, Tensor):
            return value.is_meta or is_sharded(value)
    return False


def _no_call() -> int:
    return 0


class AttentionTracer(TorchFunctionMode):
    """A context manager that records attention maps of everything run inside it.

        >>> import torch
        >>> mha = torch.nn.MultiheadAttention(8, 2, batch_first=True)
        >>> x = torch.randn(1, 3, 8)
        >>> with AttentionTracer() as tracer:
        ...     out, _ = mha(x, x, x, need_weights=False)
        >>> [(m.source, m.weights.shape) for m in tracer.maps[0]]
        [('mha', (2, 3, 3))]

    Without ``current_call`` every map lands in ``maps[0]``, in the order it was made;
    ``AttentionTracer.of(recorder)`` feeds a recorder made elsewhere (capture's, when no
    dataflow tracer carries it). Active, it turns off ``nn.MultiheadAttention``'s fused
    inference fast path (as any TorchFunctionMode does), so MHA outputs may differ from an
    untraced call in the last bits.
    """

    def __init__(
        self,
        current_call: Callable[[], int] | None = None,
        *,
        sample: int = 0,
        max_exact: int = 512,
    ) -> None:
        super().__init__()
        self.recorder = AttentionRecorder(
            current_call or _no_call, sample=sample, max_exact=max_exact
        )

    @classmethod
    def of(cls, recorder: AttentionRecorder) -> AttentionTracer:
        """A mode that feeds ``recorder``."""
        tracer = cls()
        tracer.recorder = recorder
        return tracer

    @property
    def maps(self) -> dict[int, list[AttentionMap]]:
        return self.recorder.maps

    @property
    def errors(self) -> dict[int, list[str]]:
        return self.recorder.errors

    def __torch_function__(
        self, func: Any, types: Any, args: tuple = (), kwargs: dict | None = None
    ) -> Any:
        kwargs = kwargs or {}
        result = func(*args, **kwargs)
        if func in self.recorder.watched:
            self.recorder.observe(func, args, kwargs, result)
        return result

    def __exit__(self, exc_type: Any, exc_value: Any, traceback: Any) -> Any:
        try:
            return super().__exit__(exc_type, exc_value, traceback)
        finally:
            self.recorder.forget()
