"""Attention probabilities from the arguments of an attention op, for one batch sample.

:func:`attention_probs` reproduces ``softmax(Q Kᵀ · scale + mask)`` exactly as
``F.scaled_dot_product_attention`` defines it, in query blocks so that long sequences never
materialise every head's full map, and block-mean pooled beyond ``max_exact`` positions;
:mod:`.mha` does the same for ``F.multi_head_attention_forward``'s arguments.

    >>> import torch
    >>> m = attention_probs(torch.randn(1, 2, 5, 8), torch.randn(1, 2, 5, 8), is_causal=True)
    >>> m.weights.shape, m.pool
    ((2, 5, 5), (1, 1))
"""

from __future__ import annotations

import math
from typing import NamedTuple

import torch
import torch.nn.functional as F
from torch import Tensor

from .maps import AttentionMap, DeviceMap, block_sizes, make_map

__all__ = [
    "PendingMap",
    "SdpaInputs",
    "attention_probs",
    "check_sample",
    "map_from_probs",
    "pool_factor",
    "sdpa_inputs",
    "sdpa_map",
]


_BLOCK_ELEMENTS = 1 << 22  # scores per query block, all heads together (16 MiB of float32)


_NEG_INF = float("-inf")


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
) -> AttentionMap | DeviceMap:
    """softmax(q kᵀ · scale + mask) for batch ``sample``, as ``F.scaled_dot_product_attention``
    sees it.

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
    return sdpa_map(
        sdpa_inputs(
            q,
            k,
            attn_mask=attn_mask,
            is_causal=is_causal,
            scale=scale,
            enable_gqa=enable_gqa,
            sample=sample,
            max_exact=max_exact,
            block=block,
        )
    )


class SdpaInputs(NamedTuple):
    """What :func:`sdpa_map` needs of one SDPA call, for one sample: its query and key heads,
    mask rows and settings (see :func:`sdpa_inputs`)."""

    qs: Tensor  # (heads, L, E) float32
    ks: Tensor  # (kv heads, S, E) float32
    mask: Tensor | None  # the sample's mask, broadcastable to (*head_shape, L, S)
    head_shape: tuple[int, ...]
    is_causal: bool
    enable_gqa: bool
    factor: float
    pool: tuple[int, int]
    rows: int  # query rows per block
    packed: int = 1  # query heads per query row (packed grouped-query heads; 1: none)

    @property
    def copy_nbytes(self) -> int:
        """Bytes that :meth:`copied` holds."""
        held = [self.qs, self.ks] + ([_compact(self.mask)] if self.mask is not None else [])
        return sum(t.numel() * t.element_size() for t in held)

    @property
    def map_nbytes(self) -> int:
        """Bytes of the float32 map they give."""
        heads, q_len, _ = self.qs.shape
        k_len = self.ks.shape[1]
        return 4 * heads * -(-q_len // self.pool[0]) * -(-k_len // self.pool[1])

    def copied(self) -> SdpaInputs:
        """The same inputs in tensors of their own, none of them the model's; a mask that
        broadcasts keeps one copy of what repeats."""
        mask = None if self.mask is None else _compact(self.mask).clone()
        return self._replace(qs=self.qs.clone(), ks=self.ks.clone(), mask=mask)


def _compact(t: Tensor) -> Tensor:
    """``t`` with every broadcast (stride 0) axis cut to length 1: the same values wherever
    it broadcasts, without repeating them."""
    for axis, (size, stride) in enumerate(zip(t.shape, t.stride())):
        if stride == 0 and size > 1:
            t = t.narrow(axis, 0, 1)
    return t


def sdpa_inputs(
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
    packed: int = 1,
) -> SdpaInputs:
    """The checked inputs of :func:`attention_probs` for one sample (views of the arguments);
    ``packed``: query heads per query row (see :class:`SdpaInputs`)."""
    if is_causal and attn_mask is not None:
        raise ValueError(
            "attention_probs: pass attn_mask or is_causal, not both "
            "(F.scaled_dot_product_attention rejects the pair too)"
        )
    check_sample(sample, max(q.shape[0], k.shape[0]) if q.ndim >= 3 else 1)
    with torch.no_grad():
        qs, ks = _sample_heads(q, sample, "q"), _sample_heads(k, sample, "k")
        _check_kv_heads(qs.shape[0], ks.shape[0], enable_gqa)
        heads, q_len, dim = qs.shape
        k_len = ks.shape[1]
        head_shape = tuple(q.shape[1:-2]) if q.ndim >= 3 else ()
        mask = (
            None if attn_mask is None else _sample_mask(attn_mask, q.ndim, len(head_shape), sample)
        )
        pq, pk = pool_factor(q_len, max_exact), pool_factor(k_len, max_exact)
        rows = _block_rows(block, heads, k_len, pq)
        factor = 1.0 / math.sqrt(dim) if scale is None else float(scale)
        return SdpaInputs(
            qs,
            ks,
            mask,
            head_shape,
            bool(is_causal),
            bool(enable_gqa),
            factor,
            (pq, pk),
            rows,
            packed if packed > 1 and q_len == packed else 1,
        )


def sdpa_map(
    inputs: SdpaInputs, window: tuple[int, int, int, int] | None = None
) -> AttentionMap | DeviceMap:
    """softmax(q kᵀ · scale + mask) of :func:`sdpa_inputs`, block by block (see
    :func:`attention_probs`). ``window`` = (q0, q1, k0, k1): only those rows and columns,
    unpooled (each row still normalised over all its keys); the map's lengths are then the
    window's."""
    qs, ks, mask, head_shape, is_causal, enable_gqa, factor, (pq, pk), rows, packed = inputs
    if window is not None and (pq, pk, packed) != (1, 1, 1):
        raise ValueError("sdpa_map: a window is made from unpooled, unpacked inputs")
    with torch.no_grad():
        ks = _match_kv_heads(qs, ks, enable_gqa)
        q_len, k_len = qs.shape[1], ks.shape[1]
        q0, q1, k0, k1 = (0, q_len, 0, k_len) if window is None else window
        kt = ks.transpose(1, 2)
        blocks = []
        pooled_keys = -(-k_len // pk)
        for r0 in range(q0, q1, rows):
            r1 = min(r0 + rows, q1)
            # causal (top-left aligned): rows r0..r1 see keys < r1 only, so the keys beyond
            # (whole key blocks of zeros) are neither multiplied nor normalised
            keys = min(k_len, -(-r1 // pk) * pk) if is_causal and mask is None else k_len
            # one call: the product, scaled, plus the causal bias (row i always sees key 0,
            # so no row is blank) or nothing
            bias = _causal_bias(r0, r1, keys, kt.device) if is_causal else _zero(kt.device)
            scores = torch.baddbmm(bias, qs[:, r0:r1], kt[..., :keys], alpha=factor)
            blank = None  # rows that every key is masked out of: softmax gives NaN there
            if mask is not None:
                rows_mask = _mask_rows(mask, head_shape, r0, r1)
                scores, blank = _apply_mask(scores, rows_mask)
            probs = torch.softmax(scores, dim=-1)
            if blank is not None:  # (asking whether any row is blank would wait for a GPU)
                probs.masked_fill_(blank, 0.0)
            if window is not None:  # (fewer keys than k1: those beyond are zeros)
                block = probs[..., k0:k1]
                blocks.append(F.pad(block, (0, k1 - k0 - block.shape[-1])))
                continue
            block = _pool(probs, pq, pk)  # (fewer keys: whole key blocks, as in the full rows)
            if block.shape[-1] < pooled_keys:
                block = F.pad(block, (0, pooled_keys - block.shape[-1]))
            blocks.append(block)
        out = blocks[0] if len(blocks) == 1 else torch.cat(blocks, dim=1)
        if window is not None:
            return make_map(out, q1 - q0, k1 - k0, (1, 1), "sdpa", is_causal, owned=True)
        if packed > 1:  # back to the model's own heads: (H_kv, rows, S) -> (H, 1, S)
            out, q_len = out.reshape(-1, 1, out.shape[-1]), 1
        return make_map(out, q_len, k_len, (pq, pk), "sdpa", is_causal, owned=True)


class PendingMap:
    """An SDPA call's map made on first :meth:`resolve` (and kept), from copies of its inputs
    taken while they were live: in the traced run only the copies are made, which costs far
    less than the scores, the softmax and a map of its own (what a capture of a deep
    transformer spent most of its attention time on).  Gives exactly what
    :func:`attention_probs` gives for the same call."""

    __slots__ = ("_inputs", "_map")

    def __init__(self, inputs: SdpaInputs) -> None:
        self._inputs: SdpaInputs | None = inputs
        self._map: AttentionMap | None = None

    def held_bytes(self) -> int:
        """Bytes it holds, now or once made: the input copies or the map, the larger."""
        if self._map is not None:
            return int(self._map.weights.nbytes)
        assert self._inputs is not None
        return max(self._inputs.copy_nbytes, self._inputs.map_nbytes)

    def resolve(self) -> AttentionMap:
        if self._map is None:
            assert self._inputs is not None
            made = sdpa_map(self._inputs).resolve()  # (the copies are on the CPU: made here)
            self._map, self._inputs = made, None
        return self._map


def check_sample(sample: int, batch: int) -> None:
    if not 0 <= sample < batch:
        raise IndexError(
            f"sample={sample} but the batch holds {batch} samples; pass sample= a value in "
            f"0..{batch - 1}"
        )


def _sample_heads(t: Tensor, sample: int, name: str) -> Tensor:
    """(N, ..., L, E) -> (heads, L, E) float32 for one sample; a batch of 1 broadcasts."""
    if t.ndim < 2:
        raise ValueError(
            f"attention_probs: {name} needs shape (..., length, features), got {tuple(t.shape)}"
        )
    if t.ndim == 2:
        return t[None].float()
    picked = t[0 if t.shape[0] == 1 else sample]
    return picked.reshape(-1, *picked.shape[-2:]).float()


def _match_kv_heads(qs: Tensor, ks: Tensor, enable_gqa: bool) -> Tensor:
    hq, hk = qs.shape[0], ks.shape[0]
    _check_kv_heads(hq, hk, enable_gqa)
    if hk == hq:
        return ks
    if enable_gqa and hq % hk == 0:
        return ks.repeat_interleave(hq // hk, dim=0)
    return ks.expand(hq, -1, -1)  # one kv head for all


def _check_kv_heads(hq: int, hk: int, enable_gqa: bool) -> None:
    if hk == hq or (enable_gqa and hq % hk == 0) or hk == 1:
        return
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
        raise ValueError(
            f"attention_probs: attn_mask of shape {tuple(mask.shape)} has more axes than q"
        )
    return mask.reshape((1,) * missing + tuple(mask.shape))


def _mask_rows(mask: Tensor, head_shape: tuple[int, ...], r0: int, r1: int) -> Tensor:
    """Rows r0:r1 of the mask, shaped to broadcast against (heads, rows, S)."""
    if mask.shape[-2] != 1:
        mask = mask[..., r0:r1, :]
    tail = tuple(mask.shape[-2:])
    if all(d == 1 for d in mask.shape[:-2]):
        return mask.reshape((1, *tail))
    return mask.expand(*head_shape, *tail).reshape(-1, *tail)


def _apply_mask(scores: Tensor, mask: Tensor) -> tuple[Tensor, Tensor]:
    """Scores with the mask applied, and which rows it blanks out entirely (a bool mask
    broadcasting against the scores, from the mask alone: far smaller than the scores)."""
    if mask.dtype == torch.bool:  # made additive first: a broadcast add beats masked_fill
        bias = torch.zeros(mask.shape, device=mask.device).masked_fill_(~mask, _NEG_INF)
        return scores.add_(bias), ~mask.any(-1, keepdim=True)
    return scores.add_(mask.to(scores.dtype)), (mask == _NEG_INF).all(-1, keepdim=True)


_CAUSAL: dict[tuple, Tensor] = {}  # small additive causal masks by rows, keys and device


_CAUSAL_CACHED = 1 << 18  # largest mask kept (1 MiB): a short sequence's, not a long one's


def _zero(device: torch.device) -> Tensor:
    """A float32 0-d zero on ``device`` (cached): the bias of scores without a causal mask."""
    zero = _ZEROS.get(device)
    if zero is None:
        zero = _ZEROS[device] = torch.zeros((), device=device)
    return zero


_ZEROS: dict[torch.device, Tensor] = {}


def _causal_bias(r0: int, r1: int, k_len: int, device: torch.device) -> Tensor:
    """(r1 - r0, k_len) float32: -inf where key j > query row i, else 0 (cached when small:
    every layer of a model asks for the same one)."""
    key = (r0, r1, k_len, device)
    bias = _CAUSAL.get(key)
    if bias is None:
        rows = torch.arange(r0, r1, device=device)[:, None]
        later = rows < torch.arange(k_len, device=device)
        bias = torch.zeros(later.shape, device=device).masked_fill_(later, _NEG_INF)
        if (r1 - r0) * k_len <= _CAUSAL_CACHED:
            if len(_CAUSAL) >= 16:
                _CAUSAL.clear()
            _CAUSAL[key] = bias
    return bias


def pool_factor(length: int, max_exact: int) -> int:
    if max_exact < 1:
        raise ValueError(f"max_exact={max_exact}; pass max_exact >= 1")
    return 1 if length <= max_exact else -(-length // max_exact)


def _block_rows(block: int | None, heads: int, k_len: int, pq: int) -> int:
    if block is None:
        block = max(1, _BLOCK_ELEMENTS // max(1, heads * k_len))
    if block < 1:
        raise ValueError(f"block={block}; pass block >= 1 (query rows per step) or None")
    return max(pq, block // pq * pq)


def _pool(p: Tensor, pq: int, pk: int) -> Tensor:
    """Block means of p (heads, rows, S) over pq rows x pk keys; short last blocks average
    themselves."""
    heads, rows, keys = p.shape
    if pk > 1:
        nk = -(-keys // pk)
        p = F.pad(p, (0, nk * pk - keys)).view(heads, rows, nk, pk).sum(-1)
        p = p / block_sizes(keys, pk, p.device)
    if pq > 1:
        nq = -(-rows // pq)
        p = F.pad(p, (0, 0, 0, nq * pq - rows)).view(heads, nq, pq, -1).sum(2)
        p = p / block_sizes(rows, pq, p.device)[:, None]
    return p


def map_from_probs(probs: Tensor, sample: int, max_exact: int) -> AttentionMap | DeviceMap:
    """An AttentionMap of probabilities the model already computed (the softmax path)."""
    check_sample(sample, probs.shape[0])
    with torch.no_grad():
        ps = _sample_heads(probs, sample, "softmax output")
        heads, q_len, k_len = ps.shape
        pq, pk = pool_factor(q_len, max_exact), pool_factor(k_len, max_exact)
        if pq == pk == 1:
            return make_map(ps, q_len, k_len, (1, 1), "softmax", False)
        rows = _block_rows(None, heads, k_len, pq)
        parts = [_pool(ps[:, r0 : r0 + rows], pq, pk) for r0 in range(0, q_len, rows)]
        return make_map(torch.cat(parts, dim=1), q_len, k_len, (pq, pk), "softmax", False)
