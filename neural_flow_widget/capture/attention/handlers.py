"""What the attention recorder does with each op it watches: a registry of handlers, one per
kind of op (``HANDLERS``; ``INTERESTING`` is its key set), and the provenance side table of
the hand-written path.

* ``"sdpa"``: ``F.scaled_dot_product_attention`` -- its arguments are kept (or copied) for
  :func:`~.maps.sdpa_map`.
* ``"mha"``: ``F.multi_head_attention_forward`` -- :func:`~.mha.mha_map`.
* ``"softmax"``: hand-written attention. The side table, keyed weakly by tensor identity,
  tags matmul outputs as *scores*; elementwise ops, casts and dropout carry the tag; a
  softmax over the last axis of a tagged tensor with ndim >= 3 is a *candidate*; a matmul
  whose first operand is a candidate confirms it and the softmax output becomes a map.
"""

from __future__ import annotations

import math
import weakref
from collections.abc import Callable
from typing import Any, Protocol

import torch
import torch.nn.functional as F
from torch import Tensor

from .maps import AttentionMap, DeviceMap
from .mha import mha_map
from .probabilities import PendingMap, map_from_probs, pool_factor, sdpa_inputs, sdpa_map

__all__ = [
    "FOLLOWERS",
    "HANDLERS",
    "INTERESTING",
    "Held",
    "Pending",
    "Provenance",
    "Recorder",
    "register",
    "sdpa_arguments",
    "sdpa_entry",
]


class Recorder(Protocol):
    """What the handlers use of the :class:`~.recorder.AttentionRecorder`."""

    sample: int
    max_exact: int
    lazy: bool
    writes: Any
    tags: Provenance

    def current_call(self) -> int: ...
    def store(self, call: int, amap: Any) -> None: ...
    def tag(self, tensor: Tensor, tag: object) -> None: ...
    def confirm(self, pending: Pending) -> None: ...
    def settle(self) -> None: ...


# ------------------------------------------------------------------ provenance side table


class _TagRef(weakref.ref):
    """A weak reference to a tagged tensor that remembers its table key and its tag."""

    __slots__ = ("key", "tag")

    def __new__(cls, tensor: Tensor, callback: Callable, tag: object) -> _TagRef:
        return super().__new__(cls, tensor, callback)

    def __init__(self, tensor: Tensor, callback: Callable, tag: object) -> None:
        super().__init__(tensor, callback)  # type: ignore[call-arg]
        self.key, self.tag = id(tensor), tag


class Provenance:
    """Tags of live tensors keyed by id(); an entry leaves when its tensor is collected."""

    __slots__ = ("_drop", "_refs")

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


class Pending:
    """A softmax output (tag "probs") waiting for the matmul that shows it is attention."""

    __slots__ = ("call", "done", "error", "map")

    def __init__(self, call: int) -> None:
        self.call, self.done = call, False
        self.map: AttentionMap | DeviceMap | None = None
        self.error: str | None = None


# ------------------------------------------------------------------------ handler registry

Handler = Callable[["Recorder", tuple, dict, Any], None]
HANDLERS: dict[Any, Handler] = {}


def register(*funcs: Any) -> Callable[[Handler], Handler]:
    """Route each of ``funcs`` to the decorated handler; a func registered twice is an error."""

    def decorate(handler: Handler) -> Handler:
        for func in dict.fromkeys(funcs):  # one func named twice in one call (an alias) is fine
            if func in HANDLERS:
                raise ValueError(
                    f"{func!r} already has the attention handler {HANDLERS[func].__name__}; "
                    f"register each op once (not again for {handler.__name__})"
                )
            HANDLERS[func] = handler
        return handler

    return decorate


def _ops(owner: Any, *names: str) -> list[Any]:
    """The callables ``owner.<name>`` this torch version has."""
    return [getattr(owner, name) for name in names if hasattr(owner, name)]


def _arg(args: tuple, kwargs: dict, index: int, name: str, default: Any = None) -> Any:
    return args[index] if len(args) > index else kwargs.get(name, default)


def sdpa_arguments(args: tuple, kwargs: dict) -> tuple[Any, Any, Any, tuple]:
    """Query, key, mask and settings (is_causal, scale, enable_gqa, packed query heads) of a
    ``F.scaled_dot_product_attention`` call's arguments."""
    q, k = _arg(args, kwargs, 0, "query"), _arg(args, kwargs, 1, "key")
    settings = (
        bool(_arg(args, kwargs, 5, "is_causal", False)),
        _arg(args, kwargs, 6, "scale"),
        bool(_arg(args, kwargs, 7, "enable_gqa", False)),
        _packed_queries(q, k),
    )
    return q, k, _arg(args, kwargs, 3, "attn_mask"), settings


@register(F.scaled_dot_product_attention)
def _on_sdpa(rec: Recorder, args: tuple, kwargs: dict, result: Any) -> None:
    q, k, mask, settings = sdpa_arguments(args, kwargs)
    if rec.writes is not None and _held_fits(q, k, mask, rec.max_exact):
        # the arguments themselves, until the pass ends or something writes in place (see
        # AttentionRecorder.settle)
        rec.store(rec.current_call(), Held(q, k, mask, settings, rec.writes.seq))
        rec.writes.before_next_write(rec.settle)
    else:
        rec.store(rec.current_call(), sdpa_entry(rec, q, k, mask, settings))


def sdpa_entry(
    rec: Recorder, q: Tensor, k: Tensor, mask: Tensor | None, settings: tuple
) -> AttentionMap | DeviceMap | PendingMap:
    is_causal, scale, enable_gqa, packed = settings
    inputs = sdpa_inputs(
        q,
        k,
        attn_mask=mask,
        is_causal=is_causal,
        scale=scale,
        enable_gqa=enable_gqa,
        sample=rec.sample,
        max_exact=rec.max_exact,
        packed=packed,
    )
    # lazily on the CPU, where the copies are no bigger than the map (on a GPU the copies
    # would hold device memory until read: the map is made and moved to the host now)
    if rec.lazy and inputs.qs.is_cpu and inputs.copy_nbytes <= inputs.map_nbytes:
        return PendingMap(inputs.copied())
    return sdpa_map(inputs)


def _packed_queries(q: Any, k: Any) -> int:
    """How many query heads one query row of this SDPA call stands for: transformers packs a
    one-token decode step with grouped key/value heads, (N, H, 1, E) queries seen as
    (N, H_kv, H / H_kv, E), so that SDPA runs on the key/value heads; the model's own map is
    then (H, 1, S). 1 when the queries are not packed (a view of a one-query tensor with
    H_kv x rows heads)."""
    base = getattr(q, "_base", None)  # (the tensor that q is a view of, if it is one)
    if not isinstance(base, Tensor) or q.ndim != 4 or base.ndim != 4 or k.ndim != 4:
        return 1
    n, heads, rows, dim = q.shape
    if rows > 1 and k.shape[1] == heads and tuple(base.shape) == (n, heads * rows, 1, dim):
        return rows
    return 1


class Held:
    """An SDPA call's query, key and mask, held as they are until the pass ends."""

    __slots__ = ("k", "mask", "q", "seq", "settings")

    def __init__(
        self, q: Tensor, k: Tensor, mask: Tensor | None, settings: tuple, seq: int
    ) -> None:
        self.q, self.k, self.mask, self.settings, self.seq = q, k, mask, settings, seq


def _held_fits(q: Any, k: Any, mask: Any, max_exact: int) -> bool:
    """Whether holding these CPU tensors (all of their memory) costs no more than the map
    itself would (the bound that copies are held to)."""
    if not (
        isinstance(q, Tensor) and isinstance(k, Tensor) and q.is_cpu and q.ndim >= 3 and k.ndim >= 3
    ):
        return False
    held = {
        t.untyped_storage().data_ptr(): t.untyped_storage().nbytes()
        for t in (q, k, mask)
        if isinstance(t, Tensor)
    }
    q_len, k_len = q.shape[-2], k.shape[-2]
    heads = math.prod(q.shape[1:-2])
    cells = -(-q_len // pool_factor(q_len, max_exact)) * -(-k_len // pool_factor(k_len, max_exact))
    return sum(held.values()) <= 4 * heads * cells


@register(F.multi_head_attention_forward)
def _on_mha(rec: Recorder, args: tuple, kwargs: dict, result: Any) -> None:
    rec.store(rec.current_call(), mha_map(args, kwargs, rec.sample, rec.max_exact))


def _matmul_like(first: Callable[[tuple, dict], Any], name: str) -> Handler:
    """Handler for a product whose first operand ``first(args, kwargs)`` picks out."""

    def handler(rec: Recorder, args: tuple, kwargs: dict, result: Any) -> None:
        tag = rec.tags.get(first(args, kwargs)) if rec.tags else None
        if isinstance(tag, Pending):
            rec.confirm(tag)
        elif isinstance(result, Tensor):
            rec.tag(result, _SCORES)

    handler.__name__ = name
    return handler


def _operand(index: int, name: str) -> Callable[[tuple, dict], Any]:
    return lambda args, kwargs: _arg(args, kwargs, index, name)


def _einsum_first(args: tuple, kwargs: dict) -> Any:
    """The first operand of ``torch.einsum(equation, *operands)`` or of
    ``torch.einsum(equation, [operands])``."""
    first = args[1] if len(args) > 1 else None
    return first[0] if isinstance(first, (list, tuple)) and first else first


_MATMULS = _ops(torch, "matmul", "bmm") + _ops(torch.Tensor, "matmul", "bmm", "__matmul__")
for (
    _name,
    _first,
    _funcs,
) in (  # x @ y arrives as Tensor.matmul in recent torch, __matmul__ in older ones
    ("_on_matmul", _operand(0, "input"), _MATMULS),
    ("_on_rmatmul", _operand(1, "other"), _ops(torch.Tensor, "__rmatmul__")),  # other @ self
    ("_on_baddbmm", _operand(1, "batch1"), _ops(torch, "baddbmm") + _ops(torch.Tensor, "baddbmm")),
    ("_on_einsum", _einsum_first, [torch.einsum]),
):
    register(*_funcs)(_matmul_like(_first, _name))
del _name, _first, _funcs


_SOFTMAXES = [F.softmax, *_ops(torch, "softmax"), *_ops(torch.Tensor, "softmax")]
_SOFTMAXES += _ops(torch.special, "softmax")


@register(*_SOFTMAXES)
def _on_softmax(rec: Recorder, args: tuple, kwargs: dict, result: Any) -> None:
    if not rec.tags:
        return
    x, dim = _arg(args, kwargs, 0, "input"), _arg(args, kwargs, 1, "dim")
    if rec.tags.get(x) is not _SCORES or not isinstance(result, Tensor) or not isinstance(dim, int):
        return
    if x.ndim < 3 or dim % x.ndim != x.ndim - 1:
        return
    pending = Pending(rec.current_call())
    try:
        pending.map = map_from_probs(result, rec.sample, rec.max_exact)
    except Exception as err:  # reported only if a matmul confirms this softmax as attention
        pending.error = f"softmax attention map: {type(err).__name__}: {err}"
    rec.tag(result, pending)


_ELEMENTWISE = (
    "mul",
    "div",
    "add",
    "sub",
    "true_divide",
    "masked_fill",
    "where",
    "tanh",
    "clamp",
    "dropout",
)
_OPERATORS = ("__mul__", "__rmul__", "__truediv__", "__add__", "__radd__", "__sub__", "__rsub__")
_CASTS = ("to", "type", "float", "half", "bfloat16", "double", "contiguous")


_PASSTHROUGH = [
    *_ops(torch.Tensor, *_ELEMENTWISE, *_OPERATORS, *_CASTS),
    *_ops(torch, *_ELEMENTWISE),
    F.dropout,
]
_RESHAPES = [*_ops(torch.Tensor, "view", "reshape"), torch.reshape]


@register(*_PASSTHROUGH)
def _on_passthrough(rec: Recorder, args: tuple, kwargs: dict, result: Any) -> None:
    if rec.tags and isinstance(result, Tensor) and rec.tags.get(result) is None:
        tag = rec.tags.first(args, kwargs)
        if tag is not None:
            rec.tag(result, tag)


@register(*_RESHAPES)
def _on_reshape(rec: Recorder, args: tuple, kwargs: dict, result: Any) -> None:
    if not rec.tags or not isinstance(result, Tensor):
        return
    x = _arg(args, kwargs, 0, "input")
    tag = rec.tags.get(x)
    if (
        tag is not None
        and result is not x
        and result.ndim
        and x.ndim
        and result.shape[-1] == x.shape[-1]
    ):
        rec.tag(result, tag)


INTERESTING: frozenset = frozenset(HANDLERS)
"""Every func :meth:`AttentionRecorder.observe` acts on; callers skip all others with one lookup."""

FOLLOWERS: frozenset = frozenset([*_PASSTHROUGH, *_RESHAPES])
"""The funcs that only carry a provenance tag on: nothing to do before a product is tagged."""
