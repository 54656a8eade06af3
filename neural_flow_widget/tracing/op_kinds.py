"""What an op does with its tensor arguments, by the name of the torch function: the tracer's
first question about every op (:mod:`.dataflow`), asked once per function.

* ``NORMAL``: reads its tensor arguments and makes its outputs of them;
* ``INPLACE``: writes into its first argument (``x.relu_()``, ``x += y``, ``x[i] = y``);
* ``IGNORE``: reads metadata only and makes no tensor (``x.size()``, ``x.dim()``);
* ``FRESH``: takes its first argument only for the output's shape, dtype and device
  (``torch.zeros_like(x)``, ``x.new_zeros(n)``: the output depends on no value of ``x``);
* ``VALUE``: reads a tensor's value and makes no tensor (``x.item()``, ``bool(x)``): the tracer
  records a read with no output, so that a call reading its input only so still reads it
  (:mod:`neural_flow_widget.graph.reads`).

A ``NORMAL`` op that returns no tensor (``x.dtype``, ``x.device``) or a ``torch.Size`` is
ignored by the tracer after it ran.
"""

from __future__ import annotations

from typing import Any

NORMAL, INPLACE, IGNORE, FRESH, VALUE = 0, 1, 2, 3, 4

_FRESH = frozenset(
    {
        "zeros_like",
        "ones_like",
        "empty_like",
        "full_like",
        "rand_like",
        "randn_like",
        "randint_like",
        "new_zeros",
        "new_ones",
        "new_empty",
        "new_full",
        "new_empty_strided",
        "new_tensor",
    }
)
_VALUE = frozenset(
    {"item", "tolist", "__bool__", "__int__", "__float__", "__index__", "__complex__"}
)
_INPLACE_DUNDERS = frozenset(
    {
        "__setitem__",
        "__iadd__",
        "__isub__",
        "__imul__",
        "__itruediv__",
        "__ifloordiv__",
        "__imod__",
        "__ipow__",
        "__iand__",
        "__ior__",
        "__ixor__",
        "__ilshift__",
        "__irshift__",
        "__imatmul__",
    }
)
_METADATA = frozenset(
    {
        "size",
        "dim",
        "numel",
        "is_contiguous",
        "data_ptr",
        "stride",
        "__len__",
        "element_size",
        "is_floating_point",
        "is_complex",
        "get_device",
        "untyped_storage",
        "__repr__",
        "__format__",
    }
)


def op_kind(func: Any) -> int:
    """The kind of ``func`` (see the module doc)."""
    name = getattr(func, "__name__", "")
    if name in _FRESH:
        return FRESH
    if name in _VALUE:
        return VALUE
    if name in _INPLACE_DUNDERS or (name.endswith("_") and not name.endswith("__")):
        return INPLACE
    if name in _METADATA:
        return IGNORE
    return NORMAL
