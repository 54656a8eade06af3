"""neural_flow_widget: a live, zoomable flow graph of a PyTorch network, and what flowed through it.

>>> import torch, neural_flow_widget as nfw
>>> flow = nfw.trace(torch.nn.Sequential(torch.nn.Linear(4, 2)), torch.ones(1, 4))
>>> print(flow.to_text().splitlines()[0])
Sequential — 1 stages, 2 edges, topology: dataflow
"""

from .compare import Comparison, StageDifference, compare
from .graph import Edge, Flow, GradientFlow, Stage, TraceError
from .patching import Patching, patch
from .run import trace
from .tracing.interventions import heads

__all__ = [
    "Comparison",
    "Edge",
    "Flow",
    "GradientFlow",
    "NeuralFlowWidget",
    "Patching",
    "Stage",
    "StageDifference",
    "TraceError",
    "compare",
    "heads",
    "patch",
    "trace",
]
__version__ = "0.1.0"


def __getattr__(name: str):
    # The widget pulls in anywidget / ipywidgets; the tracing core never does.
    if name == "NeuralFlowWidget":
        from .notebook import NeuralFlowWidget

        return NeuralFlowWidget
    raise AttributeError(f"module 'neural_flow_widget' has no attribute {name!r}")
