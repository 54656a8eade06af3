"""What the logit lens (:mod:`..capture.readout`) may read: the stream the unembedding itself
reads, not another tower beside it.

A language model's blocks all write one residual stream, and the unembedding reads its end:
read through the model's final norm and unembedding, any block's output there says what the
model would predict so far. An encoder-decoder (T5, BART, a ViT encoder with a GPT-2 decoder)
has two streams of the model's width: the encoder's reaches the decoder only by its
cross-attention, and read through the decoder's unembedding it predicts nothing. The stream is
the chain of first inputs behind the unembedding's input, op by op (a residual add's first
operand, a layer's input, an attention's query): it never leaves the decoder for the encoder,
whose output is only a key and value. Pure: integers in, integers out.
"""

from __future__ import annotations

from collections.abc import Callable, Collection

from .records import OpGraph

__all__ = ["head_input_leaf", "on_the_stream"]


def _chain(graph: OpGraph, op: int) -> list[int]:
    """The ops of the first-input chain from ``op`` back, ``op`` first."""
    chain: list[int] = []
    seen: set[int] = set()
    while op >= 0 and op not in seen:
        seen.add(op)
        chain.append(op)
        op = graph.parents[op][0] if graph.parents[op] else -1
    return chain


def on_the_stream(graph: OpGraph, head: int, calls: Collection[int]) -> set[int]:
    """Of ``calls`` (those kept for readouts), the ones on the stream the call ``head`` (the
    unembedding) reads: a call an op of the chain ran in (a block), or one beside the chain
    that reads it and writes back (an attention or MLP sublayer, its input's own chain meets
    the stream), with the calls inside it; not a tower beside it whose input's chain never
    meets the stream (an encoder, read from the model's other input). All of them where the
    chain does not reach a model input (a stream this walk cannot follow)."""
    first = graph.call_inputs[head][0] if graph.call_inputs[head] else -1
    chain = _chain(graph, first)
    inputs = {op for _, op in graph.input_ops}
    if not chain or chain[-1] not in inputs:
        return set(calls)
    stream = set(chain)
    holding: set[int] = set()
    for op in chain:
        c = graph.owners[op]
        while c >= 0 and c not in holding:
            holding.add(c)
            c = graph.call_parents[c]
    beside: dict[int, bool] = {}  # a call beside the chain -> whether it reads the stream

    def reads(c: int) -> bool:
        if c not in beside:
            ins = graph.call_inputs[c]
            beside[c] = bool(ins) and not stream.isdisjoint(_chain(graph, ins[0]))
        return beside[c]

    found = set()
    for c in calls:
        x = c  # the outermost call around c that is beside the chain
        while (
            x not in holding and graph.call_parents[x] >= 0 and graph.call_parents[x] not in holding
        ):
            x = graph.call_parents[x]
        if x in holding or reads(x):
            found.add(c)
    return found


def head_input_leaf(graph: OpGraph, head: int, leaf: Callable[[int], bool]) -> int:
    """The innermost call for which ``leaf`` holds whose op made ``head``'s input (through the
    reshapes of the modules around it: the final norm of a language model), else -1."""
    todo, seen = list(graph.call_inputs[head]), set()
    while todo:
        op = todo.pop()
        if op in seen:
            continue
        seen.add(op)
        owner = graph.owners[op]
        if owner >= 0 and leaf(owner):
            return owner
        todo.extend(graph.parents[op])
    return -1
