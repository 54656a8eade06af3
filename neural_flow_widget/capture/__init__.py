"""Capture: what each stage's output leaves behind, reduced inside the call on its own device.

Summaries (:mod:`.summary`), bounded retained copies for views (:mod:`.retained`, pooled by
:mod:`.pooling`), both made by one of two implementations (:mod:`.reduction`: the torch path
on every device, the optional compiled CPU path of :mod:`.accelerator`); views rendered from
them (:mod:`.views`), attention maps (:mod:`.attention`), the observer of one run
(:mod:`.observer`) and its record (:mod:`.record`), keyed by call index. Builds on
:mod:`neural_flow_widget.graph` and sees the tracer only through
:mod:`neural_flow_widget.tracing.protocols`.
"""

from .observer import CaptureObserver, CaptureSettings
from .record import Capture, Captured

__all__ = ["Capture", "CaptureObserver", "CaptureSettings", "Captured"]
