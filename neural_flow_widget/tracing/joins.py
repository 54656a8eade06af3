"""What the ops where data meets do (the ``joins`` of the op graph, drawn as junctions): an
add, a concatenation, a product, a function's own name, and an attention written out.

>>> import torch
>>> join_kind(torch.cat), join_kind(torch.where)
('cat', 'where')
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import torch

from ..graph.records import ran_within

#: what a join (an op reading tensors of two or more ops) does, by the torch function's name
JOINS = {
    **dict.fromkeys(("add", "add_", "__add__", "__radd__", "__iadd__", "sum"), "add"),
    **dict.fromkeys(("sub", "sub_", "__sub__", "__rsub__", "__isub__"), "sub"),
    **dict.fromkeys(("mul", "mul_", "__mul__", "__rmul__", "__imul__"), "mul"),
    **dict.fromkeys(("div", "div_", "__truediv__", "__rtruediv__", "__itruediv__"), "div"),
    **dict.fromkeys(("cat", "concat", "concatenate", "hstack", "vstack", "dstack"), "cat"),
    "stack": "stack",
    **dict.fromkeys(("matmul", "__matmul__", "bmm", "mm", "einsum", "baddbmm"), "matmul"),
}


#: joins that work element by element, broadcasting an operand of fewer elements
ELEMENTWISE = frozenset(("add", "sub", "mul", "div"))


def broadcast_lead(ins: Sequence[torch.Tensor], out: torch.Tensor) -> torch.Tensor | None:
    """Of an elementwise join's operands, the one its output continues: the only one of the
    output's shape where every other has fewer elements and is broadcast to it (``norm(x) *
    (1 + scale[:, None]) + shift[:, None]``, a gate ``x * torch.sigmoid(s)``, a UNet block's
    ``h + temb[:, :, None, None]``), else None (operands of one shape: a residual's add).

    >>> import torch
    >>> x, s = torch.ones(2, 3, 4), torch.ones(2, 1, 4)
    >>> broadcast_lead([s, x], x * s) is x, broadcast_lead([x, x + 1], x + x)
    (True, None)
    """
    full = [a for a in ins if a.shape == out.shape]
    if len(full) != 1:
        return None
    numel = out.numel()
    return full[0] if all(a is full[0] or a.numel() < numel for a in ins) else None


#: products given their bias first (``torch.baddbmm(bias, q, k)``, as BLOOM adds its ALiBi):
#: the tracer records their product's operands first, so that a product's first parent is
#: its first factor (the trunk's lead, :data:`neural_flow_widget.graph.edges.LEADING`)
BIAS_FIRST = frozenset(
    (
        torch.baddbmm,
        torch.Tensor.baddbmm,
        torch.addbmm,
        torch.Tensor.addbmm,
        torch.addmm,
        torch.Tensor.addmm,
    )
)


def join_kind(func: Any) -> str:
    """What a join does: a :data:`JOINS` kind, or the function's own name ("where")."""
    name = getattr(func, "__name__", None) or type(func).__name__
    return JOINS.get(name, name.strip("_"))


#: the functions of a softmax, as the mode sees them called
SOFTMAX = frozenset(
    (torch.softmax, torch.Tensor.softmax, torch.nn.functional.softmax, torch.special.softmax)
)
#: how far back (ops of the same call) a written-out attention's product of the weights and
#: the values looks for the softmax: past a dropout, a dtype cast, a reshape
_ATTENTION_REACH = 8


def join_kinds(
    joins: dict[int, Any],
    softmaxes: set[int],
    owners: Sequence[int],
    parents: Sequence[tuple[int, ...]],
    call_parents: Sequence[int] = (),
) -> tuple[tuple[int, str], ...]:
    """Each join op with what it does (:func:`join_kind`), a written-out attention named
    ``"attention"``: a matrix product one of whose operands comes, through ops of its own
    call (or of calls within it: GPT-2's eager attention runs its weights through its
    ``attn_dropout`` module) only, from a softmax (``softmax(q @ k.T * scale + mask) @ v``,
    as BERT's, T5's and every eager attention writes it; ``F.scaled_dot_product_attention``
    is named by its function). Walks at most :data:`_ATTENTION_REACH` ops back per operand.
    ``call_parents``: per call, the call it ran in (-1: the model's body).

    >>> import torch
    >>> join_kinds({2: torch.matmul, 4: torch.matmul}, {3}, [0] * 5, [(), (), (0, 1), (2,), (3, 1)])
    ((2, 'matmul'), (4, 'attention'))
    """
    kinds = {op: join_kind(func) for op, func in joins.items()}

    def weights(op: int, start: int) -> bool:  # a softmax of op's call at or before start
        seen, todo = {start}, [start]
        while todo and len(seen) <= _ATTENTION_REACH:
            at = todo.pop()
            if at in softmaxes:
                return True
            for p in parents[at]:
                if p not in seen and ran_within(call_parents, owners[p], owners[op]):
                    seen.add(p)
                    todo.append(p)
        return False

    def kind_of(op: int, kind: str) -> str:
        mine = [p for p in parents[op] if ran_within(call_parents, owners[p], owners[op])]
        return "attention" if kind == "matmul" and any(weights(op, p) for p in mine) else kind

    return tuple((op, kind_of(op, kind)) for op, kind in kinds.items())
