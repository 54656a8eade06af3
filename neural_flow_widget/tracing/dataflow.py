"""The runtime dataflow tracer: a TorchFunctionMode that records which op made each tensor.

Each tensor produced inside the traced forward gets a *tag* ``(seq, call, ops)`` in a side
table keyed by the tensor's identity (entries die with their tensors; nothing is stored on the
tensor): ``seq`` orders tags in time, ``call`` is the module call that was innermost when the
op ran, and ``ops`` are the ids of the op-graph nodes it stands for. Every recorded op adds a
node, with the nodes of its tensor arguments as parents: the *full* op graph, which
:func:`neural_flow_widget.graph.condense` shrinks after the run without changing any stage
edge. In-place writes are remembered per storage, so a view taken before ``x.relu_()`` still
depends on the relu. An op that takes a tensor only for its shape, dtype and device
(``torch.zeros_like(x)``, ``x.new_zeros(n)``) does not read it; a read of a value that makes
no tensor (``x.item()``, ``bool(x)``) is an op with no output (:mod:`..graph.reads`: a call
that never reads an input gets no edge from it).

A call of an opaque leaf module (:mod:`.opaque`) may be recorded as one op by the call tracker
instead of op by op. What observes the run through the tracer (the attention recorder) and
what it is told (in-place writes) is the contract of :mod:`.protocols`.
"""

from __future__ import annotations

import weakref
from collections.abc import Callable
from typing import Any

import torch
from torch.overrides import TorchFunctionMode

from ..graph.records import NAMED_JOINS
from .joins import BIAS_FIRST, ELEMENTWISE, SOFTMAX, broadcast_lead, join_kind
from .op_kinds import FRESH, IGNORE, INPLACE, NORMAL, VALUE, op_kind
from .protocols import OpObserver
from .pytree import among
from .wrappers import inner_of

Tensor = torch.Tensor
Tag = tuple[int, int, tuple[int, ...]]  # (seq, call, op ids)


def storage_key(tensor: Tensor) -> int:
    """Where ``tensor``'s data lives, as the key of in-place writes (a wrapper's: its inner
    tensor's; a DTensor has no storage of its own)."""
    inner = inner_of(tensor)
    return (inner if inner is not None else tensor).untyped_storage().data_ptr()


class _Entry(weakref.ref):
    """A weak reference to a tagged tensor that carries its table key and its tag."""

    __slots__ = ("key", "tag")
    key: int
    tag: Tag


class TagTable:
    """Tensor identity -> tag; an entry is removed when its tensor is freed. A wrapper tensor
    (a DTensor, :mod:`.wrappers`) and the plain tensor it wraps share a tag: setting one sets
    both, and an untagged wrapper reads its inner tensor's."""

    __slots__ = ("_entries", "_forget")

    def __init__(self) -> None:
        entries: dict[int, _Entry] = {}

        def forget(entry: _Entry) -> None:  # one callback for every entry
            if entries.get(entry.key) is entry:
                del entries[entry.key]

        self._entries, self._forget = entries, forget

    def get(self, tensor: Tensor) -> Tag | None:
        entry = self._entries.get(id(tensor))
        if entry is not None:
            return entry.tag
        if type(tensor) is Tensor:  # (most misses: a parameter is not a plain Tensor)
            return None
        inner = inner_of(tensor)
        return self.get(inner) if inner is not None else None

    def set(self, tensor: Tensor, tag: Tag) -> None:
        if type(tensor) is not Tensor:
            inner = inner_of(tensor)
            if inner is not None:
                self.set(inner, tag)
        key = id(tensor)
        entry = self._entries.get(key)
        if entry is not None and entry() is tensor:
            entry.tag = tag
            return
        entry = _Entry(tensor, self._forget)
        entry.key, entry.tag = key, tag
        self._entries[key] = entry

    def __len__(self) -> int:
        return len(self._entries)


class DataflowTracer(TorchFunctionMode):
    """Records the condensed op graph of everything that runs while it is active.

    ``stack`` is shared with the call tracker: its last item is the innermost module call
    (-1 = the model's own body). State: ``table`` (tensor -> tag), ``owners`` / ``parents``
    (the op graph), ``writes`` (storage pointer -> in-place tags), ``seq``, ``last_write``
    (seq of the latest in-place write), ``dispatched`` (calls of ``__torch_function__``),
    ``wrote_untagged`` (an in-place op wrote into a parameter, buffer or constant),
    ``paused`` (set after a failure of the tracer itself, kept in ``failure``), ``named`` (op
    -> the qualified name of the parameter or buffer it read: an op of no parents that read
    one, or one made for such an operand of an add or a concatenation, where ``names``, the
    model's parameters and buffers by ``id``, hold it). An
    :class:`~.protocols.OpObserver` given to :meth:`observe_with` sees the ops it watches
    after they ran; a callback given to :meth:`before_next_write` runs once, before the next
    op that writes in place (the tracer is a :class:`~.protocols.WriteLog`).
    """

    def __init__(self, stack: list[int], names: dict[int, str] | None = None) -> None:
        super().__init__()
        self.stack = stack
        self.names = names or {}
        self.named: dict[int, str] = {}
        self._join_kinds: dict[Any, str] = {}  # func -> its join_kind
        self.table = TagTable()
        self.owners: list[int] = []
        self.parents: list[tuple[int, ...]] = []
        self.writes: dict[int, list[tuple[int, Tag]]] = {}
        self.seq = 0
        self.last_write = -1
        self.dispatched = 0  # calls of __torch_function__
        self.wrote_untagged = False
        self.paused = False
        self.failure: BaseException | None = None
        self.observer: OpObserver | None = None
        self.observed: Any = frozenset()  # the funcs the observer watches (it may grow)
        self.before_write: Callable[[], None] | None = None
        self._kinds: dict[Any, int] = {}
        self.joins: dict[int, Any] = {}  # op -> the torch function of an op with 2+ parents
        self.leads: list[int] = []  # joins that broadcast onto their first parent's operand
        self.softmaxes: set[int] = set()  # the softmax ops of one parent

    def observe_with(self, observer: OpObserver) -> None:
        """Show ``observer`` the ops in its ``watched`` set (a set it may grow in place)."""
        self.observer, self.observed = observer, observer.watched

    def before_next_write(self, callback: Callable[[], None] | None) -> None:
        """Call ``callback`` once before the next op that writes in place (None: no call)."""
        self.before_write = callback

    def __torch_function__(
        self, func: Callable, types: Any, args: tuple = (), kwargs: dict | None = None
    ) -> Any:
        self.dispatched += 1
        if kwargs is None:
            kwargs = {}
        kind = self._kinds.get(func)
        if kind is None:
            kind = self._kinds[func] = op_kind(func)
        if kind == NORMAL and kwargs.get("inplace") is True:  # F.relu(x, inplace=True)
            kind = INPLACE
        if self.before_write is not None and (kind == INPLACE or "out" in kwargs):
            self.before_write()  # (once: it unsets itself)
        out = func(*args, **kwargs)
        if self.paused:
            return out
        if kind == NORMAL and not isinstance(out, (Tensor, tuple, list)) and "out" not in kwargs:
            kind = IGNORE  # x.dtype, x.device, x.dim(): nothing to record
        elif kind == NORMAL and type(out) is torch.Size:
            kind = IGNORE  # x.shape
        elif kind == VALUE:
            kind = IGNORE
            self._read_value(args)
        if kind != IGNORE:
            try:
                self._record(kind, args, kwargs, out, func)
            except Exception as error:  # never break the user's forward
                self.failure = error
                self.paused = True
        if func in self.observed:  # (non-empty only with an observer)
            self.observer.observe(func, args, kwargs, out)  # type: ignore[union-attr]
        return out

    def _record(self, kind: int, args: tuple, kwargs: dict, out: Any, func: Any = None) -> None:
        if isinstance(out, Tensor):
            outs: tuple | list = (out,)
        elif isinstance(out, (tuple, list)):
            outs = [o for o in out if isinstance(o, Tensor)]
        else:
            outs = ()
        target = target_tag = None
        if kind == INPLACE or "out" in kwargs:
            target = kwargs.get("out", args[0] if args else None)
            if isinstance(target, Tensor):
                outs = (target,)
            elif isinstance(target, (tuple, list)):
                outs = [o for o in target if isinstance(o, Tensor)]
                target = outs[0] if outs else None
            if target is not None:
                target_tag = self.table.get(target)
        if not outs:
            return
        ins: list[Tensor] = []
        if kind == FRESH and args and isinstance(args[0], Tensor):
            args = args[1:]  # (its shape, dtype and device only)
        for a in args:
            if isinstance(a, Tensor):
                ins.append(a)
            elif isinstance(a, (list, tuple)):
                ins.extend(b for b in a if isinstance(b, Tensor))
        for a in kwargs.values():
            if isinstance(a, Tensor):
                ins.append(a)
            elif isinstance(a, (list, tuple)):
                ins.extend(b for b in a if isinstance(b, Tensor))
        if len(ins) > 2 and func in BIAS_FIRST:  # the factors first: (q, k, bias)
            ins.append(ins.pop(0))
        tags = self._tags(ins)
        call = self.stack[-1]
        if len(tags) == 1:
            parents = tags[0][2]
        else:
            parents = tuple(dict.fromkeys(op for t in tags for op in t[2]))
        joined = self._join_kinds.get(func)
        if joined is None:
            joined = self._join_kinds[func] = join_kind(func)
        if joined in NAMED_JOINS and self.names and parents:  # ``x + self.position_embeddings``
            parents += self._operands(ins, call)
        first: list[int] = []  # a broadcast join's full-shaped operand's ops (OpGraph.leads)
        if len(parents) > 1 and joined in ELEMENTWISE and isinstance(out, Tensor):
            full = broadcast_lead(ins, out)  # ``norm(x) * (1 + scale) + shift``: x leads
            first = [op for t in self._tags([full]) for op in t[2]] if full is not None else []
            if first:  # (its ops first: the trunk's lead, graph/edges.py step 4)
                parents = tuple(dict.fromkeys((*first, *parents)))
        ops = (self.new_op(call, parents),)
        if first:
            self.leads.append(ops[0])
        if not parents and self.names:  # ``self.cls_token.expand(n, -1, -1)``
            name = next((self.names[id(a)] for a in ins if id(a) in self.names), None)
            if name is not None:
                self.named[ops[0]] = name
        elif self.named and all(p in self.named for p in parents):
            self._name_derived(ops[0], ins, func)  # ``self.cls_token + self.pos[:, :1]``
        if len(parents) > 1 and func is not None:  # where data meets (a residual's add)
            self.joins[ops[0]] = func
        elif func in SOFTMAX:  # (a written-out attention's weights: join_kinds)
            self.softmaxes.add(ops[0])
        self.seq += 1
        tag = (self.seq, call, ops)
        fresh = target is not None
        for o in outs:
            if fresh or not among(o, ins):  # ``x.contiguous()`` may return x itself
                self.table.set(o, tag)
        if target is not None:
            key = storage_key(target)
            self.writes.setdefault(key, []).append((self.seq, tag))
            self.last_write = self.seq
            if target_tag is None:
                self.wrote_untagged = True

    def _operands(self, ins: list[Tensor], call: int) -> tuple[int, ...]:
        """An op of no parents for each parameter or buffer among ``ins`` that nobody wrote
        to, named by it (:attr:`named`)."""
        made = []
        for a in ins:
            name = self.names.get(id(a))
            if name is not None and self.table.get(a) is None:
                op = self.new_op(call, ())
                self.named[op] = name
                made.append(op)
        return tuple(made)

    def _name_derived(self, op: int, ins: list[Tensor], func: Any) -> None:
        """Name ``op``, made of the model's parameters and buffers alone, after them in the
        order it reads them, joined by what it does (ViT-MAE's [CLS] token, ``cls_token +
        position_embeddings[:, :1]``, before it is concatenated with the patches)."""
        names: list[str] = []
        for a in ins:
            tag = self.table.get(a)
            found = [self.named.get(o) for o in tag[2]] if tag is not None else []
            names.extend(n for n in (*found, self.names.get(id(a))) if n is not None)
        sign = {"add": " + ", "sub": " − ", "mul": " × ", "cat": " ⧺ "}.get(join_kind(func), ", ")
        self.named[op] = sign.join(dict.fromkeys(names))

    def _read_value(self, args: tuple) -> None:
        """Record a read of a tensor's value that made no tensor (``x.item()``): an op of
        the innermost call with the tensor's ops as parents, and no output."""
        if not args or not isinstance(args[0], Tensor):
            return
        try:
            tags = self._tags([args[0]])
            if tags:
                self.new_op(self.stack[-1], tuple(op for t in tags for op in t[2]))
        except Exception as error:  # never break the user's forward
            self.failure, self.paused = error, True

    def record_call(
        self, inputs: list[Tensor], outputs: list[Tensor], call: int | None = None
    ) -> None:
        """Record a call whose ops ran without the tracer (an opaque leaf's, a TorchScript
        module's) as one op of ``call`` (default: the innermost) taking ``inputs`` and giving
        ``outputs``; a failure pauses the tracer, as in the mode."""
        stack = self.stack
        if call is not None:
            stack.append(call)
        try:
            self._record(NORMAL, tuple(inputs), {}, outputs)
        except Exception as error:  # never break the user's forward
            self.failure, self.paused = error, True
        finally:
            if call is not None:
                stack.pop()

    def made_by(self, tensor: Tensor, call: int, parents: tuple[int, ...]) -> None:
        """Tag ``tensor`` as made by one op of ``call`` from the ops ``parents`` (a lifted
        call that returned one tensor: its input ops, which the call tracker read already)."""
        try:
            owners = self.owners
            op = len(owners)
            owners.append(call)
            self.parents.append(parents)
            self.seq += 1
            self.table.set(tensor, (self.seq, call, (op,)))
        except Exception as error:  # never break the user's forward
            self.failure, self.paused = error, True

    def written_by(self, tensor: Tensor, call: int, parents: tuple[int, ...]) -> None:
        """Record an in-place write into ``tensor`` by one op of ``call`` reading the ops
        ``parents`` (a lifted call with ``inplace=True``: its input's ops), as the mode
        records ``x.relu_()``."""
        try:
            owners = self.owners
            op = len(owners)
            owners.append(call)
            self.parents.append(parents)
            self.seq += 1
            tag = (self.seq, call, (op,))
            if self.table.get(tensor) is None:
                self.wrote_untagged = True
            self.table.set(tensor, tag)
            key = storage_key(tensor)
            self.writes.setdefault(key, []).append((self.seq, tag))
            self.last_write = self.seq
        except Exception as error:  # never break the user's forward
            self.failure, self.paused = error, True

    def record_write(self, tensor: Tensor) -> None:
        """Record an in-place write into ``tensor`` that ran without the tracer (an opaque
        leaf with ``inplace=True``), as the mode records ``x.relu_()``."""
        try:
            self._record(INPLACE, (tensor,), {}, tensor)
        except Exception as error:  # never break the user's forward
            self.failure, self.paused = error, True

    def ops_of(self, tensors: list[Tensor]) -> tuple[int, ...]:
        """The op-graph nodes that produced these tensors (in-place writes included)."""
        if len(tensors) == 1:  # (most calls: one tensor, tagged after the latest write)
            tag = self.table.get(tensors[0])
            if tag is not None and tag[0] >= self.last_write:
                return tag[2]
        found: list[int] = []
        for tag in self._tags(tensors):
            found.extend(tag[2])
        return tuple(dict.fromkeys(found))

    def _tags(self, tensors: list[Tensor]) -> list[Tag]:
        get = self.table.get
        tags = []
        for t in tensors:
            tag = get(t)
            if tag is not None:
                tags.append(tag)
                since = tag[0]
            elif self.wrote_untagged:
                since = -1
            else:
                continue  # a parameter or constant nobody wrote to
            if since < self.last_write:  # only then can a write to its storage be newer
                for seq, written in self.writes.get(storage_key(t), ()):
                    if seq > since:
                        tags.append(written)
        return tags

    def new_op(self, call: int, parents: tuple[int, ...]) -> int:
        self.owners.append(call)
        self.parents.append(parents)
        return len(self.owners) - 1

    def tag_input(self, tensor: Tensor) -> tuple[Tensor, int]:
        """A detached view of a model input, tagged as a new input op."""
        view = tensor.detach()
        op = self.new_op(-1, ())
        self.seq += 1
        self.table.set(view, (self.seq, -1, (op,)))
        return view, op

    def retag(self, tensors: list[Tensor], call: int) -> None:
        """Make ``call`` the producer of tensors it returned unchanged (``nn.Identity``, eval
        dropout), so that later consumers see the stage they came through."""
        for t in tensors:
            tag = self.table.get(t)
            parents = tag[2] if tag is not None else ()
            self.seq += 1
            self.table.set(t, (self.seq, call, (self.new_op(call, parents),)))

    def written_since(self, tensor: Tensor, seq: int) -> bool:
        """Whether an in-place op wrote to ``tensor``'s storage after tag number ``seq``."""
        if not self.writes:
            return False
        writes = self.writes.get(storage_key(tensor))
        return writes is not None and writes[-1][0] > seq
