"""Capture: what each stage's output leaves behind, reduced inside the call on its own device.

Summaries (:mod:`.summary`), bounded retained copies for views (:mod:`.retained`, pooled by
:mod:`.pooling`), views rendered from them (:mod:`.views`), attention maps
(:mod:`.attention`), and the state of one run (:mod:`.state`). Builds on
:mod:`neural_flow_widget.graph` and sees the tracer only through
:mod:`neural_flow_widget.tracing.protocols`.
"""

from .state import Capture, Captured, CaptureState

__all__ = ["Capture", "CaptureState", "Captured"]
