"""Attention maps recorded during a forward pass, attributed to the module call that ran them.

    >>> import torch, torch.nn.functional as F
    >>> from neural_flow_widget.capture.attention import AttentionTracer
    >>> q = k = v = torch.randn(1, 2, 5, 8)
    >>> with AttentionTracer() as tracer:
    ...     out = F.scaled_dot_product_attention(q, k, v, is_causal=True)
    >>> tracer.maps[0][0].weights.shape
    (2, 5, 5)

Three sources of maps, one registry of handlers (``_HANDLERS``; ``INTERESTING`` is its key set):

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

import math
import weakref
from collections.abc import Callable
from typing import Any

import torch
import torch.nn.functional as F
from torch import Tensor
from torch.overrides import TorchFunctionMode

from .maps import (
    AttentionMap,
    PendingMap,
    _map_from_probs,
    _pool_factor,
    _mha_map,
    attention_probs,
    sdpa_inputs,
    sdpa_map,
)

__all__ = ["AttentionMap", "AttentionRecorder", "AttentionTracer", "INTERESTING", "attention_probs"]


# ------------------------------------------------------------------ provenance side table


class _TagRef(weakref.ref):
    """A weak reference to a tagged tensor that remembers its table key and its tag."""

    __slots__ = ("key", "tag")

    def __new__(cls, tensor: Tensor, callback: Callable, tag: object) -> _TagRef:
        return super().__new__(cls, tensor, callback)

    def __init__(self, tensor: Tensor, callback: Callable, tag: object) -> None:
        super().__init__(tensor, callback)
        self.key, self.tag = id(tensor), tag


class _Provenance:
    """Tags of live tensors keyed by id(); an entry leaves when its tensor is collected."""

    __slots__ = ("_refs", "_drop")

    def __init__(self) -> None:
        refs: dict[int, _TagRef] = {}

        def drop(ref: _TagRef) -> None:
            if refs.get(ref.key) is ref:
                del refs[ref.key]

        self._refs, self._drop = refs, drop

    def __bool__(self) -> bool:
        return bool(self._refs)

    def get(self, obj: object) -> object | None:
        ref = self._refs.get(id(obj))
        return None if ref is None or ref() is not obj else ref.tag

    def first(self, args: tuple, kwargs: dict) -> object | None:
        for value in (*args, *kwargs.values()):
            if isinstance(value, Tensor) and (tag := self.get(value)) is not None:
                return tag
        return None

    def set(self, tensor: Tensor, tag: object) -> None:
        self._refs[id(tensor)] = _TagRef(tensor, self._drop, tag)

    def clear(self) -> None:
        self._refs.clear()


_SCORES = "scores"  # tag of a q·kᵀ-like product and of what elementwise ops make of it


class _Pending:
    """A softmax output (tag "probs") waiting for the matmul that shows it is attention."""

    __slots__ = ("call", "map", "error", "done")

    def __init__(self, call: int) -> None:
        self.call, self.map, self.error, self.done = call, None, None, False


# ------------------------------------------------------------------------ handler registry

Handler = Callable[["AttentionRecorder", tuple, dict, Any], None]
_HANDLERS: dict[Any, Handler] = {}


def _register(*funcs: Any) -> Callable[[Handler], Handler]:
    """Route each of ``funcs`` to the decorated handler; a func registered twice is an error."""

    def decorate(handler: Handler) -> Handler:
        for func in dict.fromkeys(funcs):  # one func named twice in one call (an alias) is fine
            if func in _HANDLERS:
                raise ValueError(
                    f"{func!r} already has the attention handler {_HANDLERS[func].__name__}; "
                    f"register each op once (not again for {handler.__name__})"
                )
            _HANDLERS[func] = handler
        return handler

    return decorate


def _ops(owner: Any, *names: str) -> list[Any]:
    """The callables ``owner.<name>`` this torch version has."""
    return [getattr(owner, name) for name in names if hasattr(owner, name)]


def _arg(args: tuple, kwargs: dict, index: int, name: str, default: Any = None) -> Any:
    return args[index] if len(args) > index else kwargs.get(name, default)


@_register(F.scaled_dot_product_attention)
def _on_sdpa(rec: AttentionRecorder, args: tuple, kwargs: dict, result: Any) -> None:
    q, k = _arg(args, kwargs, 0, "query"), _arg(args, kwargs, 1, "key")
    mask = _arg(args, kwargs, 3, "attn_mask")
    settings = (bool(_arg(args, kwargs, 5, "is_causal", False)), _arg(args, kwargs, 6, "scale"),
                bool(_arg(args, kwargs, 7, "enable_gqa", False)))  # fmt: skip
    if rec.writes is not None and _held_fits(q, k, mask, rec.max_exact):
        # the arguments themselves, until the pass ends or something writes in place (see
        # AttentionRecorder.settle)
        rec._store(rec._current_call(), _Held(q, k, mask, settings, rec.writes.seq))
        rec.writes.before_next_write(rec.settle)
    else:
        rec._store(rec._current_call(), _sdpa_entry(rec, q, k, mask, settings))


def _sdpa_entry(rec: AttentionRecorder, q: Tensor, k: Tensor, mask: Tensor | None,
                settings: tuple) -> AttentionMap | PendingMap:  # fmt: skip
    is_causal, scale, enable_gqa = settings
    inputs = sdpa_inputs(q, k, attn_mask=mask, is_causal=is_causal, scale=scale,
                         enable_gqa=enable_gqa, sample=rec.sample, max_exact=rec.max_exact)
    # lazily on the CPU, where the copies are no bigger than the map (on a GPU the copies
    # would hold device memory until read: the map is made and moved to the host now)
    if rec.lazy and inputs.qs.is_cpu and inputs.copy_nbytes <= inputs.map_nbytes:
        return PendingMap(inputs.copied())
    return sdpa_map(inputs)


class _Held:
    """An SDPA call's query, key and mask, held as they are until the pass ends."""

    __slots__ = ("q", "k", "mask", "settings", "seq")

    def __init__(self, q: Tensor, k: Tensor, mask: Tensor | None, settings: tuple,
                 seq: int) -> None:  # fmt: skip
        self.q, self.k, self.mask, self.settings, self.seq = q, k, mask, settings, seq


def _held_fits(q: Any, k: Any, mask: Any, max_exact: int) -> bool:
    """Whether holding these CPU tensors (all of their memory) costs no more than the map
    itself would (the bound that copies are held to)."""
    if not (isinstance(q, Tensor) and isinstance(k, Tensor) and q.is_cpu and q.ndim >= 3
            and k.ndim >= 3):  # fmt: skip
        return False
    held = {t.untyped_storage().data_ptr(): t.untyped_storage().nbytes()
            for t in (q, k, mask) if isinstance(t, Tensor)}
    q_len, k_len = q.shape[-2], k.shape[-2]
    heads = math.prod(q.shape[1:-2])
    cells = -(-q_len // _pool_factor(q_len, max_exact)) * -(-k_len // _pool_factor(k_len, max_exact))
    return sum(held.values()) <= 4 * heads * cells


@_register(F.multi_head_attention_forward)
def _on_mha(rec: AttentionRecorder, args: tuple, kwargs: dict, result: Any) -> None:
    rec._store(rec._current_call(), _mha_map(args, kwargs, rec.sample, rec.max_exact))


def _matmul_like(first: Callable[[tuple, dict], Any], name: str) -> Handler:
    """Handler for a product whose first operand ``first(args, kwargs)`` picks out."""

    def handler(rec: AttentionRecorder, args: tuple, kwargs: dict, result: Any) -> None:
        tag = rec._tags.get(first(args, kwargs)) if rec._tags else None
        if isinstance(tag, _Pending):
            rec._confirm(tag)
        elif isinstance(result, Tensor):
            rec._tag(result, _SCORES)

    handler.__name__ = name
    return handler


def _operand(index: int, name: str) -> Callable[[tuple, dict], Any]:
    return lambda args, kwargs: _arg(args, kwargs, index, name)


def _einsum_first(args: tuple, kwargs: dict) -> Any:
    """The first operand of torch.einsum(equation, *operands) or torch.einsum(equation, [operands])."""
    first = args[1] if len(args) > 1 else None
    return first[0] if isinstance(first, (list, tuple)) and first else first


_MATMULS = _ops(torch, "matmul", "bmm") + _ops(torch.Tensor, "matmul", "bmm", "__matmul__")
for _name, _first, _funcs in (  # x @ y arrives as Tensor.matmul in recent torch, __matmul__ in older ones
    ("_on_matmul", _operand(0, "input"), _MATMULS),
    ("_on_rmatmul", _operand(1, "other"), _ops(torch.Tensor, "__rmatmul__")),  # other @ self
    ("_on_baddbmm", _operand(1, "batch1"), _ops(torch, "baddbmm") + _ops(torch.Tensor, "baddbmm")),
    ("_on_einsum", _einsum_first, [torch.einsum]),
):
    _register(*_funcs)(_matmul_like(_first, _name))
del _name, _first, _funcs


_SOFTMAXES = [F.softmax, *_ops(torch, "softmax"), *_ops(torch.Tensor, "softmax")]
_SOFTMAXES += _ops(torch.special, "softmax")


@_register(*_SOFTMAXES)
def _on_softmax(rec: AttentionRecorder, args: tuple, kwargs: dict, result: Any) -> None:
    if not rec._tags:
        return
    x, dim = _arg(args, kwargs, 0, "input"), _arg(args, kwargs, 1, "dim")
    if rec._tags.get(x) is not _SCORES or not isinstance(result, Tensor) or not isinstance(dim, int):
        return
    if x.ndim < 3 or dim % x.ndim != x.ndim - 1:
        return
    pending = _Pending(rec._current_call())
    try:
        pending.map = _map_from_probs(result, rec.sample, rec.max_exact)
    except Exception as err:  # reported only if a matmul confirms this softmax as attention
        pending.error = f"softmax attention map: {type(err).__name__}: {err}"
    rec._tag(result, pending)


_ELEMENTWISE = ("mul", "div", "add", "sub", "true_divide", "masked_fill", "where", "tanh", "clamp", "dropout")
_OPERATORS = ("__mul__", "__rmul__", "__truediv__", "__add__", "__radd__", "__sub__", "__rsub__")
_CASTS = ("to", "type", "float", "half", "bfloat16", "double", "contiguous")


_PASSTHROUGH = [*_ops(torch.Tensor, *_ELEMENTWISE, *_OPERATORS, *_CASTS), *_ops(torch, *_ELEMENTWISE),
                F.dropout]  # fmt: skip
_RESHAPES = [*_ops(torch.Tensor, "view", "reshape"), torch.reshape]


@_register(*_PASSTHROUGH)
def _on_passthrough(rec: AttentionRecorder, args: tuple, kwargs: dict, result: Any) -> None:
    if rec._tags and isinstance(result, Tensor) and rec._tags.get(result) is None:
        tag = rec._tags.first(args, kwargs)
        if tag is not None:
            rec._tag(result, tag)


@_register(*_RESHAPES)
def _on_reshape(rec: AttentionRecorder, args: tuple, kwargs: dict, result: Any) -> None:
    if not rec._tags or not isinstance(result, Tensor):
        return
    x = _arg(args, kwargs, 0, "input")
    tag = rec._tags.get(x)
    if tag is not None and result is not x and result.ndim and x.ndim and result.shape[-1] == x.shape[-1]:
        rec._tag(result, tag)


INTERESTING: frozenset = frozenset(_HANDLERS)
"""Every func :meth:`AttentionRecorder.observe` acts on; callers skip all others with one lookup."""

_FOLLOWERS: frozenset = frozenset([*_PASSTHROUGH, *_RESHAPES])
"""The funcs that only carry a provenance tag on: nothing to do before a product is tagged."""


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
    a CPU SDPA call's entry may be a :class:`~._attention_math.PendingMap` (copies of its
    inputs, no bigger than the map) that makes the map on first ``resolve()``.
    """

    INTERESTING: frozenset = INTERESTING
    __slots__ = ("maps", "errors", "sample", "max_exact", "lazy", "watched", "writes", "_current_call",
                 "_tags")  # fmt: skip

    def __init__(self, current_call: Callable[[], int], *, sample: int = 0, max_exact: int = 512,
                 lazy: bool = False) -> None:  # fmt: skip
        if sample < 0:
            raise ValueError(f"sample={sample}; pass the index of a batch sample (>= 0)")
        if max_exact < 1:
            raise ValueError(f"max_exact={max_exact}; pass max_exact >= 1 (longest axis kept unpooled)")
        self.maps: dict[int, list[AttentionMap]] = {}
        self.errors: dict[int, list[str]] = {}
        self.sample, self.max_exact, self.lazy = sample, max_exact, lazy
        self._current_call = current_call
        self._tags = _Provenance()
        #: the funcs worth observing now (a caller may hold this set: it changes in place):
        #: INTERESTING less the followers until a product has been tagged in this pass
        self.watched: set = set(INTERESTING - _FOLLOWERS)
        #: what sees in-place writes (the dataflow tracer: ``seq``, ``written_since``): with it,
        #: a lazy recorder holds a CPU SDPA call's arguments until :meth:`settle`
        self.writes: Any = None

    def observe(self, func: Any, args: tuple, kwargs: dict | None, result: Any) -> None:
        """Act on one finished op; a no-op unless ``func`` is in ``INTERESTING``."""
        handler = _HANDLERS.get(func)
        if handler is None:
            return
        try:
            handler(self, args, kwargs or {}, result)
        except Exception as err:  # one failing map marks its call; the forward pass goes on
            name = getattr(func, "__name__", repr(func))
            self.errors.setdefault(self._current_call(), []).append(
                f"attention map for {name} failed: {type(err).__name__}: {err}"
            )

    def follows_any(self, tensors: list) -> bool:
        """Whether one of these tensors carries a tag (scores of a q·kᵀ-like product, or a
        softmax of them): the ops that take it must be observed."""
        tags = self._tags
        return bool(tags) and any(tags.get(t) is not None for t in tensors)

    def forget(self) -> None:
        """Drop the tensor provenance table (at the end of a pass); maps and errors stay."""
        self.settle()
        self._tags.clear()
        self.watched.difference_update(_FOLLOWERS)

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
                if type(entry) is not _Held:
                    continue
                tensors = [t for t in (entry.q, entry.k, entry.mask) if isinstance(t, Tensor)]
                try:
                    if self.writes.failure is not None or any(
                            self.writes.written_since(t, entry.seq) for t in tensors):
                        raise RuntimeError("its query, key or mask was (or may have been) "
                                           "overwritten in place later in the forward pass")
                    entries[i] = _sdpa_entry(self, entry.q, entry.k, entry.mask, entry.settings)
                except Exception as err:
                    entries[i] = None
                    self.errors.setdefault(call, []).append(
                        f"attention map for scaled_dot_product_attention failed: "
                        f"{type(err).__name__}: {err}")
            if None in entries:
                entries[:] = [e for e in entries if e is not None]

    def _tag(self, tensor: Tensor, tag: object) -> None:
        self._tags.set(tensor, tag)
        if len(self.watched) < len(INTERESTING):  # the first tag of the pass
            self.watched.update(_FOLLOWERS)

    def _store(self, call: int, amap: AttentionMap) -> None:
        self.maps.setdefault(call, []).append(amap)

    def _confirm(self, pending: _Pending) -> None:
        if pending.done:
            return
        pending.done = True
        if pending.map is not None:
            self._store(pending.call, pending.map)
        if pending.error is not None:
            self.errors.setdefault(pending.call, []).append(pending.error)


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

    Without ``current_call`` every map lands in ``maps[0]``, in the order it was made.
    Active, it turns off ``nn.MultiheadAttention``'s fused inference fast path (as any
    TorchFunctionMode does), so MHA outputs may differ from an untraced call in the last bits.
    """

    def __init__(
        self, current_call: Callable[[], int] | None = None, *, sample: int = 0, max_exact: int = 512
    ) -> None:
        super().__init__()
        self.recorder = AttentionRecorder(current_call or _no_call, sample=sample, max_exact=max_exact)

    @property
    def maps(self) -> dict[int, list[AttentionMap]]:
        return self.recorder.maps

    @property
    def errors(self) -> dict[int, list[str]]:
        return self.recorder.errors

    def __torch_function__(self, func: Any, types: Any, args: tuple = (), kwargs: dict | None = None) -> Any:
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
