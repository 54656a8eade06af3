"""The registry of wrapper tensor subclasses (tracing/wrappers.py); DTensors themselves are
traced over two processes in tests/test_distributed.py."""

import pytest
import torch

from neural_flow_widget.tracing.dataflow import TagTable
from neural_flow_widget.tracing.wrappers import inner_of, register_wrapper


def test_registering_a_wrapper_twice_is_an_error():
    with pytest.raises(ValueError, match="registered already"):
        register_wrapper("torch.distributed.tensor.DTensor", "_local_tensor")


def test_plain_tensors_and_parameters_wrap_nothing():
    assert inner_of(torch.ones(2)) is None
    assert inner_of(torch.nn.Parameter(torch.ones(2))) is None


class Boxed(torch.Tensor):
    """A stand-in wrapper: a plain subclass that keeps another tensor as ``held``."""


def test_a_registered_wrapper_shares_its_tag_with_the_tensor_it_holds():
    register_wrapper(f"{__name__}.Boxed", "held")
    box, held = torch.ones(2).as_subclass(Boxed), torch.zeros(2)
    box.held = held
    table = TagTable()
    table.set(held, (1, -1, (0,)))
    assert table.get(box) == (1, -1, (0,))  # an untagged wrapper reads what it holds
    table.set(box, (2, 3, (4,)))
    assert table.get(held) == (2, 3, (4,))  # tagging the wrapper tags what it holds
    other = torch.ones(2).as_subclass(Boxed)  # (no "held": nothing to share)
    assert table.get(other) is None
