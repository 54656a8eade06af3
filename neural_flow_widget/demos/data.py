"""Seeded synthetic data for the demo models: the same generators feed training, tests and samples.

>>> from neural_flow_widget.demos import data
>>> images, masks = data.shapes_batch(4, seed=0)
>>> tuple(images.shape), tuple(masks.shape)
((4, 1, 64, 64), (4, 1, 64, 64))

Every generator takes ``(n, seed)`` and returns float32 / int64 tensors on the CPU; the same
``(n, seed)`` gives the same tensors on every machine (one ``torch.Generator`` per call, nothing
read from or written to the global random state). Nothing is downloaded.

Seeds are split by purpose so that evaluation data is never trained on: the training script
draws batches with seeds from ``TRAIN_SEED_BASE`` upwards, tests and metrics use ``EVAL_SEED``,
and the sample inputs shown in the widget use ``SAMPLE_SEED``.
"""

from __future__ import annotations

import math

import torch

__all__ = [
    "CLINICAL_FEATURES",
    "DIAGNOSES",
    "EVAL_SEED",
    "REVERSAL_DIGITS",
    "SAMPLE_SEED",
    "SEP",
    "STRIPE_CLASSES",
    "TRAIN_SEED_BASE",
    "VOCAB_SIZE",
    "clinical_batch",
    "reversal_batch",
    "shapes_batch",
    "stripes_batch",
]

TRAIN_SEED_BASE = 1_000_000  # training batch k uses seed TRAIN_SEED_BASE + k
EVAL_SEED = 7  # fresh data for metrics and tests
SAMPLE_SEED = 0  # the sample input each demo ships with

# Clinical features of the fusion task, in column order. Only "marker" (diagnosis) and
# "inflammation" (severity) carry signal; the other six are noise a model must learn to ignore.
CLINICAL_FEATURES = (
    "age",
    "marker",
    "inflammation",
    "bmi",
    "heart_rate",
    "blood_pressure",
    "glucose",
    "cholesterol",
)
DIAGNOSES = (
    "round lesion, low marker",
    "round lesion, high marker",
    "angular lesion, low marker",
    "angular lesion, high marker",
)
PLACES = tuple(f"row {r}, column {c}" for r in range(4) for c in range(4))  # shape_place_batch
STRIPE_CLASSES = ("horizontal", "diagonal \\", "vertical", "diagonal /")  # as seen, y down

REVERSAL_DIGITS = 8  # digits per sequence in the reversal task
SEP = 10  # separator token; tokens 0-9 are the digits
VOCAB_SIZE = 11


def _generator(seed: int) -> torch.Generator:
    return torch.Generator().manual_seed(int(seed))


def _uniform(gen: torch.Generator, shape: tuple[int, ...], low: float, high: float) -> torch.Tensor:
    return torch.rand(shape, generator=gen) * (high - low) + low


def _grid(size: int) -> tuple[torch.Tensor, torch.Tensor]:
    """Pixel-centre coordinates ``(y, x)``, each of shape ``(size, size)``."""
    axis = torch.arange(size, dtype=torch.float32) + 0.5
    y, x = torch.meshgrid(axis, axis, indexing="ij")
    return y, x


def _shape_masks(
    gen: torch.Generator, kinds: torch.Tensor, radius: torch.Tensor, size: int
) -> torch.Tensor:
    """Filled shapes: kind 0 ellipse, 1 rectangle, 2 triangle; ``kinds``, ``radius``: ``(n, k)``.

    Returns a bool tensor ``(n, k, size, size)``, one mask per shape, each randomly placed,
    stretched and rotated; ``radius`` is the half-length of its long axis in pixels.
    """
    n, k = kinds.shape
    aspect = _uniform(gen, (n, k), 0.6, 1.0)
    angle = _uniform(gen, (n, k), 0.0, 2 * math.pi)
    cy = radius + torch.rand((n, k), generator=gen) * (size - 2 * radius)
    cx = radius + torch.rand((n, k), generator=gen) * (size - 2 * radius)
    yy, xx = _grid(size)
    dy = yy - cy[..., None, None]
    dx = xx - cx[..., None, None]
    cos, sin = angle.cos()[..., None, None], angle.sin()[..., None, None]
    u = dx * cos + dy * sin
    v = -dx * sin + dy * cos
    a = radius[..., None, None]
    b = (radius * aspect)[..., None, None]
    ellipse = (u / a) ** 2 + (v / b) ** 2 <= 1.0
    rectangle = (u.abs() <= 0.8 * a) & (v.abs() <= 0.8 * b)
    # Equilateral triangle with circumradius a: inside all three edges at distance a / 2.
    triangle = torch.ones_like(ellipse)
    for j in range(3):
        phi = math.pi / 2 + 2 * math.pi * j / 3
        triangle &= u * math.cos(phi) + v * math.sin(phi) <= 0.5 * a
    kind = kinds[..., None, None]
    return torch.where(kind == 0, ellipse, torch.where(kind == 1, rectangle, triangle))


def _texture(gen: torch.Generator, n: int, size: int, amplitude: float) -> torch.Tensor:
    """Smooth random background: two low-frequency plane waves per image, ``(n, size, size)``."""
    yy, xx = _grid(size)
    out = torch.zeros(n, size, size)
    for _ in range(2):
        freq = _uniform(gen, (n, 1, 1), 0.03, 0.12) * 2 * math.pi
        theta = _uniform(gen, (n, 1, 1), 0.0, math.pi)
        phase = _uniform(gen, (n, 1, 1), 0.0, 2 * math.pi)
        out += amplitude * torch.sin(freq * (xx * theta.cos() + yy * theta.sin()) + phase)
    return out


def shapes_batch(n: int, seed: int, size: int = 64) -> tuple[torch.Tensor, torch.Tensor]:
    """Grayscale scenes of 2-5 ellipses, rectangles and triangles, and their union mask.

    >>> images, masks = shapes_batch(2, seed=1)
    >>> images.dtype, masks.dtype, sorted(masks.unique().tolist())
    (torch.float32, torch.float32, [0.0, 1.0])

    Returns ``images (n, 1, size, size)`` and ``masks (n, 1, size, size)`` (1 = inside a shape).
    Shapes are brighter than the wavy background by a random contrast, and pixel noise blurs
    the boundary, so a single threshold is not enough; the U-Net demo segments them.
    """
    gen = _generator(seed)
    k = 5
    kinds = torch.randint(0, 3, (n, k), generator=gen)
    present = torch.arange(k)[None, :] < torch.randint(2, k + 1, (n, 1), generator=gen)
    radius = _uniform(gen, (n, k), 5.0, 12.0)
    masks = _shape_masks(gen, kinds, radius, size) & present[..., None, None]
    contrast = _uniform(gen, (n, k, 1, 1), 0.5, 1.0)
    shapes = (masks * contrast).amax(dim=1)
    background = _texture(gen, n, size, amplitude=0.2)
    noise = 0.2 * torch.randn((n, size, size), generator=gen)
    images = (background + shapes + noise)[:, None]
    return images, masks.any(dim=1, keepdim=True).float()


def shape_place_batch(n: int, seed: int, size: int = 32) -> tuple[torch.Tensor, torch.Tensor]:
    """Grayscale scenes of one shape on a wavy, noisy ground; the label is where it lies.

    >>> images, labels = shape_place_batch(3, seed=0)
    >>> tuple(images.shape), labels.dtype
    ((3, 1, 32, 32), torch.int64)

    Returns ``images (n, 1, size, size)`` and ``labels (n,)``: the cell of a 4 x 4 grid over
    the image that holds the shape's centroid (see ``PLACES``). The shape (an ellipse,
    rectangle or triangle, 4-8 px in radius) is placed, stretched and rotated at random: a
    model must find it to answer (the vision transformer demo's attention rollout does).
    """
    gen = _generator(seed)
    kinds = torch.randint(0, 3, (n, 1), generator=gen)
    radius = _uniform(gen, (n, 1), 4.0, 8.0)
    masks = _shape_masks(gen, kinds, radius, size)[:, 0]
    contrast = _uniform(gen, (n, 1, 1), 0.6, 1.0)
    background = _texture(gen, n, size, amplitude=0.2)
    noise = 0.15 * torch.randn((n, size, size), generator=gen)
    yy, xx = _grid(size)
    area = masks.sum(dim=(1, 2)).clamp(min=1)
    row = ((masks * yy).sum(dim=(1, 2)) / area * 4 / size).long().clamp(max=3)
    col = ((masks * xx).sum(dim=(1, 2)) / area * 4 / size).long().clamp(max=3)
    return (background + masks * contrast + noise)[:, None], 4 * row + col


def clinical_batch(
    n: int, seed: int, size: int = 32
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor]:
    """One lesion image per patient plus 8 clinical features; diagnosis needs both modalities.

    >>> image, clinical, diagnosis, severity = clinical_batch(3, seed=0)
    >>> tuple(image.shape), tuple(clinical.shape), tuple(diagnosis.shape), tuple(severity.shape)
    ((3, 1, 32, 32), (3, 8), (3,), (3,))

    ``diagnosis`` (int64, see ``DIAGNOSES``) is ``2 * angular + (marker > 0)``: the lesion's
    shape (round: an ellipse; angular: a rectangle or triangle, so 2 in 3 lesions) is only in the
    image, the marker only in the table. ``severity`` (float32) is
    ``0.6 * lesion size + 0.6 * inflammation``, both standardised, so it too needs both
    modalities; its variance is about 0.72.
    """
    gen = _generator(seed)
    kinds = torch.randint(0, 3, (n, 1), generator=gen)
    radius_z = torch.rand((n,), generator=gen) * 2 * math.sqrt(3) - math.sqrt(3)  # mean 0, var 1
    r_min, r_max = 5.0, 11.0
    radius = (r_min + r_max) / 2 + radius_z * (r_max - r_min) / (2 * math.sqrt(3))
    masks = _shape_masks(gen, kinds, radius[:, None], size)[:, 0]
    contrast = _uniform(gen, (n, 1, 1), 0.6, 1.0)
    background = _texture(gen, n, size, amplitude=0.15)
    noise = 0.15 * torch.randn((n, size, size), generator=gen)
    image = (background + masks * contrast + noise)[:, None]
    clinical = torch.randn((n, len(CLINICAL_FEATURES)), generator=gen)
    marker = clinical[:, CLINICAL_FEATURES.index("marker")]
    inflammation = clinical[:, CLINICAL_FEATURES.index("inflammation")]
    angular = (kinds[:, 0] > 0).long()
    diagnosis = 2 * angular + (marker > 0).long()
    severity = 0.6 * radius_z + 0.6 * inflammation
    return image, clinical, diagnosis, severity.float()


def stripes_batch(n: int, seed: int, size: int = 32) -> tuple[torch.Tensor, torch.Tensor]:
    """Colour images of stripes; the label is their orientation (see ``STRIPE_CLASSES``).

    >>> images, labels = stripes_batch(4, seed=0)
    >>> tuple(images.shape), labels.dtype
    ((4, 3, 32, 32), torch.int64)

    Returns ``images (n, 3, size, size)`` and ``labels (n,)``. Orientation k is
    ``k * 45`` degrees plus up to 10 degrees of jitter; period, phase and the two colours are
    random (the second colour is the first shifted by 0.5 per channel, so stripes always show),
    and Gaussian noise is added.
    """
    gen = _generator(seed)
    labels = torch.randint(0, len(STRIPE_CLASSES), (n,), generator=gen)
    jitter = _uniform(gen, (n,), -10.0, 10.0)
    theta = torch.deg2rad(labels * 45.0 + jitter)[:, None, None]
    period = _uniform(gen, (n, 1, 1), 4.0, 9.0)
    phase = _uniform(gen, (n, 1, 1), 0.0, 2 * math.pi)
    yy, xx = _grid(size)
    # Constant along direction theta: the wave varies along the normal (-sin, cos).
    across = -xx * theta.sin() + yy * theta.cos()
    wave = (torch.sin(2 * math.pi * across / period + phase) > 0).float()[:, None]
    color_a = torch.rand((n, 3, 1, 1), generator=gen)
    color_b = (color_a + 0.5) % 1.0
    noise = 0.1 * torch.randn((n, 3, size, size), generator=gen)
    return color_a + (color_b - color_a) * wave + noise, labels


def reversal_batch(n: int, seed: int) -> tuple[torch.Tensor, torch.Tensor]:
    """Digit-reversal sequences for a next-token model: ``digits, SEP, reversed digits``.

    >>> tokens, targets = reversal_batch(1, seed=0)
    >>> tokens.shape[1] == targets.shape[1] == 2 * REVERSAL_DIGITS
    True
    >>> bool((targets[0, REVERSAL_DIGITS:] == tokens[0, :REVERSAL_DIGITS].flip(0)).all())
    True

    The full sequence has ``2 * REVERSAL_DIGITS + 1`` tokens; ``tokens`` drops its last token
    and ``targets`` its first, so ``targets[:, i]`` is the token that follows ``tokens[:, i]``.
    Only the last ``REVERSAL_DIGITS`` targets (the reversed digits) are predictable; the first
    ones are set to -100, the ``ignore_index`` of ``torch.nn.functional.cross_entropy``.
    """
    gen = _generator(seed)
    digits = torch.randint(0, 10, (n, REVERSAL_DIGITS), generator=gen)
    sep = torch.full((n, 1), SEP, dtype=torch.long)
    sequence = torch.cat([digits, sep, digits.flip(1)], dim=1)
    tokens, targets = sequence[:, :-1], sequence[:, 1:].clone()
    targets[:, :REVERSAL_DIGITS] = -100
    return tokens, targets
