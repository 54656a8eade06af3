"""What the two ends of a model mean: the picture an input is, what an output predicts.

>>> import torch
>>> m = read_output(torch.tensor([[2.0, 0.0, -1.0]]), "logits", sample=0).result()
>>> (m.kind, [int(i) for i in m.indices], [round(float(p), 3) for p in m.data])
('probabilities', [0, 1, 2], [0.844, 0.114, 0.042])

A stage's views show its activation as numbers; a model's input and output also have a
reading a person would name: the image it was given, the token ids, the mask, the classes
or the next token it predicts. Each reading is a guess from the shape, the dtype and the
name, said in its note; the plain views stay beside it. For one batch sample:

* input, float or uint8, ``(N, 1|3|4, H, W)`` or ``(N, H, W)`` -> ``"image"``: the sample
  as RGB (grey for one channel; a fourth channel is dropped), each channel scaled from its
  0.5-99.5 percentile range, pooled to at most 256 px a side.
* input, integer, ``(N, T)`` -> ``"ids"``: the sample's ids (at most 4096).
* output, float ``(N, 1, H, W)`` -> ``"mask"``: the sigmoid (values already in [0, 1]
  are taken as probabilities).
* output, float ``(N, C, H, W)``, 2 <= C <= 256 -> ``"segmentation"``: the softmax over C,
  pooled, and its winning class per pixel.
* output, float ``(N, K)``, K >= 2 -> ``"probabilities"``: the softmax (rows that are
  already probabilities are kept), its 10 largest with their class indices.
* output, float ``(N, T, V)`` whose name says logits (or the model's only output, V >= 100)
  -> ``"next token"``: the softmax at the last position, its 10 largest with their ids.

The reductions run on the tensor's own device when read (inputs before the forward, outputs
after it) and wait for nothing; :meth:`PendingMeaning.result` brings the few small results
to the host after the pass, where the choices that depend on values are made.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import torch
import torch.nn.functional as F

from .pooling import fit

__all__ = ["KINDS", "Meaning", "PendingMeaning", "read_input", "read_output"]

KINDS = ("image", "ids", "mask", "segmentation", "probabilities", "next token")
_SIDE, _IDS, _TOP, _CLASSES, _VOCAB = 256, 4096, 10, 256, 100


@dataclass(frozen=True, slots=True, eq=False)
class Meaning:
    """One reading of a model input or output, on the host.

    ``data`` by kind: ``image`` (h, w, 3) uint8 RGB; ``ids`` (T,) int64; ``mask`` (h, w)
    float32 probabilities; ``segmentation`` (h, w) uint8 winning class, with ``confidence``
    (h, w) float32 its probability; ``probabilities`` and ``next token`` (k,) float32
    probabilities, largest first, of the classes / ids in ``indices``.
    """

    kind: str
    data: np.ndarray
    note: str
    indices: np.ndarray | None = None
    confidence: np.ndarray | None = None
    classes: int = 0  # segmentation: the number of classes


class PendingMeaning:
    """A :class:`Meaning` whose arrays are still on the tensor's device: nothing here waits for
    it; :meth:`result` (after the pass) brings them over and ``finish`` makes the Meaning of
    them on the host."""

    __slots__ = ("_done", "_finish", "_tensors")

    def __init__(
        self, tensors: dict[str, torch.Tensor], finish: Callable[[dict[str, np.ndarray]], Meaning]
    ) -> None:
        self._tensors, self._finish = tensors, finish
        self._done: Meaning | None = None

    def result(self) -> Meaning:
        if self._done is None:
            self._done = self._finish({k: t.cpu().numpy() for k, t in self._tensors.items()})
            self._tensors = {}
        return self._done


def _sample(t: torch.Tensor, sample: int) -> torch.Tensor:
    return t[sample if sample < t.shape[0] else 0]


def _pool(maps: torch.Tensor) -> tuple[torch.Tensor, str]:
    """(C, H, W) float pooled to at most 256 a side, and how."""
    h, w = maps.shape[-2:]
    size = fit(h, w, _SIDE * _SIDE, _SIDE) or (1, 1)
    if size == (h, w):
        return maps, f"{h}x{w}"
    return F.adaptive_avg_pool2d(maps[None], size)[0], f"pooled {h}x{w} -> {size[0]}x{size[1]}"


def read_input(tensor: torch.Tensor, name: str, sample: int) -> PendingMeaning | None:
    """The reading of model input ``name`` (see the module doc), or None."""
    if tensor.is_meta or tensor.numel() == 0 or tensor.is_complex():
        return None
    shape = tuple(tensor.shape)
    if not tensor.is_floating_point() and tensor.dtype not in (torch.uint8, torch.bool):
        if len(shape) != 2:
            return None
        more = f" (the first {_IDS} of {shape[1]})" if shape[1] > _IDS else ""
        note = f"token ids of sample {sample}{more}"
        ids = _sample(tensor.detach(), sample)[:_IDS].to(torch.int64)
        return PendingMeaning({"ids": ids}, lambda a: Meaning("ids", a["ids"], note))
    if len(shape) == 4 and shape[1] in (1, 3, 4) and min(shape[2:]) >= 8:
        maps = _sample(tensor.detach(), sample)[:3].float()
    elif len(shape) == 3 and min(shape[1:]) >= 8 and tensor.dtype == torch.uint8:
        maps = _sample(tensor.detach(), sample)[None].float()
    else:
        return None
    maps, how = _pool(maps)
    channels = "grey" if maps.shape[0] == 1 else "channels 0-2 as RGB"
    note = f"the input image of sample {sample}: {channels}, each scaled from its 0.5-99.5 "
    note += f"percentile range; {how}"
    return PendingMeaning({"maps": maps}, lambda a: Meaning("image", _picture(a["maps"]), note))


def _picture(maps: np.ndarray) -> np.ndarray:
    """(C, h, w) floats -> (h, w, 3) uint8, each channel from its 0.5-99.5 percentile range."""
    rgb = np.zeros((3, *maps.shape[1:]), np.uint8)
    for c, plane in enumerate(maps):
        finite = plane[np.isfinite(plane)]
        if finite.size == 0:
            continue
        lo, hi = np.quantile(finite, [0.005, 0.995])
        scaled = np.clip((np.nan_to_num(plane, nan=lo) - lo) / max(hi - lo, 1e-12), 0, 1)
        rgb[c] = np.rint(scaled * 255)
    if maps.shape[0] == 1:
        rgb[1:] = rgb[0]
    return rgb.transpose(1, 2, 0).copy()


def read_output(tensor: torch.Tensor, name: str, sample: int) -> PendingMeaning | None:
    """The reading of model output ``name`` (see the module doc), or None."""
    if (
        tensor.is_meta
        or tensor.numel() == 0
        or not tensor.is_floating_point()
        or tensor.ndim not in (2, 3, 4)
    ):
        return None
    x = _sample(tensor.detach(), sample).float()
    shape = tuple(tensor.shape)
    if tensor.ndim == 4 and shape[1] == 1:
        return _mask(x)
    if tensor.ndim == 4 and 2 <= shape[1] <= _CLASSES:
        p, how = _pool(torch.softmax(x, dim=0))
        confidence, winner = p.max(dim=0)
        note = f"the winning class of {shape[1]} at each pixel (softmax over channels); {how}"

        def segmentation(a: dict[str, np.ndarray]) -> Meaning:
            return Meaning("segmentation", a["winner"], note, None, a["confidence"], shape[1])

        tensors = {"winner": winner.to(torch.uint8), "confidence": confidence}
        return PendingMeaning(tensors, segmentation)
    if tensor.ndim == 2 and shape[1] >= 2:
        return _top("probabilities", x, given=True)
    named = "logit" in name.lower()
    if (
        tensor.ndim == 3
        and shape[2] >= 2
        and (named or (name == "output:0" and shape[2] >= _VOCAB))
    ):
        return _top("next token", x[-1], given=False)
    return None


def _mask(x: torch.Tensor) -> PendingMeaning:
    """Sigmoid of (1, H, W) logits, or the values as they are when all lie in [0, 1] (both
    are kept: which one is decided on the host)."""
    logits, how = _pool(torch.sigmoid(x))
    given, _ = _pool(x)
    inside = ((x >= 0) & (x <= 1)).all()

    def mask(a: dict[str, np.ndarray]) -> Meaning:
        as_given = bool(a["inside"])
        what = "probabilities as given" if as_given else "sigmoid of the logits"
        data = (a["given"] if as_given else a["sigmoid"])[0]
        return Meaning("mask", data, f"the predicted mask: {what}; {how}")

    return PendingMeaning({"sigmoid": logits, "given": given, "inside": inside}, mask)


def _top(kind: str, x: torch.Tensor, given: bool) -> PendingMeaning:
    """The 10 most likely of a softmax over ``x`` (1-D); with ``given``, ``x`` itself when it
    already is a distribution (decided on the host)."""
    n, k = x.shape[0], min(_TOP, x.shape[0])
    soft = torch.topk(torch.softmax(x, dim=0), k)
    tensors = {"p": soft.values, "at": soft.indices}
    if given:
        raw = torch.topk(x, k)
        tensors |= {"raw": raw.values, "raw_at": raw.indices}
        tensors["is_p"] = (x >= 0).all() & ((x.sum() - 1).abs() < 1e-3)

    def top(a: dict[str, np.ndarray]) -> Meaning:
        as_given = given and bool(a["is_p"])
        if kind == "next token":
            note = f"softmax over {n} ids at the last position: the predicted next token, "
            note += f"the {k} most likely"
        else:
            note = "class probabilities as given" if as_given else "softmax of the logits"
            note += f": the {k} most likely of {n} classes"
        values, at = (a["raw"], a["raw_at"]) if as_given else (a["p"], a["at"])
        return Meaning(kind, values, note, at)

    return PendingMeaning(tensors, top)
