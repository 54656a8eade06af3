"""Pooling of retained maps equals adaptive average pooling, whichever kernel runs it."""

from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F

from neural_flow_widget.capture.pooling import even, pool2d


def _gen(seed: int) -> torch.Generator:
    return torch.Generator().manual_seed(seed)


@pytest.mark.parametrize("shape, size", [
    ((128, 768), (128, 256)),  # reshaped means, one axis
    ((3, 12, 8), (4, 2)),  # reshaped means, both axes
    ((5, 64, 64), (8, 8)),
    ((2, 10, 9), (4, 3)),  # windows that do not divide, a small map: one matmul
    ((2, 40, 30), (7, 30)),  # rows that do not divide: the adaptive kernel
    ((2, 4, 301), (2, 100)),  # many columns that do not divide: the adaptive kernel
    ((3, 40, 60), (8, 7)),  # few columns: a matmul
    ((7, 7), (7, 7)),  # 1:1
])  # fmt: skip
def test_pooling_matches_adaptive_average_pooling(shape, size):
    x = torch.randn(*shape, generator=_gen(13))
    want = F.adaptive_avg_pool2d(x.reshape(-1, *shape[-2:]), size).reshape(*shape[:-2], *size)
    torch.testing.assert_close(pool2d(x, size), want)


def test_pooled_lengths_prefer_windows_that_divide():
    assert even(112, 32) == 28 and even(512, 78) == 64 and even(768, 256) == 256
    assert even(7, 5) == 5  # 7 is prime: adaptive windows
    assert even(20, 40) == 20  # no pooling needed
