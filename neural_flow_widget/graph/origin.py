"""Where a run's first NaN / Inf was made, when no stage made it: the op, the module whose
forward ran it, and the line of the user's code where the tracer saw it.

``flow.nonfinite`` lists the calls whose output held NaN or +/-Inf, the first where it
appeared. When that first call's *input* already held it, the values were made between
stages, in a parent's own ``forward`` (``x = x / (x - x)`` between ``block3`` and
``block4``); :class:`NonfiniteOrigin` says where. Plain data, no torch (the tracing side,
``tracing/origin.py``, finds it).

>>> origin = NonfiniteOrigin(
...     op="torch.Tensor.__truediv__", module="", type="ConvNet", function="ConvNet.forward",
...     file="model.py", line=12, text="x / (x - x)", before="block3", after="block4")
>>> origin.describe()
'produced between block3 and block4, in ConvNet.forward (line 12: x / (x - x))'
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class NonfiniteOrigin:
    """The op that made the NaN / Inf that the first call of ``flow.nonfinite`` received."""

    op: str  # the torch function that made it, e.g. "torch.Tensor.__truediv__"
    module: str  # qualified name of the module whose forward ran it ("": the model itself)
    type: str  # that module's class name
    function: str  # the function of the user's code that called the op ("ConvNet.forward")
    file: str  # its source file ("" when unknown)
    line: int  # the line in ``file`` (0 when unknown)
    text: str  # the source of the op's expression (or its whole line; "" when unknown)
    before: str | None  # the call id that returned last in that forward before the op
    after: str | None  # the call id in that forward that received the values next

    def describe(self) -> str:
        """``produced between A and B, in Owner.forward (line N: text)``, as far as known."""
        if self.before and self.after:
            where = f" between {self.before} and {self.after}"
        elif self.after:
            where = f" before {self.after}"
        elif self.before:
            where = f" after {self.before}"
        else:
            where = ""
        by = "" if self.text else f" by {self.op}"
        owner = f"{self.module} ({self.type})" if self.module else self.type
        function = self.function or f"{self.type}.forward"
        inside = "" if function.startswith(self.type + ".") else f", run by {owner}'s forward"
        if self.line and self.text:
            source = f" (line {self.line}: {self.text})"
        elif self.line:
            source = f" (line {self.line})"
        else:
            source = ""
        return f"produced{by}{where}, in {function}{source}{inside}"
