"""The dataflow tracer's own bookkeeping: the tag table, references, errors, a failing tracer."""

import gc
import sys
import weakref

import pytest
import torch

from neural_flow_widget.tracing import DataflowTracer, TagTable


def test_the_tag_table_forgets_a_tensor_when_it_is_freed():
    table = TagTable()
    a, b = torch.randn(3), torch.randn(3)
    table.set(a, (1, -1, (0,)))
    table.set(b, (2, -1, (1,)))
    table.set(a, (3, 0, (2,)))  # a new tag for the same tensor
    assert len(table) == 2 and table.get(a) == (3, 0, (2,)) and table.get(b) == (2, -1, (1,))
    assert table.get(torch.randn(3)) is None
    del a
    assert len(table) == 1
    del b
    assert len(table) == 0
    kept = torch.randn(3)
    table.set(kept, (4, -1, (3,)))
    assert weakref.getweakrefcount(kept) == 1  # the table's entry
    del table
    gc.collect()  # (the table and its entries' callback form a cycle)
    assert weakref.getweakrefcount(kept) == 0  # the table, and its entry, are gone


def test_the_tracer_holds_no_reference_it_should_not():
    tracer = DataflowTracer([-1])
    x, _ = tracer.tag_input(torch.randn(4, 4))
    weight = torch.randn(4, 4)
    kwargs = {"alpha": 2.0}
    before = sys.getrefcount(x), sys.getrefcount(weight), sys.getrefcount(kwargs)
    outs = []
    with tracer:
        for _ in range(50):
            y = torch.add(x, weight, **kwargs)
            outs.append(weakref.ref(y))
            y.mul_(2)  # in place: a write is remembered
            del y
    assert (sys.getrefcount(x), sys.getrefcount(weight), sys.getrefcount(kwargs)) == before
    assert all(o() is None for o in outs)  # freed: nothing kept them
    assert len(tracer.table) == 1  # only x is left
    assert tracer.seq == 1 + 50 * 2 and sum(map(len, tracer.writes.values())) == 50
    assert len(tracer.owners) == 1 + 50 * 2  # (one node per op: the full graph)


def test_errors_of_the_op_reach_the_model_unchanged():
    tracer = DataflowTracer([-1])
    with tracer, pytest.raises(RuntimeError, match="size of tensor a"):
        torch.randn(2, 3) + torch.randn(2, 4)
    assert tracer.failure is None and not tracer.paused


def test_a_tracer_without_a_call_stack_fails_itself_not_the_op():
    tracer = DataflowTracer([])  # (the call tracker always gives [-1])
    with tracer:
        y = torch.randn(2) + 1  # the op still runs; the tracer records its failure
    assert y.shape == (2,) and tracer.paused
    assert isinstance(tracer.failure, IndexError)


def test_a_before_write_callback_runs_once_before_the_first_in_place_op():
    tracer = DataflowTracer([-1])
    x, _ = tracer.tag_input(torch.randn(3))
    seen = []

    def before():
        seen.append(float(x.sum()))  # the value before the write
        tracer.before_next_write(None)

    tracer.before_next_write(before)
    with tracer:
        y = x * 2  # not in place: no call
        assert seen == []
        start = tracer.seq
        y.add_(1)
        y.add_(1)
    assert len(seen) == 1 and tracer.written_since(y, start) and not tracer.written_since(x, 0)
