"""Compiled code runs eagerly while the model is watched (a trace, a re-run)."""

from __future__ import annotations

import contextlib
import sys
from typing import Any

import torch


def eager() -> Any:
    """Compiled code (``torch.compile``d submodules) runs eagerly during the trace: dynamo
    would otherwise compile the tracer's own wrappers (graph breaks, seconds of compiling).
    Only where dynamo is loaded: without it nothing can be compiled, and setting the stance
    would import it (some 75 MiB of the process's memory, for every user)."""
    set_stance = getattr(torch.compiler, "set_stance", None)  # (torch >= 2.6)
    if set_stance is None or "torch._dynamo" not in sys.modules:
        return contextlib.nullcontext()
    return set_stance("force_eager")
