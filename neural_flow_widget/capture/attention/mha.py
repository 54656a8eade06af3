"""Attention maps of ``F.multi_head_attention_forward`` (what ``nn.MultiheadAttention`` calls):
the per-head weights that ``need_weights=True, average_attn_weights=False`` would have
returned, for one batch sample, made from the call's arguments.
"""

from __future__ import annotations

import inspect

import torch
import torch.nn.functional as F
from torch import Tensor

from .maps import AttentionMap, DeviceMap, relabel
from .probabilities import attention_probs, check_sample

_NEG_INF = float("-inf")


# ------------------------------------------------------------------ nn.MultiheadAttention


_MHA_SIGNATURE = inspect.signature(F.multi_head_attention_forward)


def _mha_float_mask(mask: Tensor | None) -> Tensor | None:
    """MHA's convention, made additive: bool True = masked out (-inf), float = added as is."""
    if mask is None:
        return None
    if mask.dtype == torch.bool:
        return torch.zeros(mask.shape, device=mask.device).masked_fill_(mask, _NEG_INF)
    return mask.float()


def mha_map(args: tuple, kwargs: dict, sample: int, max_exact: int) -> AttentionMap | DeviceMap:
    """The weights ``need_weights=True, average_attn_weights=False`` would return, for one
    sample."""
    bound = _MHA_SIGNATURE.bind(*args, **kwargs)
    bound.apply_defaults()
    a = bound.arguments
    query, key, kpm, heads = a["query"], a["key"], a["key_padding_mask"], a["num_heads"]
    if query.dim() == 2:  # unbatched (L, E)
        query, key, kpm = query[:, None], key[:, None], None if kpm is None else kpm[None]
    q_len, batch, embed = query.shape
    check_sample(sample, batch)
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
    m = attention_probs(
        q[None], k[None], attn_mask=mask, is_causal=causal, sample=0, max_exact=max_exact
    )
    return relabel(m, "mha", bool(a["is_causal"]))


def _mha_mask(
    attn_mask: Tensor | None, kpm: Tensor | None, sample: int, heads: int, k_len: int
) -> Tensor | None:
    """One sample's additive MHA mask, (L, S) or (heads, L, S), padded with 0 for bias_k /
    zero-attn keys."""
    mask, pad = _mha_float_mask(attn_mask), _mha_float_mask(kpm)
    if mask is not None and mask.dim() == 3:
        mask = mask[sample * heads : (sample + 1) * heads]
    if pad is not None:
        pad = pad[sample][None, :]
        mask = pad if mask is None else mask + pad
    if mask is not None and mask.shape[-1] < k_len:
        mask = F.pad(mask, (0, k_len - mask.shape[-1]))
    return mask
