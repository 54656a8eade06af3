"""The graph message's fields, each with its comment: the one definition of the schema.

``scripts/make_wire_schema.py`` reads these TypedDicts (``typing.get_type_hints`` with the
``Annotated`` comments) and writes ``js/src/wire_schema.ts``: the TypeScript types with the
same comments and the field tables that ``js/src/wire.ts`` validates a message against
(``tests/test_wire_schema.py`` fails when the committed file is stale). A field added, removed
or retyped here is therefore added, removed or retyped in the front end's types and checks by
that script; bump :data:`SCHEMA` with it.

Every field is required (a message always carries it; ``None`` where it may be empty). The
comment is the second argument of ``Annotated``.
"""

from __future__ import annotations

from typing import Annotated as A
from typing import Literal, TypedDict

#: the version of the wire format: bumped with any change to a field (the front end refuses a
#: message of another version with a message that says to rebuild the bundle)
SCHEMA = 8

Topology = Literal["dataflow", "fx", "sequential"]

# The stage replies (message 2) are typed in reply.py; this module holds the graph message.

WireCall = TypedDict(
    "WireCall",
    {
        "id": A[str, 'stage id: qualified name, or "name#k" for a reused module'],
        "module": A[str, "qualified module name"],
        "type": A[str, "class name (text, never HTML)"],
        "call": A[int, "which call of this module (0-based)"],
        "parent": A[int, "call index of the enclosing call; -1 = the model itself"],
        "depth": A[int, "module-tree depth (1 = a child of the model)"],
        "leaf": A[bool, "the module has no children"],
        "params": A[int, "parameters of the module (recursive)"],
        "shapes": A[list[list[int]], "output tensor shapes, one per tensor leaf"],
        "dtypes": A[list[str], 'output tensor dtypes, torch names without "torch."'],
        "sig": A[str, "structure signature: equal for blocks of equal structure"],
        "error": A[str | None, "why the call failed (or its summary failed), else null"],
        "in": A[list[int], "op ids that produced this call's input tensors"],
        "args": A[
            list[int],
            "per op of `in`: the argument it came in (positional, then keywords as given; "
            "a list or tuple is one)",
        ],
        "state": A[
            int,
            "the argument that is a state the call continues (the previous call of its module "
            "returned it: an RNN cell's (h, c)), else -1",
        ],
    },
)

WireCall.__doc__ = (
    """One module call of the traced run; its index in ``calls`` is its "call index"."""
)


class WireOrigin(TypedDict):
    """Where the NaN / Inf was made that the first ``nonfinite`` call received in its input
    (between stages, in a parent's forward: graph/origin.py's NonfiniteOrigin)."""

    op: A[str, 'the torch function that made it ("torch.Tensor.div")']
    module: A[str, 'qualified name of the module whose forward ran it ("": the model itself)']
    type: A[str, "that module's class name (text, never HTML)"]
    function: A[str, 'the user\'s function that called the op ("ConvNet.forward")']
    file: A[str, "its source file, the name only (no folders)"]
    line: A[int, "the line in it (0: unknown)"]
    text: A[str, 'the op\'s expression in the source ("": unknown)']
    before: A[int | None, "call index of the call that returned last in that forward before it"]
    after: A[int | None, "call index of the call in that forward that received it next"]


class WireFailure(TypedDict):
    """The forward raised: the graph is what ran before."""

    message: A[str, "what raised where, with the inputs' shapes (text, never HTML)"]
    stage: A[int | None, "call index of the selected stage that was running"]
    call: A[
        int | None, "call index of the innermost call that raised (its module: calls[call].module)"
    ]


class WireEnd(TypedDict):
    """A model input or output whose data was captured: a click asks for it like a stage."""

    shape: A[list[int], "its shape"]
    dtype: A[str, 'torch dtype name without "torch."']
    reading: A[
        str | None, "what it means (capture/meaning.py's kinds: image, tokens, ...), or null"
    ]


class WireGradientFlow(TypedDict):
    """How the gradient's norm changes along the trunk (graph/gradients.py's GradientFlow)."""

    kind: A[Literal["healthy", "vanishing", "exploding"], "what the gradient does on the trunk"]
    at: A[int | None, "call index of the stage nearest the loss where it crossed the threshold"]
    ratio: A[float | None, "the norm at the trunk's input end over its norm at the loss end"]
    calls: A[list[int], "the trunk's calls that a gradient reached, input side first"]
    norms: A[list[float | None], "the gradient's L2 norm at each of them (null: NaN or Inf)"]
    text: A[str, "the finding in words (text, never HTML)"]


class Graph(TypedDict):
    """The ``graph`` traitlet (plain JSON, no images), from ``encode_graph``."""

    schema: A[int, "SCHEMA of the writer"]
    model: A[str, "class name of the traced model"]
    topology: A[Topology, "what made the edges"]
    inputs: A[list[str], "model input node ids, in argument order"]
    outputs: A[list[str], "model output node ids, in output order"]
    calls: A[
        list[WireCall],
        'every module call of the run, in start order; its index is its "call index"',
    ]
    ops: A[
        list[tuple[int, list[int]]],
        "the condensed op graph: [owner call index (-1 = the model's own forward body), "
        "parent op ids]",
    ]
    input_ops: A[list[tuple[str, int]], "which op is each model input: [input node id, op id]"]
    output_ops: A[
        list[tuple[str, list[int]]],
        "which ops produced each model output: [output node id, op ids]",
    ]
    joins: A[
        list[tuple[int, str]],
        "ops where data of two or more ops meets, and what they do: add, sub, mul, div, cat, "
        "stack, matmul, attention (a softmax's weights times the values, written out), or the "
        'torch function\'s name ("where", "scaled_dot_product_attention")',
    ]
    operands: A[
        list[tuple[int, str]],
        "ops of no parents that read a parameter or buffer of the model, and its qualified "
        "name, where an add or a concatenation of the drawn data reads them (ViT's "
        '"embeddings.position_embeddings", its "embeddings.cls_token")',
    ]
    leads: A[
        list[int],
        "join ops that work element by element and continue one operand, broadcasting the "
        "others to its shape (an adaptive norm's norm(x) * (1 + scale) + shift, a gate): that "
        "operand's ops are their first parents, the trunk's lead as a matrix product's first "
        "operand is",
    ]
    selected: A[list[int], "call indices of the stages trace() selected"]
    initial: A[
        list[int] | None,
        "stages the first view shows (the user chose them with stages=); null: the view picks "
        "a readable depth",
    ]
    attention: A[list[int], "call indices that recorded attention maps"]
    stats: A[
        list[tuple[float | None, float | None] | None],
        "per call: [mean |x|, std] of its first output (null where not finite), or null",
    ]
    nonfinite: A[
        list[int],
        "call indices whose output held NaN or +/-Inf, in the order the calls returned (the "
        "first: where it began)",
    ]
    nonfinite_origin: A[
        WireOrigin | None,
        "the first of nonfinite received NaN / Inf in its input: where it was made; null when "
        "that call made it itself, or there is none",
    ]
    failure: A[WireFailure | None, "the forward raised: what, where; null: it ran to the end"]
    notes: A[list[str], "what the run could not show (e.g. the meta device: no data)"]
    ends: A[dict[str, WireEnd], "model inputs / outputs whose data was captured, by node id"]
    grad: A[
        list[float | None] | None,
        "per call: the L2 norm of the gradient of the loss with respect to its output (null: "
        "no gradient reached it); null: the run had no loss=",
    ]
    nonfinite_grad: A[
        list[int],
        "call indices whose gradient held NaN or +/-Inf, in the backward pass's order (the "
        "first: where it entered)",
    ]
    gradient_flow: A[
        WireGradientFlow | None,
        "the gradient along the trunk: where it vanishes or explodes; null: no loss=, or fewer "
        "than two trunk stages with a gradient",
    ]
    readouts: A[
        list[tuple[int, int, float]],
        "the logit lens at the last position: [call index, its most likely next token id, that "
        "token's probability], for each call with a readout (a language model's blocks)",
    ]
    readout_names: A[
        dict[str, str],
        "token id -> its text, for the ids of readouts (when the widget has a tokenizer)",
    ]


MESSAGES = (WireCall, WireOrigin, WireFailure, WireEnd, WireGradientFlow, Graph)
"""The records of the graph message, in the order the TypeScript file declares them."""
