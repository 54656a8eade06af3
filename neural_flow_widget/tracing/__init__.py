"""Watching a forward pass: the TorchFunctionMode dataflow tracer, module-call tracking,
opaque leaf modules, the torch.fx alternative, and helpers for nested containers of tensors.

Builds on :mod:`neural_flow_widget.graph` (the records it fills); knows nothing of capture,
which observes a run through the contract of :mod:`.protocols`.
"""

from .calls import CallRecord, CallTracker
from .dataflow import DataflowTracer, TagTable
from .fx import FxUnavailable, regraph_with_fx, with_fx_edges
from .modules import dtype_name
from .opaque import is_opaque, register
from .protocols import OpObserver, OutputObserver, RunObserver, Watch, WriteLog
from .pytree import among, leaves, map_tensors, output_leaves, tensors_in

__all__ = [
    "CallRecord",
    "CallTracker",
    "DataflowTracer",
    "FxUnavailable",
    "OpObserver",
    "OutputObserver",
    "RunObserver",
    "TagTable",
    "Watch",
    "WriteLog",
    "among",
    "dtype_name",
    "is_opaque",
    "leaves",
    "map_tensors",
    "output_leaves",
    "register",
    "regraph_with_fx",
    "tensors_in",
    "with_fx_edges",
]
