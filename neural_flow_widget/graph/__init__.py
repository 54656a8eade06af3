"""The closed record of one run, with no torch: stages, edges, the op graph and the Flow, the
edge walk that recovers stage edges from the op graph, and the stage selection.

Nothing here imports torch or any other part of the package; everything else builds on it.
"""

from .condense import condense
from .edges import edges_for, sequential_edges, stage_edges
from .errors import TraceError
from .flow import Flow
from .gradients import EXPLODING, VANISHING, GradientFlow
from .origin import NonfiniteOrigin
from .reading import CaptureRecord, GradientRecord
from .records import (
    EDGE_KINDS,
    TOPOLOGIES,
    Edge,
    EdgeKind,
    Failure,
    ModuleInfo,
    OpGraph,
    Stage,
    Topology,
)
from .selection import resolve

__all__ = [
    "EDGE_KINDS",
    "EXPLODING",
    "TOPOLOGIES",
    "VANISHING",
    "CaptureRecord",
    "Edge",
    "EdgeKind",
    "Failure",
    "Flow",
    "GradientFlow",
    "GradientRecord",
    "ModuleInfo",
    "NonfiniteOrigin",
    "OpGraph",
    "Stage",
    "Topology",
    "TraceError",
    "condense",
    "edges_for",
    "resolve",
    "sequential_edges",
    "stage_edges",
]
