"""One attention map again, at full resolution over a window: for zooming into a long
sequence's map beyond what the run kept (block means past 512 positions).

The model runs again on the same inputs under :class:`WindowMode`; the attention ops of the
chosen module call (and of the calls inside it) go to an :class:`.AttentionRecorder`, as in the
traced run, so the maps of that call come in the same order; when the ``entry``-th of them is
made by ``F.scaled_dot_product_attention``, its probabilities over ``window`` are made from the
call's own arguments, exact (:func:`.probabilities.sdpa_map` with a window). Other sources
(``nn.MultiheadAttention``, a hand-written softmax) are not made again: :attr:`WindowMode.why`
says so.

    >>> import torch, torch.nn.functional as F
    >>> q = torch.randn(1, 2, 600, 8)
    >>> with WindowMode(lambda: 0, calls={0}, call=0, entry=0, window=(10, 20, 0, 30)) as mode:
    ...     out = F.scaled_dot_product_attention(q, q, q, is_causal=True)
    >>> mode.map.weights.shape, mode.map.pool
    ((2, 10, 30), (1, 1))
"""

from __future__ import annotations

from collections.abc import Callable, Collection
from typing import Any

import torch.nn.functional as F
from torch.overrides import TorchFunctionMode

from .handlers import sdpa_arguments
from .maps import AttentionMap, DeviceMap
from .probabilities import sdpa_inputs, sdpa_map
from .recorder import AttentionRecorder

__all__ = ["WindowMode"]


class WindowMode(TorchFunctionMode):
    """Records the attention of module calls ``calls`` (call ``call`` and those inside it) and
    makes map ``entry`` of call ``call`` exact over ``window`` = (q0, q1, k0, k1): then
    :attr:`map` (an AttentionMap of the window's rows and columns, pool (1, 1)), else
    :attr:`why` says why not."""

    def __init__(
        self,
        current_call: Callable[[], int],
        *,
        calls: Collection[int],
        call: int,
        entry: int,
        window: tuple[int, int, int, int],
        sample: int = 0,
    ) -> None:
        super().__init__()
        self.recorder = AttentionRecorder(current_call, sample=sample)
        self.calls, self.call, self.entry, self.window = calls, call, entry, window
        self.map: AttentionMap | None = None
        self.why = f"the run made no attention map {entry} in this stage"

    def __torch_function__(
        self, func: Any, types: Any, args: tuple = (), kwargs: dict | None = None
    ) -> Any:
        kwargs = kwargs or {}
        result = func(*args, **kwargs)
        rec = self.recorder
        if func not in rec.watched or self.map is not None:
            return result
        current = rec.current_call()
        if current not in self.calls:
            return result
        before = len(rec.maps.get(self.call, ()))
        rec.observe(func, args, kwargs, result)
        if current == self.call and before == self.entry < len(rec.maps.get(self.call, ())):
            self._make(func, args, kwargs)
        return result

    def _make(self, func: Any, args: tuple, kwargs: dict) -> None:
        if func is not F.scaled_dot_product_attention:
            self.why = (
                f"this map comes from {getattr(func, '__name__', func)}; only "
                "scaled_dot_product_attention maps are made again at full resolution"
            )
            return
        q, k, mask, (is_causal, scale, enable_gqa, packed) = sdpa_arguments(args, kwargs)
        if packed > 1:
            self.why = "its queries are packed grouped-query heads (one position: nothing to zoom)"
            return
        inputs = sdpa_inputs(
            q,
            k,
            attn_mask=mask,
            is_causal=is_causal,
            scale=scale,
            enable_gqa=enable_gqa,
            sample=self.recorder.sample,
            max_exact=max(q.shape[-2], k.shape[-2]),
        )
        made = sdpa_map(inputs, self.window)
        if isinstance(made, DeviceMap):  # (made on a GPU: brought over now, once)
            made.arrived([t.cpu().numpy() for t in made.tensors or ()])
        self.map = made.resolve()

    def __exit__(self, exc_type: Any, exc_value: Any, traceback: Any) -> Any:
        try:
            return super().__exit__(exc_type, exc_value, traceback)
        finally:
            self.recorder.forget()
