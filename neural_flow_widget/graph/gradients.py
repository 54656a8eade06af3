"""Where gradients vanish or explode: the norms of the gradient along a run's trunk.

The *trunk* is the chain of flow edges from the model's first output back to an input (each
stage's primary input: the stream a U-Net, a ResNet or a transformer carries). Walking it
from the loss's end back to the input, a gradient whose norm falls below
:data:`VANISHING` times its norm at the trunk's last stage (the one nearest the loss) has
*vanished* there: updates to the stages before it are that much smaller than to the last; one
above :data:`EXPLODING` times it has *exploded*. Three orders of magnitude either way is far
beyond what initialisation and normalisation keep a healthy network within, and well inside
what a deep plain sigmoid network reaches (each sigmoid scales the gradient by at most 1/4).

No torch here: the norms come from the run's capture record (``Flow.grad``).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Literal

from .records import Edge

__all__ = ["EXPLODING", "VANISHING", "GradientFlow", "trunk"]

VANISHING = 1e-3  # a trunk gradient below this fraction of its size at the loss has vanished
EXPLODING = 1e3  # one above this multiple has exploded


@dataclass(frozen=True, slots=True)
class GradientFlow:
    """The gradient's L2 norm along the trunk, input side first, and what it does there."""

    stages: tuple[str, ...]  # the trunk's stages that a gradient reached, input side first
    norms: tuple[float, ...]  # the norm of each one's gradient
    kind: Literal["healthy", "vanishing", "exploding"]
    at: str | None  # the stage nearest the loss where it crossed the threshold (None: healthy)
    ratio: float  # the gradient's norm at the input end over its norm at the loss end

    def describe(self) -> str:
        """In words, as the banner says it."""
        if self.kind == "healthy" or self.at is None:
            return (
                f"gradients flow: along the {len(self.stages)} stages of the trunk the gradient's "
                f"norm stays within 1000x of its size at the loss (input end / loss end: "
                f"{self.ratio:.2g})"
            )
        limit = VANISHING if self.kind == "vanishing" else EXPLODING
        return (
            f"the gradient {'vanishes' if self.kind == 'vanishing' else 'explodes'}: by stage "
            f"{self.at!r} its norm is {'below' if self.kind == 'vanishing' else 'above'} "
            f"{limit:g}x its size at the loss (input end / loss end: {self.ratio:.2g})"
        )


def trunk(edges: Sequence[Edge], output: str) -> list[str]:
    """The trunk ending at ``output``: from it, back through each node's flow edge, to a node
    with none (an input); input side first.

    >>> trunk([Edge("input:0", "a", "flow"), Edge("a", "b", "flow"), Edge("input:0", "b", "skip"),
    ...        Edge("b", "output:0", "flow")], "output:0")
    ['input:0', 'a', 'b', 'output:0']
    """
    source = {e.dst: e.src for e in edges if e.kind == "flow"}
    chain, node, seen = [output], output, {output}
    while node in source and source[node] not in seen:
        node = source[node]
        seen.add(node)
        chain.append(node)
    return chain[::-1]


def gradient_flow(
    edges: Sequence[Edge], outputs: Sequence[str], norm: Callable[[str], float | None]
) -> GradientFlow | None:
    """The gradient along the trunk (``norm(node)``: its gradient's norm, None where none
    reached it); None when fewer than two of its stages have one."""
    if not outputs:
        return None
    nodes = [n for n in trunk(edges, outputs[0]) if not n.startswith(("input:", "output:"))]
    found = [(n, v) for n in nodes if (v := norm(n)) is not None]
    if len(found) < 2:
        return None
    stages, norms = zip(*found)
    last = norms[-1]
    ratio = norms[0] / last if last else float("inf")
    kind: Literal["healthy", "vanishing", "exploding"] = "healthy"
    at = None
    for name, value in reversed(found[:-1]):  # from the loss's end back
        if last and value < VANISHING * last:
            kind, at = "vanishing", name
            break
        if (last and value > EXPLODING * last) or (not last and value > 0):
            kind, at = "exploding", name
            break
    return GradientFlow(tuple(stages), tuple(norms), kind, at, ratio)
