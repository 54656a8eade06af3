"""How a retained reduction reaches the host: every part copied, float16 parts under one scale.

>>> import torch
>>> parts, scales = store_host({"first": (torch.arange(3.0), "f32", (3,))}, None)
>>> parts["first"].tolist(), scales
([0.0, 1.0, 2.0], {})

A *plan* names each part: ``name -> (tensor or numpy array, storage, shape)``. Float16
parts are divided by one power of two (:func:`scale_for`) when float16 would not hold their
values well; ``Retained.values`` multiplies it back.

* CPU (:func:`store_host`): float16 parts go through one conversion, the others through
  one copy each; numpy arrays a plan computed are its own and are kept as they are.
* Other devices (:func:`store_device`): the parts are converted there, packed as bytes and
  moved in one transfer.
"""

from __future__ import annotations

import math
from typing import Literal

import numpy as np
import torch

__all__ = ["BYTES", "DTYPES", "NUMPY_READS", "Plan", "Storage", "scale_for", "store_device",
           "store_host"]  # fmt: skip

Storage = Literal["f16", "f32", "f64", "i64"]
Plan = dict[str, tuple["torch.Tensor | np.ndarray", Storage, tuple[int, ...]]]
BYTES: dict[str, int] = {"f16": 2, "f32": 4, "f64": 8, "i64": 8}
_F16_MAX_EXP = 15  # float16 parts are scaled by a power of two so |x| < 2**15 < 65504

DTYPES: dict[str, tuple[torch.dtype, type]] = {
    "i64": (torch.int64, np.int64),
    "f64": (torch.float64, np.float64),
    "f32": (torch.float32, np.float32),
    "f16": (torch.float16, np.float16),
}  # in falling item size, so that every part of the packed bytes is aligned


def scale_for(peak: float) -> float:
    """The power of two that puts ``peak`` (max finite |x|) in [2**14, 2**15), or 1 when
    float16 already holds it well (2**-10 <= peak < 2**15) or there is nothing to scale."""
    if not math.isfinite(peak) or peak == 0.0 or 2.0**-10 <= peak < 2.0**_F16_MAX_EXP:
        return 1.0
    return math.ldexp(1.0, math.frexp(peak)[1] - _F16_MAX_EXP)


def _peak(flat: torch.Tensor) -> float:
    """Max finite |x| of a 1-D float tensor (0 when none)."""
    lo, hi = torch.stack(torch.aminmax(flat)).tolist()
    if math.isfinite(lo) and math.isfinite(hi):
        return max(-lo, hi)
    return torch.nan_to_num(flat.abs(), nan=0.0, posinf=0.0, neginf=0.0).max().item()


NUMPY_READS = frozenset((torch.float64, torch.float32, torch.float16, torch.int64, torch.int32,
                          torch.int16, torch.int8, torch.uint8, torch.bool))


def store_host(plan: Plan, peak: float | None) -> tuple[dict, dict]:
    """CPU: the float16 parts go through one cat and one conversion; every kept array is a
    copy (cat, a conversion or ``np.array``) or one the plan computed in numpy, never a view
    of the activation."""
    parts: dict[str, np.ndarray] = {}
    scales: dict[str, float] = {}
    halves = [name for name, (_, storage, _) in plan.items() if storage == "f16"]
    if halves:
        parts_16 = [plan[name][0] for name in halves]
        joined = parts_16[0] if len(parts_16) == 1 else torch.cat(parts_16)  # (copied below)
        scale = scale_for(_peak(joined) if peak is None else peak)
        if scale != 1.0:
            joined = joined * (1.0 / scale)
        host = joined.to(torch.float16, copy=True).numpy()
        host.setflags(write=False)
        offset = 0
        for name in halves:
            shape = plan[name][2]
            parts[name] = host[offset : offset + math.prod(shape)].reshape(shape)
            offset += math.prod(shape)
            if scale != 1.0:
                scales[name] = scale
    for name, (value, storage, shape) in plan.items():
        if storage != "f16":
            np_dtype = DTYPES[storage][1]
            if isinstance(value, torch.Tensor):  # may share memory with the activation
                kept = np.array(value.numpy(), dtype=np_dtype)  # numpy-readable dtypes: a copy
            else:  # numpy parts are arrays the plan computed: its own, kept as they are
                kept = np.asarray(value, dtype=np_dtype)
            parts[name] = kept.reshape(shape)
            parts[name].setflags(write=False)
    return {name: parts[name] for name in plan}, scales


def _half_scaled(t: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """float16 of ``t / scale`` with ``scale`` a power of two putting max |finite| < 2**15."""
    peak = torch.nan_to_num(t.abs(), nan=0.0, posinf=0.0, neginf=0.0).amax()
    exponent = torch.frexp(peak.to(torch.float32)).exponent - _F16_MAX_EXP
    scale = torch.where(peak > 0, torch.ldexp(torch.ones_like(peak), exponent), 1.0)
    return (t / scale).to(torch.float16), scale.to(torch.float32).reshape(1)


def store_device(plan: Plan, peak: float | None) -> tuple[dict, dict]:
    """Other devices: convert the parts there, pack all as bytes, move them in one transfer
    (no sync before it).  With ``peak`` (known on the host from the summary) the parts of
    one storage type are joined and converted together, and the float16 ones share its
    scale: few launches, which is what a device run pays for.  Without, each float16 part
    finds its own scale on the device."""
    shared = None if peak is None else scale_for(peak)
    by_storage: dict[str, list[str]] = {}
    for name, (_, storage, _) in plan.items():
        by_storage.setdefault(storage, []).append(name)
    order: list[str] = []
    pieces: list[torch.Tensor] = []
    scales: list[tuple[str, torch.Tensor]] = []
    for storage, (dtype, _) in DTYPES.items():  # falling item size: every part aligned
        names = by_storage.get(storage, [])
        if storage == "f16" and shared is None:
            for name in names:
                half, scale = _half_scaled(plan[name][0])
                pieces.append(half.reshape(-1))
                scales.append((name, scale))
        elif names:
            flat = [plan[name][0].reshape(-1) for name in names]
            joined = flat[0] if len(flat) == 1 else torch.cat(flat)
            if storage == "f16" and shared != 1.0:
                joined = joined * (1.0 / shared)
            pieces.append(joined.to(dtype))
        order += names
    raw = [p.view(torch.uint8) for p in pieces] + [s.view(torch.uint8) for _, s in scales]
    host = torch.cat(raw).cpu().numpy()  # the one device -> host transfer
    host.setflags(write=False)
    parts: dict[str, np.ndarray] = {}
    offset = 0
    for name in order:
        storage, shape = plan[name][1], plan[name][2]
        count = math.prod(shape)
        parts[name] = np.frombuffer(host, DTYPES[storage][1], count, offset).reshape(shape)
        offset += count * BYTES[storage]
    scale_values = np.frombuffer(host, np.float32, len(scales), offset) if scales else ()
    kept_scales = {name: float(v) for (name, _), v in zip(scales, scale_values) if v != 1.0}
    if shared is not None and shared != 1.0:
        kept_scales = {name: shared for name in by_storage.get("f16", ())}
    return {name: parts[name] for name in plan}, kept_scales


