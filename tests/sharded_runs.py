"""What each rank of tests/test_distributed.py runs: models sharded over a 2-rank gloo CPU mesh
(tensor parallelism, FSDP2), traced on every rank; each rank writes what it saw to a JSON file
that the test reads (the parent process holds the oracles)."""

from __future__ import annotations

import datetime
import json
import pathlib

import torch
import torch.nn.functional as F
from torch import nn

WIDTH, HIDDEN = 8, 16


class FollowedLinear(nn.Linear):
    """A Linear with a forward of its own: the tracer follows its ops one by one (an
    ``nn.Linear`` is an opaque leaf, recorded as one op with the tracer lifted off)."""

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return F.linear(x, self.weight, self.bias)


class ResidualMLP(nn.Module):
    """``x + down(act(up(x)))``: the residual skip runs from the input to the add."""

    def __init__(self) -> None:
        super().__init__()
        self.up = nn.Linear(WIDTH, HIDDEN)
        self.act = nn.GELU()
        self.down = FollowedLinear(HIDDEN, WIDTH)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x + self.down(self.act(self.up(x)))


class TwoBlocks(nn.Module):
    """``head(b(a(x)))`` of two residual MLPs (what FSDP2 shards, block by block)."""

    def __init__(self) -> None:
        super().__init__()
        self.a, self.b, self.head = ResidualMLP(), ResidualMLP(), nn.Linear(WIDTH, 3)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.head(self.b(self.a(x)))


def made(kind: type[nn.Module]) -> nn.Module:
    torch.manual_seed(0)
    return kind()


def inputs() -> torch.Tensor:
    return torch.randn(2, WIDTH, generator=torch.Generator().manual_seed(1))


def _summaries(flow) -> dict:
    found = {}
    for stage in (*flow.stages, *(s for s in flow.outputs)):
        sid = stage if isinstance(stage, str) else stage.id
        found[sid] = [
            {
                "shape": list(s.shape),
                "min": s.min,
                "max": s.max,
                "mean": s.mean,
                "std": s.std,
                "shard": s.shard,
                "error": s.error,
            }
            for s in flow.summary(sid)
        ]
    return found


def _record(flow) -> dict:
    return {
        "edges": [[e.src, e.dst, e.kind] for e in flow.edges],
        "topology": flow.topology,
        "errors": {s.id: s.error for s in flow.stages if s.error},
        "summaries": _summaries(flow),
        "notes": list(flow.notes),
    }


def LOSS(out: torch.Tensor) -> torch.Tensor:
    return out.pow(2).sum()


def _param_grads(flow) -> dict[str, list]:
    """Each stage's parameters' gradients: [mean, L2 norm, shard] by qualified name."""
    found = {}
    for stage in flow.stages:
        for name, s in flow.param_grads(stage.id).items():
            found[name] = [s.mean, s.norm, s.shard]
    return found


def _local_values(model: nn.Module) -> dict[str, list]:
    return {n: p.to_local().tolist() for n, p in model.named_parameters()}  # type: ignore[operator]


def rank_main(rank: int, ranks: int, out: str, store: str) -> None:
    """One rank: trace a tensor-parallel residual MLP (full and local summaries, and a backward
    pass) and an FSDP2 model; write what was seen to ``out/rank{rank}.json``."""
    import torch.distributed as dist
    from torch.distributed.device_mesh import init_device_mesh
    from torch.distributed.fsdp import fully_shard
    from torch.distributed.tensor.parallel import (
        ColwiseParallel,
        RowwiseParallel,
        parallelize_module,
    )

    import neural_flow_widget as nfw
    from neural_flow_widget.notebook.replies import stage_reply
    from neural_flow_widget.run import attention_window

    dist.init_process_group(
        "gloo",
        init_method=f"file://{store}",
        rank=rank,
        world_size=ranks,
        timeout=datetime.timedelta(seconds=120),
    )
    try:
        mesh = init_device_mesh("cpu", (ranks,))
        x = inputs()
        seen: dict = {"rank": rank}

        tp = made(ResidualMLP)
        parallelize_module(tp, mesh, {"up": ColwiseParallel(), "down": RowwiseParallel()})
        with torch.no_grad():
            before_out = tp(x).tolist()
        before = _local_values(tp)
        flow = nfw.trace(tp, x)
        seen["tp"] = _record(flow)
        seen["tp_local"] = _record(nfw.trace(tp, x, shards="local"))
        grads = nfw.trace(tp, x, loss=LOSS)
        seen["tp_grad"] = {
            s.id: [[g.mean, g.shard] for g in grads.grad(s.id)] for s in grads.stages
        }
        seen["tp_param_grads"] = _param_grads(grads)
        replaced = nfw.trace(tp, x, replace={"up": "zero"})  # (on every rank, as the view says)
        seen["tp_replaced"] = _record(replaced)["summaries"]
        with torch.no_grad():
            seen["tp_unchanged"] = _local_values(tp) == before and tp(x).tolist() == before_out
        seen["tp_grads_left"] = [n for n, p in tp.named_parameters() if p.grad is not None]
        nan = nfw.trace(tp, torch.full_like(x, float("nan")))
        seen["nan"] = {"nonfinite": list(nan.nonfinite), "notes": list(nan.notes)}
        if rank == 0:  # what the widget on rank 0 is sent when "up" is clicked; a zoom;
            # and its offline page (tests/test_distributed.py opens it in Chromium)
            reply, _ = stage_reply(flow, {"stage": "up"})
            seen["reply_up"] = reply["summaries"][0]["shard"]  # type: ignore[typeddict-item]
            seen["zoom"] = attention_window(tp, x, flow, "up", 0, (0, 1, 0, 1))
            widget = nfw.NeuralFlowWidget.from_flow(flow)
            widget.to_html(pathlib.Path(out, "tp.html"))
            sent: list = []  # (what the view's context menu would be answered)
            widget.send = lambda message, buffers=None: sent.append(message)  # type: ignore[method-assign]
            widget._on_message(widget, {"type": "intervene", "stage": "up", "spec": "zero"}, [])
            seen["intervened"] = sent

        fsdp = made(TwoBlocks)
        for block in (fsdp.a, fsdp.b, fsdp):
            fully_shard(block, mesh=mesh)
        seen["fsdp"] = _record(nfw.trace(fsdp, x))
        fsdp_grads = nfw.trace(fsdp, x, loss=LOSS)  # (without keep_grads: .grad left as it was)
        seen["fsdp_grad"] = {s.id: fsdp_grads.grad(s.id)[0].mean for s in fsdp_grads.stages}
        seen["fsdp_param_grads"] = _param_grads(fsdp_grads)
        seen["fsdp_grads_left"] = [n for n, p in fsdp.named_parameters() if p.grad is not None]
        kept = nfw.trace(fsdp, x, loss=LOSS, keep_grads=True)
        seen["fsdp_kept_param_grads"] = _param_grads(kept)
        seen["fsdp_grads_kept"] = [n for n, p in fsdp.named_parameters() if p.grad is not None]
        pathlib.Path(out, f"rank{rank}.json").write_text(json.dumps(seen), encoding="utf-8")
    finally:
        dist.destroy_process_group()
