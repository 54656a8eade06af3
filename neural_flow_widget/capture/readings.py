"""Views of what the two ends of a model mean (:mod:`.meaning`): the input image, the token
ids, the predicted mask, segmentation, class probabilities or next token; and A - B of two
runs' readings of the same end.

>>> import torch
>>> from neural_flow_widget.capture.meaning import read_output
>>> a = read_output(torch.tensor([[2.0, 0.0, -1.0]]), "logits", 0).result()
>>> b = read_output(torch.tensor([[0.0, 2.0, -1.0]]), "logits", 0).result()
>>> meaning_view(a).labels
('class 0: 84.4%', 'class 1: 11.4%', 'class 2: 4.2%')
>>> reading_difference(a, b).labels[:2]
('class 0: 84.4% → 11.4%', 'class 1: 11.4% → 84.4%')
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace

import numpy as np

from .image import View, make_view, nonfinite_marks
from .meaning import Meaning

__all__ = ["meaning_view", "named_tokens", "reading_difference"]


def meaning_view(meaning: Meaning) -> View:
    """The view of a model input's or output's reading (:mod:`.meaning`).

    >>> import torch
    >>> from neural_flow_widget.capture.meaning import read_output
    >>> v = meaning_view(read_output(torch.full((1, 1, 4, 4), 2.0), "output:0", 0).result())
    >>> (v.kind, v.vmin, v.vmax, int(v.data[0, 0]))  # sigmoid(2) = 0.881
    ('mask', 0.0, 1.0, 225)
    """
    kind, data, note = meaning.kind, meaning.data, meaning.note
    if kind == "image":
        return View(kind, data, 0.0, 255.0, False, ("y", "x"), note=note, palette="rgb")
    if kind == "ids":
        view = make_view(kind, data[None].astype(np.float64), ("", "position"), note=note)
        return replace(view, labels=tuple(str(int(i)) for i in data), clipped=None)
    if kind == "mask":
        return View(
            kind, _codes(data), 0.0, 1.0, False, ("y", "x"), note=note,
            nonfinite=nonfinite_marks(data),
        )  # fmt: skip
    if kind == "segmentation":
        present = np.unique(data)
        share = meaning.confidence.mean() if meaning.confidence is not None else float("nan")
        labels = tuple(f"class {c}" for c in range(meaning.classes))
        note += f"; {len(present)} classes present"
        note += f", mean winning probability {share:.0%}" if np.isfinite(share) else ""
        return View(
            kind, data, 0.0, float(meaning.classes - 1), False, ("y", "x"),
            labels=labels, note=note, palette="categorical",
        )  # fmt: skip
    # probabilities, next token: a strip of the most likely, largest first
    what = "class" if kind == "probabilities" else "id"
    indices = meaning.indices if meaning.indices is not None else np.arange(data.size)
    labels = tuple(f"{what} {int(i)}: {_percent(float(p))}" for i, p in zip(indices, data))
    return View(
        kind, _codes(data[None]), 0.0, 1.0, False, ("", "rank"), labels=labels,
        channels=tuple(int(i) for i in indices), note=note, nonfinite=nonfinite_marks(data[None]),
    )  # fmt: skip


def _codes(values: np.ndarray) -> np.ndarray:
    """uint8 codes of probabilities; NaN and Inf get code 0 (the view's marks say what they
    are), so that no cast of a value that is not a number is ever made."""
    scaled = np.nan_to_num(np.asarray(values, np.float64) * 255.0, nan=0.0, posinf=0.0, neginf=0.0)
    return np.clip(np.rint(scaled), 0, 255).astype(np.uint8)


def _percent(p: float) -> str:
    if np.isnan(p):
        return "NaN"
    if np.isinf(p):
        return "+Inf" if p > 0 else "-Inf"
    return f"{p:.1%}"


def reading_difference(a: Meaning, b: Meaning) -> View:
    """A - B of two runs' readings of one model end, of the same kind: the mask (difference
    of the probabilities), the segmentation (the pixels whose winning class differs), the
    ids (the positions that differ), the probabilities or next token (for the classes in
    either run's top 10: A's and B's probability and their difference, largest first; a
    class outside one run's top 10 has there only an upper bound, and no difference).
    The input image is compared on its values, not its colours: see
    :func:`.difference.stage_difference`."""
    if a.kind != b.kind:
        raise ValueError(f"the runs read this end differently: A as {a.kind}, B as {b.kind}")
    if a.kind in ("mask", "segmentation", "ids") and a.data.shape != b.data.shape:
        raise ValueError(
            f"A - B: the runs' {a.kind} readings differ in size "
            f"({'x'.join(map(str, a.data.shape))} vs {'x'.join(map(str, b.data.shape))})"
        )
    if a.kind == "mask":
        note = "A - B of the predicted mask (probabilities): red where A is more sure"
        return make_view("mask", a.data - b.data, ("y", "x"), symmetric=True, note=note)
    if a.kind == "segmentation":
        changed = a.data != b.data
        n, total = int(changed.sum()), changed.size
        note = f"pixels whose winning class differs between A and B: {n:,} of {total:,}"
        note += f" ({n / total:.1%})"
        codes = changed.astype(np.uint8) * 255
        return View("segmentation", codes, 0.0, 1.0, False, ("y", "x"), note=note)
    if a.kind == "ids":
        changed = a.data != b.data
        labels = tuple(
            f"{int(x)} → {int(y)}" if c else str(int(x)) for x, y, c in zip(a.data, b.data, changed)
        )
        note = f"positions whose id differs between A and B: {int(changed.sum())} of {changed.size}"
        codes = changed.astype(np.uint8)[None] * 255
        return View("ids", codes, 0.0, 1.0, False, ("", "position"), labels=labels, note=note)
    if a.kind in ("probabilities", "next token"):
        return _top_difference(a, b)
    raise ValueError(f"A - B of the {a.kind} reading is not defined")


def _top_difference(a: Meaning, b: Meaning) -> View:
    ia = [int(i) for i in (a.indices if a.indices is not None else range(a.data.size))]
    ib = [int(i) for i in (b.indices if b.indices is not None else range(b.data.size))]
    pa, pb = dict(zip(ia, a.data.tolist())), dict(zip(ib, b.data.tolist()))
    floor_a, floor_b = min(pa.values()), min(pb.values())
    union = ia + [i for i in ib if i not in pa]
    delta = np.array([pa[i] - pb[i] if i in pa and i in pb else np.nan for i in union])
    order = sorted(range(len(union)), key=lambda k: (np.isnan(delta[k]), -abs(delta[k])))

    def odds(p: dict[int, float], floor: float, i: int) -> str:
        return f"{p[i]:.1%}" if i in p else f"<{floor:.1%}"

    what = "class" if a.kind == "probabilities" else "id"
    labels = tuple(
        f"{what} {union[k]}: {odds(pa, floor_a, union[k])} → {odds(pb, floor_b, union[k])}"
        for k in order
    )
    note = f"A - B of the probabilities of the {len(union)} {what}es in either run's top "
    note += f"{len(ia)}, largest |A - B| first; no difference where one run has only a bound"
    return make_view(
        a.kind, delta[order][None], ("", "rank"), symmetric=True, labels=labels,
        channels=tuple(union[k] for k in order), note=note,
    )  # fmt: skip


def named_tokens(v: View, vocab: Callable[[list[int]], list[str]] | None) -> View:
    """A view of token ids, or of a predicted next token, with the ids named by ``vocab`` (a
    tokenizer's ``convert_ids_to_tokens``); any other view as it is.

    >>> ids = View("ids", np.zeros((1, 2), np.uint8), 0, 1, False, ("", "token"), labels=("5", "7"))
    >>> named_tokens(ids, lambda found: [f"<{i}>" for i in found]).labels
    ('<5>', '<7>')
    """
    if vocab is None or not v.labels or v.kind not in ("ids", "next token"):
        return v
    if v.kind == "ids":  # (A - B: "3 → 5" where the runs' ids differ)
        parts = [label.split(" → ") for label in v.labels]
        names = vocab([int(i) for ids in parts for i in ids])
        at, labels = 0, []
        for ids in parts:
            labels.append(" → ".join(names[at : at + len(ids)]))
            at += len(ids)
        return replace(v, labels=tuple(labels))
    names = vocab([int(i) for i in v.channels or ()])
    odds = [label.partition(": ")[2] for label in v.labels]
    return replace(v, labels=tuple(f"{name}: {p}" for name, p in zip(names, odds)))
