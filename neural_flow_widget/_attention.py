"""Attention maps recorded during a forward pass, attributed to the module call that ran them.

    >>> import torch, torch.nn.functional as F
    >>> from neural_flow_widget._attention import AttentionTracer
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

import inspect
import math
import weakref
from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import Any

import numpy as np
import torch
import torch.nn.functional as F
from torch import Tensor
from torch.overrides import TorchFunctionMode

__all__ = ["AttentionMap", "AttentionRecorder", "AttentionTracer", "INTERESTING", "attention_probs"]

_BLOCK_ELEMENTS = 1 << 22  # scores per query block, all heads together (16 MiB of float32)
_NEG_INF = float("-inf")


@dataclass(frozen=True, slots=True, eq=False)
class AttentionMap:
    """Attention probabilities of one batch sample, all heads, float32, read-only.

        >>> import numpy as np
        >>> m = AttentionMap(np.full((1, 2, 2), 0.5, np.float32), 2, 2, (1, 1), "sdpa", False)
        >>> m.mass().sum(-1).tolist()
        [[1.0, 1.0]]

    ``weights`` is (heads, q_len', k_len'). When an axis is longer than ``max_exact`` it is
    block-mean pooled by ``pool`` = (query factor, key factor): each entry is the mean of the
    probabilities in its block (a last, shorter block averages its own members), so a pooled
    row sums to about 1/pool[1]; :meth:`mass` rescales it to sum to 1. ``q_len``/``k_len`` are
    the original lengths; ``source`` is "sdpa", "mha" or "softmax"; ``causal`` is True when the
    op was given ``is_causal=True`` (masks are not inspected). Compared by identity (eq=False).
    """

    weights: np.ndarray
    q_len: int
    k_len: int
    pool: tuple[int, int]
    source: str
    causal: bool

    def mass(self) -> np.ndarray:
        """Weights times the number of keys in each key block: rows sum to 1 (0 when masked out)."""
        return self.weights * _block_sizes(self.k_len, self.pool[1]).numpy()


def attention_probs(
    q: Tensor,
    k: Tensor,
    *,
    attn_mask: Tensor | None = None,
    is_causal: bool = False,
    scale: float | None = None,
    enable_gqa: bool = False,
    sample: int = 0,
    max_exact: int = 512,
    block: int | None = None,
) -> AttentionMap:
    """softmax(q kᵀ · scale + mask) for batch ``sample``, as ``F.scaled_dot_product_attention`` sees it.

        >>> import torch
        >>> q, k = torch.randn(2, 4, 1024, 8), torch.randn(2, 2, 1024, 8)
        >>> m = attention_probs(q, k, is_causal=True, enable_gqa=True, sample=1)
        >>> m.weights.shape, m.pool
        ((4, 512, 512), (2, 2))

    Shapes follow SDPA: q (N, ..., L, E), k (N, ..., S, E) or without the batch axis; middle
    axes are flattened into heads. Bool masks: True = attend; float masks are added; masks
    broadcast over batch and heads. ``is_causal`` keeps key j <= query i (top-left aligned).
    ``scale`` defaults to 1/sqrt(E); ``enable_gqa`` repeats each kv head for its query group.
    Computed in float32, ``block`` query rows at a time (default: about 4M scores per block), so
    at most block x S scores per head exist at once. Axes longer than ``max_exact`` are pooled
    by ceil(len / max_exact) (see :class:`AttentionMap`). Fully masked rows give zeros.
    """
    if is_causal and attn_mask is not None:
        raise ValueError(
            "attention_probs: pass attn_mask or is_causal, not both "
            "(F.scaled_dot_product_attention rejects the pair too)"
        )
    _check_sample(sample, max(q.shape[0], k.shape[0]) if q.ndim >= 3 else 1)
    with torch.no_grad():
        qs, ks = _sample_heads(q, sample, "q"), _sample_heads(k, sample, "k")
        ks = _match_kv_heads(qs, ks, enable_gqa)
        heads, q_len, dim = qs.shape
        k_len = ks.shape[1]
        head_shape = tuple(q.shape[1:-2]) if q.ndim >= 3 else ()
        mask = None if attn_mask is None else _sample_mask(attn_mask, q.ndim, len(head_shape), sample)
        pq, pk = _pool_factor(q_len, max_exact), _pool_factor(k_len, max_exact)
        rows = _block_rows(block, heads, k_len, pq)
        factor = 1.0 / math.sqrt(dim) if scale is None else float(scale)
        out = torch.empty(heads, -(-q_len // pq), -(-k_len // pk), device=qs.device)
        kt = ks.transpose(1, 2)
        for r0 in range(0, q_len, rows):
            r1 = min(r0 + rows, q_len)
            scores = torch.matmul(qs[:, r0:r1], kt).mul_(factor)
            if is_causal:
                rows_i = torch.arange(r0, r1, device=qs.device)[:, None]
                scores.masked_fill_(rows_i < torch.arange(k_len, device=qs.device), _NEG_INF)
            if mask is not None:
                scores = _apply_mask(scores, _mask_rows(mask, head_shape, r0, r1))
            out[:, r0 // pq : -(-r1 // pq)] = _pool(_safe_softmax(scores), pq, pk)
        return _make_map(out, q_len, k_len, (pq, pk), "sdpa", bool(is_causal))


# ---------------------------------------------------------------------------- math helpers


def _check_sample(sample: int, batch: int) -> None:
    if not 0 <= sample < batch:
        raise IndexError(
            f"sample={sample} but the batch holds {batch} samples; pass sample= a value in 0..{batch - 1}"
        )


def _sample_heads(t: Tensor, sample: int, name: str) -> Tensor:
    """(N, ..., L, E) -> (heads, L, E) float32 for one sample; a batch of 1 broadcasts."""
    if t.ndim < 2:
        raise ValueError(f"attention_probs: {name} needs shape (..., length, features), got {tuple(t.shape)}")
    if t.ndim == 2:
        return t[None].float()
    picked = t[0 if t.shape[0] == 1 else sample]
    return picked.reshape(-1, *picked.shape[-2:]).float()


def _match_kv_heads(qs: Tensor, ks: Tensor, enable_gqa: bool) -> Tensor:
    hq, hk = qs.shape[0], ks.shape[0]
    if hk == hq:
        return ks
    if enable_gqa and hq % hk == 0:
        return ks.repeat_interleave(hq // hk, dim=0)
    if hk == 1:
        return ks.expand(hq, -1, -1)
    raise ValueError(
        f"attention_probs: {hq} query heads but {hk} key heads; pass enable_gqa=True "
        "for grouped-query attention (query heads must be a multiple of key heads)"
    )


def _sample_mask(mask: Tensor, q_ndim: int, n_head_axes: int, sample: int) -> Tensor:
    """One sample's mask, with exactly n_head_axes + 2 axes (size 1 where it broadcasts)."""
    if q_ndim >= 3 and mask.ndim == q_ndim:
        mask = mask[0 if mask.shape[0] == 1 else sample]
    missing = n_head_axes + 2 - mask.ndim
    if missing < 0:
        raise ValueError(f"attention_probs: attn_mask of shape {tuple(mask.shape)} has more axes than q")
    return mask.reshape((1,) * missing + tuple(mask.shape))


def _mask_rows(mask: Tensor, head_shape: tuple[int, ...], r0: int, r1: int) -> Tensor:
    """Rows r0:r1 of the mask, shaped to broadcast against (heads, rows, S)."""
    if mask.shape[-2] != 1:
        mask = mask[..., r0:r1, :]
    tail = tuple(mask.shape[-2:])
    if all(d == 1 for d in mask.shape[:-2]):
        return mask.reshape((1, *tail))
    return mask.expand(*head_shape, *tail).reshape(-1, *tail)


def _apply_mask(scores: Tensor, mask: Tensor) -> Tensor:
    if mask.dtype == torch.bool:
        return scores.masked_fill_(~mask, _NEG_INF)
    return scores.add_(mask.to(scores.dtype))


def _safe_softmax(scores: Tensor) -> Tensor:
    probs = torch.softmax(scores, dim=-1)
    return probs.masked_fill_(scores.amax(-1, keepdim=True) == _NEG_INF, 0.0)


def _pool_factor(length: int, max_exact: int) -> int:
    if max_exact < 1:
        raise ValueError(f"max_exact={max_exact}; pass max_exact >= 1")
    return 1 if length <= max_exact else -(-length // max_exact)


def _block_rows(block: int | None, heads: int, k_len: int, pq: int) -> int:
    if block is None:
        block = max(1, _BLOCK_ELEMENTS // max(1, heads * k_len))
    if block < 1:
        raise ValueError(f"block={block}; pass block >= 1 (query rows per step) or None")
    return max(pq, block // pq * pq)


def _block_sizes(length: int, factor: int) -> Tensor:
    sizes = torch.full((-(-length // factor),), float(factor))
    sizes[-1] = length - factor * (len(sizes) - 1)
    return sizes


def _pool(p: Tensor, pq: int, pk: int) -> Tensor:
    """Block means of p (heads, rows, S) over pq rows x pk keys; short last blocks average themselves."""
    heads, rows, keys = p.shape
    if pk > 1:
        nk = -(-keys // pk)
        p = F.pad(p, (0, nk * pk - keys)).view(heads, rows, nk, pk).sum(-1)
        p = p / _block_sizes(keys, pk).to(p.device)
    if pq > 1:
        nq = -(-rows // pq)
        p = F.pad(p, (0, 0, 0, nq * pq - rows)).view(heads, nq, pq, -1).sum(2)
        p = p / _block_sizes(rows, pq).to(p.device)[:, None]
    return p


def _make_map(
    weights: Tensor, q_len: int, k_len: int, pool: tuple[int, int], source: str, causal: bool
) -> AttentionMap:
    array = weights.detach().to(device="cpu", dtype=torch.float32, copy=True).numpy()
    array.setflags(write=False)
    return AttentionMap(array, int(q_len), int(k_len), pool, source, causal)


def _map_from_probs(probs: Tensor, sample: int, max_exact: int) -> AttentionMap:
    """An AttentionMap of probabilities the model already computed (the softmax path)."""
    _check_sample(sample, probs.shape[0])
    with torch.no_grad():
        ps = _sample_heads(probs, sample, "softmax output")
        heads, q_len, k_len = ps.shape
        pq, pk = _pool_factor(q_len, max_exact), _pool_factor(k_len, max_exact)
        if pq == pk == 1:
            return _make_map(ps, q_len, k_len, (1, 1), "softmax", False)
        rows = _block_rows(None, heads, k_len, pq)
        parts = [_pool(ps[:, r0 : r0 + rows], pq, pk) for r0 in range(0, q_len, rows)]
        return _make_map(torch.cat(parts, dim=1), q_len, k_len, (pq, pk), "softmax", False)


# ------------------------------------------------------------------ nn.MultiheadAttention


_MHA_SIGNATURE = inspect.signature(F.multi_head_attention_forward)


def _mha_float_mask(mask: Tensor | None) -> Tensor | None:
    """MHA's convention, made additive: bool True = masked out (-inf), float = added as is."""
    if mask is None:
        return None
    if mask.dtype == torch.bool:
        return torch.zeros(mask.shape, device=mask.device).masked_fill_(mask, _NEG_INF)
    return mask.float()


def _mha_map(args: tuple, kwargs: dict, sample: int, max_exact: int) -> AttentionMap:
    """The weights ``need_weights=True, average_attn_weights=False`` would return, for one sample."""
    bound = _MHA_SIGNATURE.bind(*args, **kwargs)
    bound.apply_defaults()
    a = bound.arguments
    query, key, kpm, heads = a["query"], a["key"], a["key_padding_mask"], a["num_heads"]
    if query.dim() == 2:  # unbatched (L, E)
        query, key, kpm = query[:, None], key[:, None], None if kpm is None else kpm[None]
    q_len, batch, embed = query.shape
    _check_sample(sample, batch)
    head_dim = embed // heads
    if a["use_separate_proj_weight"]:
        wq, wk = a["q_proj_weight"], a["k_proj_weight"]
    else:
        wq, wk = a["in_proj_weight"][:embed], a["in_proj_weight"][embed : 2 * embed]
    bias = a["in_proj_bias"]
    bq, bk = (None, None) if bias is None else (bias[:embed], bias[embed : 2 * embed])
    q = F.linear(query[:, sample], wq, bq).view(q_len, heads, head_dim).transpose(0, 1)
    if a["static_k"] is not None:
        k = a["static_k"][sample * heads : (sample + 1) * heads]
    else:
        k = F.linear(key[:, sample], wk, bk)
        if a["bias_k"] is not None:
            k = torch.cat([k, a["bias_k"].reshape(1, embed)])
        k = k.view(-1, heads, head_dim).transpose(0, 1)
    if a["add_zero_attn"]:
        k = torch.cat([k, k.new_zeros(heads, 1, head_dim)], dim=1)
    causal = bool(a["is_causal"]) and kpm is None and not a["need_weights"]
    mask = None if causal else _mha_mask(a["attn_mask"], kpm, sample, heads, k.shape[1])
    m = attention_probs(q[None], k[None], attn_mask=mask, is_causal=causal, sample=0, max_exact=max_exact)
    return replace(m, source="mha", causal=bool(a["is_causal"]))


def _mha_mask(
    attn_mask: Tensor | None, kpm: Tensor | None, sample: int, heads: int, k_len: int
) -> Tensor | None:
    """One sample's additive MHA mask, (L, S) or (heads, L, S), padded with 0 for bias_k / zero-attn keys."""
    mask, pad = _mha_float_mask(attn_mask), _mha_float_mask(kpm)
    if mask is not None and mask.dim() == 3:
        mask = mask[sample * heads : (sample + 1) * heads]
    if pad is not None:
        pad = pad[sample][None, :]
        mask = pad if mask is None else mask + pad
    if mask is not None and mask.shape[-1] < k_len:
        mask = F.pad(mask, (0, k_len - mask.shape[-1]))
    return mask


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
    rec._store(
        rec._current_call(),
        attention_probs(
            _arg(args, kwargs, 0, "query"),
            _arg(args, kwargs, 1, "key"),
            attn_mask=_arg(args, kwargs, 3, "attn_mask"),
            is_causal=bool(_arg(args, kwargs, 5, "is_causal", False)),
            scale=_arg(args, kwargs, 6, "scale"),
            enable_gqa=bool(_arg(args, kwargs, 7, "enable_gqa", False)),
            sample=rec.sample,
            max_exact=rec.max_exact,
        ),
    )


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
            rec._tags.set(result, _SCORES)

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
    rec._tags.set(result, pending)


_ELEMENTWISE = ("mul", "div", "add", "sub", "true_divide", "masked_fill", "where", "tanh", "clamp", "dropout")
_OPERATORS = ("__mul__", "__rmul__", "__truediv__", "__add__", "__radd__", "__sub__", "__rsub__")
_CASTS = ("to", "type", "float", "half", "bfloat16", "double", "contiguous")


@_register(*_ops(torch.Tensor, *_ELEMENTWISE, *_OPERATORS, *_CASTS), *_ops(torch, *_ELEMENTWISE), F.dropout)
def _on_passthrough(rec: AttentionRecorder, args: tuple, kwargs: dict, result: Any) -> None:
    if rec._tags and isinstance(result, Tensor) and rec._tags.get(result) is None:
        tag = rec._tags.first(args, kwargs)
        if tag is not None:
            rec._tags.set(result, tag)


@_register(*_ops(torch.Tensor, "view", "reshape"), torch.reshape)
def _on_reshape(rec: AttentionRecorder, args: tuple, kwargs: dict, result: Any) -> None:
    if not rec._tags or not isinstance(result, Tensor):
        return
    x = _arg(args, kwargs, 0, "input")
    tag = rec._tags.get(x)
    if tag is not None and result is not x and result.ndim and x.ndim and result.shape[-1] == x.shape[-1]:
        rec._tags.set(result, tag)


INTERESTING: frozenset = frozenset(_HANDLERS)
"""Every func :meth:`AttentionRecorder.observe` acts on; callers skip all others with one lookup."""


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
    result)`` when ``func in AttentionRecorder.INTERESTING``; it calls from inside
    ``__torch_function__``, so the maps' own torch ops are not traced. ``current_call()`` names
    the module call an op belongs to. ``maps[call]`` lists maps in the order they were made;
    ``errors[call]`` lists why a map could not be made (``observe`` never raises, so a failing
    map never aborts the forward pass). Call :meth:`forget` when the pass ends.
    """

    INTERESTING: frozenset = INTERESTING
    __slots__ = ("maps", "errors", "sample", "max_exact", "_current_call", "_tags")

    def __init__(self, current_call: Callable[[], int], *, sample: int = 0, max_exact: int = 512) -> None:
        if sample < 0:
            raise ValueError(f"sample={sample}; pass the index of a batch sample (>= 0)")
        if max_exact < 1:
            raise ValueError(f"max_exact={max_exact}; pass max_exact >= 1 (longest axis kept unpooled)")
        self.maps: dict[int, list[AttentionMap]] = {}
        self.errors: dict[int, list[str]] = {}
        self.sample, self.max_exact = sample, max_exact
        self._current_call = current_call
        self._tags = _Provenance()

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

    def forget(self) -> None:
        """Drop the tensor provenance table (at the end of a pass); maps and errors stay."""
        self._tags.clear()

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
        if func in INTERESTING:
            self.recorder.observe(func, args, kwargs, result)
        return result

    def __exit__(self, exc_type: Any, exc_value: Any, traceback: Any) -> Any:
        try:
            return super().__exit__(exc_type, exc_value, traceback)
        finally:
            self.recorder.forget()
