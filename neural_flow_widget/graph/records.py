"""The records of one traced run: stages, edges, the condensed op graph, the model's modules.

Plain frozen data, no torch: the closed vocabulary (``EdgeKind``, ``Topology``) that every
other part of the package and the wire format speak.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Literal

EdgeKind = Literal["flow", "skip", "merge", "order"]
Topology = Literal["dataflow", "fx", "sequential"]
EDGE_KINDS: tuple[EdgeKind, ...] = ("flow", "skip", "merge", "order")
TOPOLOGIES: tuple[Topology, ...] = ("dataflow", "fx", "sequential")


@dataclass(frozen=True, slots=True)
class Edge:
    """A stage edge: data produced by ``src`` reaches ``dst``."""

    src: str
    dst: str
    kind: EdgeKind

    def __iter__(self) -> Iterator[str]:  # so that ``src, dst, kind = edge`` works
        return iter((self.src, self.dst, self.kind))


@dataclass(frozen=True, slots=True)
class Stage:
    """One module call of the run.

    ``id`` is the module's qualified name, or ``name#k`` when the module was called more than
    once (each call is its own stage). ``parent`` is the id of the enclosing module call, or
    None for a direct child of the model.
    """

    index: int  # position in execution (start) order among all calls of the run
    id: str
    module: str  # qualified module name
    type: str  # class name
    call: int  # which call of this module, 0-based
    parent: str | None
    depth: int  # module-tree depth; 1 = a child of the model
    leaf: bool  # the module has no children
    params: int  # parameters of the module, recursive
    shapes: tuple[tuple[int, ...], ...]  # output tensor shapes, one per tensor leaf
    dtypes: tuple[str, ...]  # output tensor dtypes ("float32", ...)
    sig: str = ""  # structure signature: equal for modules of equal type and structure
    error: str | None = None  # why this call (or its summary) failed


#: the joins whose parameter operands the graph names (:attr:`OpGraph.operands`): a learned
#: embedding added, subtracted or concatenated where a module's own forward runs
NAMED_JOINS = frozenset(("add", "sub", "cat"))


@dataclass(frozen=True, slots=True)
class OpGraph:
    """The run's op graph: one node per recorded op (or, after :func:`~.condense.condense`,
    per op the edge walk can tell apart). Integers only, no tensors."""

    owners: tuple[int, ...]  # per op: index of the innermost module call; -1 = model body
    parents: tuple[tuple[int, ...], ...]  # per op: parent op ids
    call_parents: tuple[int, ...]  # per call: index of the enclosing call; -1 = the model
    call_inputs: tuple[tuple[int, ...], ...]  # per call: ops that produced its input tensors
    input_ops: tuple[tuple[str, int], ...]  # model input node id -> its op
    output_ops: tuple[tuple[str, tuple[int, ...]], ...]  # model output node id -> its ops
    #: ops that read tensors of two or more ops, and what they do ("add", "cat", "mul", ...:
    #: where data meets, drawn as a junction)
    joins: tuple[tuple[int, str], ...] = ()
    #: per call, per op of ``call_inputs``: the argument it came in (0 = the first; positional
    #: arguments, then keywords in the order given; a list, tuple or dict argument is one).
    #: Empty for a call (or for the whole graph): each op is an argument of its own.
    call_arguments: tuple[tuple[int, ...], ...] = ()
    #: per call: the argument that is a state the call continues (it came from the previous
    #: call of the same module and has the shapes of this call's output: an RNN cell's
    #: ``(h, c)``), else -1. Empty: no call continues a state.
    call_states: tuple[int, ...] = ()
    #: ops of no parents that read a parameter or buffer of the model, by its qualified name,
    #: where a join adds or concatenates them (ViT's ``+ position_embeddings``, its ``cls_token``)
    operands: tuple[tuple[int, str], ...] = ()
    #: elementwise joins (of ``joins``) that continue one operand, broadcasting the others
    #: to its shape (``norm(x) * (1 + scale) + shift``, a gate ``x * sigmoid(s)``): that
    #: operand's ops come first among their parents, and lead the trunk as a matrix
    #: product's first operand does (:mod:`.edges` step 4)
    leads: tuple[int, ...] = ()

    def arguments(self, call: int) -> tuple[int, ...]:
        """Per op of ``call_inputs[call]``: the argument it came in (see ``call_arguments``)."""
        args = self.call_arguments[call] if self.call_arguments else ()
        return args if args else tuple(range(len(self.call_inputs[call])))

    def state(self, call: int) -> int:
        """The argument of ``call`` that is a state it continues, or -1."""
        return self.call_states[call] if self.call_states else -1


@dataclass(frozen=True, slots=True)
class Failure:
    """Why a run stopped: the model's forward raised (the graph is of what ran before)."""

    message: str  # what raised where, with the inputs it received, in words
    stage: str | None  # the selected stage that was running, if any
    module: str | None  # the innermost module that raised, if any
    call: str | None = None  # the innermost call that raised (its stage id), if any


@dataclass(frozen=True, slots=True)
class ModuleInfo:
    """A module of the model, as the stage selection sees it."""

    name: str
    type: str
    depth: int
    leaf: bool


def ran_within(call_parents: Sequence[int], c: int, call: int) -> bool:
    """Whether call ``c`` is ``call`` or ran inside it (``call_parents``: per call, the call it
    ran in; -1, the model's body, holds every call). A call's children start after it."""
    while call < c < len(call_parents):
        c = call_parents[c]
    return c == call
