"""Capture in the traced run: each call's output is reduced as the call returns.

:class:`CaptureObserver` is the run's :class:`~neural_flow_widget.tracing.protocols.
RunObserver`: the call tracker hands it each call's output inside the call, with every
``__torch_function__`` handler off, so summary ops never enter the graph; the reductions
(:mod:`.reduction`: the torch path, or the compiled CPU path) run on the output's own device
and leave small results there. Its attention recorder sees the attention ops through the
dataflow tracer (or the run context's own mode). :meth:`CaptureObserver.finish` brings the
results to the host after the pass (one transfer per device) and returns the run's
:class:`~.record.Capture`, keyed by call index. A tensor object that several calls return
(a ``Sequential`` and its last child) is reduced once.
"""

from __future__ import annotations

import weakref
from dataclasses import dataclass

import torch

from ..tracing.protocols import Watch
from . import accelerator
from .attention import AttentionRecorder
from .attention.budget import DEFAULT_ATTENTION_BUDGET, fit_budget
from .attention.maps import DeviceMap, MapEntry
from .host import Pending, to_host
from .meaning import PendingMeaning, read_input, read_output
from .readout import READOUT_BUDGET
from .record import META, Capture, Captured, Gradients, Lazy, leaves_of
from .reduction import Reduction, reduce_on_device, without_data
from .retained import DEFAULT_BUDGET_BYTES
from .sharded import Sharded, describe, is_sharded, note, sharding_of

__all__ = ["CaptureObserver", "CaptureSettings"]

_READOUTS_FULL = (
    "readouts: the hidden states kept for them reached their budget, so later blocks have no "
    "readout"
)


@dataclass(frozen=True, slots=True)
class CaptureSettings:
    """What ``trace(capture=True)`` was asked to keep."""

    sample: int = 0  # the batch sample that views and attention maps show
    budget_bytes: int | None = None  # bytes kept per leaf for views (None: the default)
    attention: bool = True  # record attention maps
    attention_budget: int | None = DEFAULT_ATTENTION_BUDGET  # bytes all maps may hold
    gradients: bool = False  # reduce each output's gradient in the backward pass too
    readout_dim: int | None = None  # keep blocks' (N, L, D) outputs of this D for readouts
    shards: str = "full"  # a DTensor's summary: "full" (gathered after the pass) or "local"


class CaptureObserver:
    """Collects the reductions of one run while the model runs (see the module docstring)."""

    mode = None  # (no TorchFunctionMode of its own: the tracer or the context feeds ``ops``)

    def __init__(self, settings: CaptureSettings, watch: Watch) -> None:
        self.settings, self.writes, self.watch = settings, watch.writes, watch
        self.hidden: dict[int, torch.Tensor] = {}  # call -> its output at the sample (readouts)
        self._hidden_bytes = 0
        self.budget = settings.budget_bytes or DEFAULT_BUDGET_BYTES
        self.outputs: dict[int, list[tuple[str, Reduction]]] = {}
        self.failures: dict[int, str] = {}  # call -> why its capture failed
        self.ends: dict[str, Reduction] = {}  # model input / output node -> reduced
        self.readings: dict[str, PendingMeaning] = {}  # node -> its reading
        self.end_failures: dict[str, str] = {}
        self._memo: dict[int, tuple[weakref.ref, int, Reduction]] = {}
        self._notes: dict[str, None] = {}  # (in order, each once)
        #: the backward pass: per call (or model end), per output leaf, the gradient reduced
        #: and its L2 norm (a 0-d tensor on its device); calls in the order their gradient came
        self.grads: dict[int | str, dict[int, tuple[str, Reduction, torch.Tensor]]] = {}
        self.grad_order: list[int | str] = []
        #: per parameter, its gradient's summary and L2 norm (a float where the compiled path
        #: made both in one pass)
        self.param_grads: dict[str, tuple[Reduction, torch.Tensor | float]] = {}
        self._grad_scale = 1.0  # the float16 scale of the last gradient (the next one's guess)
        self._hooked: dict[tuple[int, int], list[tuple[int | str, int, str]]] = {}
        self._fast = accelerator.reducer()  # None: torch ops only
        self._gathers: list[Sharded] = []  # DTensor leaves to gather after the pass, in order
        self.ops: AttentionRecorder | None = None
        if settings.attention:
            # with the tracer, the maps of SDPA calls are made when first asked for, from
            # copies of the query and key (held until the pass is over)
            self.ops = AttentionRecorder(
                watch.current, sample=settings.sample, lazy=True, writes=watch.writes
            )

    def close(self) -> None:
        """The pass is over (whatever happened): let go of the tensors the run held."""
        self._memo.clear()
        if self.ops is not None:
            self.ops.forget()

    def on_output(self, call: int, leaves: list[tuple[str, torch.Tensor]]) -> None:
        """A call returned: reduce each tensor leaf of its output."""
        writes, memo = self.writes, self._memo
        try:
            kept = []
            for leaf, tensor in leaves:
                # The same tensor object returned by several calls (a Sequential and its last
                # child, an eval-mode Dropout) is reduced once, unless an in-place op wrote
                # to it in between. Without a tracer to see such writes nothing is shared.
                if writes is not None:
                    entry = memo.get(id(tensor))
                    if (
                        entry is not None
                        and entry[0]() is tensor
                        and not writes.written_since(tensor, entry[1])
                    ):
                        kept.append((leaf, entry[2]))
                        continue
                made = self._reduce(tensor)
                if writes is not None:
                    memo[id(tensor)] = (weakref.ref(tensor), writes.seq, made)
                kept.append((leaf, made))
            self.outputs[call] = kept
            if self.settings.readout_dim is not None and leaves:
                self._keep_hidden(call, leaves[0][1])
            if self.settings.gradients:
                for i, (leaf, tensor) in enumerate(leaves):
                    self._hook(call, i, leaf, tensor)
        except Exception as error:  # never abort the run: mark the stage instead
            self.failures[call] = f"capture failed: {type(error).__name__}: {error}"

    def on_end(self, node: str, tensor: torch.Tensor, output: bool) -> None:
        """A model input (before the forward) or output (after it): reduce it like a stage's
        output, and read what it means (:mod:`.meaning`)."""
        try:
            self.ends[node] = self._reduce(tensor)
            if self.settings.gradients:
                self._hook(node, 0, node.partition(":")[2], tensor)
            read = read_output if output else read_input
            meaning = None if is_sharded(tensor) else read(tensor, node, self.settings.sample)
            if meaning is not None:
                self.readings[node] = meaning
        except Exception as error:  # never abort the run: mark the node instead
            self.end_failures[node] = f"capture failed: {type(error).__name__}: {error}"

    def _keep_hidden(self, call: int, tensor: torch.Tensor) -> None:
        """Keep a block's output at the sample, whole, for readouts (:mod:`.readout`): an
        ``(N, L, D)`` float tensor of the model's hidden size, of a call that is not a leaf,
        while the run's readout budget lasts."""
        shape = tensor.shape
        if (
            is_sharded(tensor)  # (a DTensor's slice may be a collective: not kept)
            or len(shape) != 3
            or shape[-1] != self.settings.readout_dim
            or not tensor.is_floating_point()
            or self.watch.calls[call].module in self.watch.leaves
        ):
            return
        size = shape[1] * shape[2] * tensor.element_size()
        if self._hidden_bytes + size > READOUT_BUDGET:
            self._notes.setdefault(_READOUTS_FULL, None)
            return
        sample = min(self.settings.sample, shape[0] - 1)
        self.hidden[call] = tensor[sample].detach().clone()
        self._hidden_bytes += size

    def _hook(self, key: int | str, i: int, leaf: str, tensor: torch.Tensor) -> None:
        """Reduce ``tensor``'s gradient when the backward pass reaches it. One hook per tensor
        and autograd node: a tensor that several calls return (a Sequential and its last
        child) is reduced once for all of them; after an in-place op (a new node), again."""
        if not tensor.requires_grad or not (tensor.is_floating_point() or tensor.is_complex()):
            return
        node = (id(tensor), id(tensor.grad_fn))
        takers = self._hooked.get(node)
        if takers is not None:
            takers.append((key, i, leaf))
            return
        takers = self._hooked[node] = [(key, i, leaf)]

        def reached(grad: torch.Tensor) -> None:
            with torch.no_grad():
                reduced = self._reduce(grad, self._grad_scale)
                self._grad_scale = getattr(reduced, "scale", self._grad_scale)
                norm = _norm(grad.detach())
            for taker, index, name in takers:
                if taker not in self.grads:
                    self.grads[taker] = {}
                    self.grad_order.append(taker)
                self.grads[taker][index] = (name, reduced, norm)

        tensor.register_hook(reached)

    def on_param_grads(self, grads: list[tuple[str, torch.Tensor]]) -> None:
        """The model's parameters' gradients (after the backward pass): each reduced."""
        with torch.no_grad():
            for name, grad in grads:
                if is_sharded(grad):  # (FSDP2, tensor parallelism: a DTensor's gradient)
                    self.param_grads[name] = (self._sharded(grad), _norm(grad))
                    continue
                flat = self._fast.flat(grad) if self._fast is not None else None
                if flat is not None:  # (the summary and the norm in one pass)
                    self.param_grads[name] = (flat, flat.norm)
                    continue
                norm = torch.linalg.vector_norm(grad.reshape(-1).float(), 2)
                summary = reduce_on_device(grad, sample=0, budget=0, views=False)
                self.param_grads[name] = (summary, norm)

    def _reduce(self, tensor: torch.Tensor, hint: float = 1.0) -> Reduction:
        if type(tensor) is not torch.Tensor and is_sharded(tensor):
            return self._sharded(tensor)
        if tensor.is_meta:  # shapes without values: nothing failed, there is nothing to read
            self._notes.setdefault(META, None)
            return without_data(tensor)
        if self._fast is not None:  # float32 images and sequences on the CPU
            fast = self._fast.reduce(tensor, self.settings.sample, self.budget, hint)
            if fast is not None:
                return fast
        return reduce_on_device(tensor, sample=self.settings.sample, budget=self.budget)

    def _sharded(self, tensor: torch.Tensor) -> Sharded:
        """A DTensor leaf (:mod:`.sharded`): its local shard reduced now (``shards="local"``,
        or replicated), or the DTensor kept to be gathered after the pass."""
        layout = sharding_of(tensor)
        full = self.settings.shards == "full"
        self._notes.setdefault(note(layout.ranks, full), None)
        words = describe(layout, full)
        if layout.replicated or not full:
            return Sharded(words, made=self._reduce(tensor.to_local()))  # type: ignore[attr-defined]
        kept = Sharded(words, tensor=tensor)
        self._gathers.append(kept)
        return kept

    def gather(self) -> None:
        """Gather the DTensor leaves kept in the pass and reduce them (:mod:`.sharded`): a
        collective each, in the order the pass met them, on every rank."""
        gathers, self._gathers = self._gathers, []
        for kept in gathers:
            kept.gather(self._reduce)

    def finish(self) -> Capture:
        """The run's record, once its small results reached the host (one transfer per
        device); each leaf's records are made on first read. DTensor leaves kept in the pass
        are gathered first (:meth:`gather`)."""
        self.gather()
        reductions = [r for items in self.outputs.values() for _, r in items]
        reductions += self.ends.values()
        recorder = self.ops
        maps: dict[int, list[MapEntry]] = dict(recorder.maps) if recorder is not None else {}
        waiting: list[Pending] = [p for r in reductions for p in r.waiting()]
        waiting += [m for entries in maps.values() for m in entries if isinstance(m, DeviceMap)]
        to_host(waiting)  # (one transfer per device for the whole run)
        maps, pooled = fit_budget(maps, self.settings.attention_budget)
        if pooled is not None:
            self._notes.setdefault(pooled, None)
        failures = dict(self.failures)
        for call, errors in (recorder.errors if recorder is not None else {}).items():
            if errors and call >= 0:
                failures.setdefault(call, f"attention map failed: {errors[0]}")
        nonfinite = set()
        for call, items in self.outputs.items():
            if any(r.nonfinite() for _, r in items):
                nonfinite.add(call)
            for _, r in items:
                if r.error is not None:
                    failures.setdefault(call, r.error)
                    break
        ends = {node: [(node.partition(":")[2], r)] for node, r in self.ends.items()}
        grads = self._gradients()
        return Capture(
            outputs=Lazy(self.outputs, _leaves),
            maps=maps,
            failures=failures,
            held_nonfinite=frozenset(nonfinite),
            sample=self.settings.sample,
            notes=tuple(self._notes),
            ends=Lazy(ends, _leaves),
            readings=dict(self.readings),
            end_failures=dict(self.end_failures),
            grads=grads,
        )

    def _gradients(self) -> Gradients | None:
        """The backward pass's record (its results brought to the host together), or None
        when no backward pass ran."""
        if not self.settings.gradients:
            return None
        waiting: list[Pending] = []
        norms: list[torch.Tensor | float] = []
        for per_leaf in self.grads.values():
            for _, reduced, norm in per_leaf.values():
                waiting += reduced.waiting()
                norms.append(norm)
        for reduced, size in self.param_grads.values():
            waiting += reduced.waiting()
            norms.append(size)
        to_host(waiting)
        # (a DTensor's norm, a DTensor scalar: gathered, a collective each, in the same order)
        norms = [n.full_tensor() if is_sharded(n) else n for n in norms]  # type: ignore[union-attr]
        values = iter(_floats(norms))
        leaves = {
            key: [(name, r, next(values)) for _, (name, r, _) in sorted(per_leaf.items())]
            for key, per_leaf in self.grads.items()
        }
        params = {name: (r, next(values)) for name, (r, _) in self.param_grads.items()}
        return Gradients(leaves, tuple(self.grad_order), params)


def _norm(grad: torch.Tensor) -> torch.Tensor:
    """The L2 norm of a gradient, a 0-d tensor on its device (a DTensor's: a DTensor)."""
    flat = grad if is_sharded(grad) else grad.reshape(-1)  # (a DTensor's reshape may gather)
    return torch.linalg.vector_norm(flat.float(), 2)


def _leaves(_key: object, items: list[tuple[str, Reduction]]) -> list[Captured]:
    return leaves_of(items)


def _floats(values: list[torch.Tensor | float]) -> list[float]:
    """0-d tensors (on their devices) and floats, as floats: one transfer per device."""
    found: list[float] = [v if isinstance(v, float) else 0.0 for v in values]
    by_device: dict[torch.device, list[int]] = {}
    for i, v in enumerate(values):
        if isinstance(v, torch.Tensor):
            by_device.setdefault(v.device, []).append(i)
    for at in by_device.values():
        got = torch.stack([values[i] for i in at]).cpu().tolist()  # type: ignore[misc]
        for i, v in zip(at, got):
            found[i] = v
    return found
