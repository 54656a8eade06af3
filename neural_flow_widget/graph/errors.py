"""Errors that name the place and the fix."""

from __future__ import annotations

from typing import Any


class TraceError(RuntimeError):
    """The model raised while it was traced.

    ``stage`` is the id of the selected stage that was running, ``module`` the qualified name of
    the innermost module, and ``partial`` the Flow of everything that ran before the error (the
    failing stage carries the error in its ``error`` field).
    """

    def __init__(self, message: str, *, partial: Any, stage: str | None, module: str | None):
        super().__init__(message)
        self.partial = partial
        self.stage = stage
        self.module = module
