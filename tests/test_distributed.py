"""Models sharded over two CPU processes (gloo): a tensor-parallel residual MLP
(``ColwiseParallel`` / ``RowwiseParallel``) and an FSDP2 model (``fully_shard``), traced on each
rank (tests/sharded_runs.py runs the ranks). The oracles: the edges derived by hand from the
models' code, and the plain model's own tensors, computed here with torch (not by the tracer).
"""

from __future__ import annotations

import json
import pathlib
import sys
import time

import pytest
import sharded_runs as runs
import torch
import torch.nn.functional as F

dist = pytest.importorskip("torch.distributed")
if not dist.is_available() or not dist.is_gloo_available():
    pytest.skip("needs torch.distributed with gloo", allow_module_level=True)

pytestmark = pytest.mark.slow  # (two processes that import torch: seconds)

RANKS = 2
HALF = runs.HIDDEN // RANKS

# x + down(act(up(x))): the chain, and the residual's skip from the input to the add
TP_EDGES = [
    ["input:0", "up", "flow"],
    ["up", "act", "flow"],
    ["act", "down", "flow"],
    ["input:0", "output:0", "skip"],
    ["down", "output:0", "flow"],
]
# head(b(a(x))): b reads x + a.down(..) (a.down, and x as a skip); head reads that + b.down(..)
# (b.down, and a.down as a skip; x is carried on by a.down, graph/edges.py rule 5)
FSDP_EDGES = [
    ["input:0", "a.up", "flow"],
    ["a.up", "a.act", "flow"],
    ["a.act", "a.down", "flow"],
    ["input:0", "b.up", "skip"],
    ["a.down", "b.up", "flow"],
    ["b.up", "b.act", "flow"],
    ["b.act", "b.down", "flow"],
    ["a.down", "head", "skip"],
    ["b.down", "head", "flow"],
    ["head", "output:0", "flow"],
]


@pytest.fixture(scope="module")
def ranks(tmp_path_factory) -> pathlib.Path:
    """The folder the ranks wrote to (they run once for every test here). A rank killed by a
    signal is run again once, in a fresh folder: gloo on a loaded machine has aborted a rank
    ("terminate called without an active exception", SIGABRT) before any of our code failed;
    an error of ours raises in the rank, the same each time, and fails at once."""
    import torch.multiprocessing as mp

    for attempt in range(2):
        out = tmp_path_factory.mktemp("ranks")
        try:
            _run_ranks(mp, out)
            return out
        except mp.ProcessExitedException as err:
            if attempt or not err.signal_name:
                raise
    raise AssertionError("unreachable")


def _run_ranks(mp, out: pathlib.Path) -> None:
    context = mp.start_processes(
        runs.rank_main,
        args=(RANKS, str(out), str(out / "store")),
        nprocs=RANKS,
        join=False,
        start_method="spawn",
    )
    deadline = time.monotonic() + 300
    while not context.join(timeout=5):
        if time.monotonic() > deadline:
            for process in context.processes:
                process.kill()
            pytest.fail("the ranks did not finish in 300 s (a collective that one rank missed?)")


@pytest.fixture(scope="module")
def seen(ranks) -> list[dict]:
    """What each rank saw."""
    return [json.loads((ranks / f"rank{r}.json").read_text()) for r in range(RANKS)]


def tensors_of_the_plain_mlp() -> dict[str, torch.Tensor]:
    model, x = runs.made(runs.ResidualMLP), runs.inputs()
    with torch.no_grad():
        up = model.up(x)
        act = F.gelu(up)
        down = model.down(act)
    return {"up": up, "act": act, "down": down, "output:0": x + down}


def assert_summarises(summary: dict, tensor: torch.Tensor) -> None:
    assert summary["shape"] == list(tensor.shape)
    expected = {
        "min": tensor.min().item(),
        "max": tensor.max().item(),
        "mean": tensor.mean().item(),
        "std": tensor.std(unbiased=False).item(),
    }
    for key, value in expected.items():
        assert summary[key] == pytest.approx(value, abs=1e-6), key


@pytest.mark.parametrize("rank", range(RANKS))
def test_a_tensor_parallel_mlp_keeps_its_dataflow_on_every_rank(seen, rank):
    record = seen[rank]["tp"]
    assert record["topology"] == "dataflow"
    assert record["errors"] == {}
    assert record["edges"] == TP_EDGES


@pytest.mark.parametrize("rank", range(RANKS))
def test_dtensor_stages_summarise_the_whole_tensor_gathered_after_the_pass(seen, rank):
    plain = tensors_of_the_plain_mlp()
    summaries = seen[rank]["tp"]["summaries"]
    for stage in ("up", "down", "output:0"):
        assert_summarises(summaries[stage][0], plain[stage])
    assert summaries["up"][0]["shard"] == "the whole tensor, gathered from 2 ranks (Shard(dim=1))"
    assert "Partial(sum)" in summaries["down"][0]["shard"]  # (down's output: a partial sum)
    # between the two layers the model itself works on plain local tensors: this rank's half
    assert summaries["act"][0]["shard"] is None
    assert_summarises(summaries["act"][0], plain["act"][:, rank * HALF : (rank + 1) * HALF])
    assert any("gathered after the pass" in note for note in seen[rank]["tp"]["notes"])


def test_local_shards_are_read_where_they_are_and_said_so(seen):
    plain = tensors_of_the_plain_mlp()
    partial_means = []
    for rank in range(RANKS):
        summaries = seen[rank]["tp_local"]["summaries"]
        up = summaries["up"][0]
        assert_summarises(up, plain["up"][:, rank * HALF : (rank + 1) * HALF])
        assert up["shard"] == f"rank {rank}'s shard of 2 (Shard(dim=1)); the whole is 2×16"
        down = summaries["down"][0]
        assert down["shard"].startswith(f"rank {rank}'s partial sum of 2 (Partial(sum))")
        partial_means.append(down["mean"])
        assert seen[rank]["tp_local"]["edges"] == TP_EDGES
    # the partial sums add up to the whole (a mean is linear)
    assert sum(partial_means) == pytest.approx(plain["down"].mean().item(), abs=1e-6)


@pytest.mark.parametrize("rank", range(RANKS))
def test_gradients_of_dtensor_stages_are_gathered_too(seen, rank):
    model, x = runs.made(runs.ResidualMLP), runs.inputs()
    up = model.up(x)
    act = F.gelu(up)
    down = model.down(act)
    for t in (up, act, down):
        t.retain_grad()
    (x + down).pow(2).sum().backward()
    grads = seen[rank]["tp_grad"]
    assert grads["up"][0][0] == pytest.approx(up.grad.mean().item(), abs=1e-6)
    assert grads["up"][0][1].startswith("the whole tensor, gathered")
    half = act.grad[:, rank * HALF : (rank + 1) * HALF]
    assert grads["act"][0] == [pytest.approx(half.mean().item(), abs=1e-6), None]
    assert grads["down"][0][0] == pytest.approx(down.grad.mean().item(), abs=1e-6)


def plain_param_grads(kind) -> dict[str, torch.Tensor]:
    """The unsharded model's parameters' gradients of the same loss, by torch's autograd."""
    model = runs.made(kind)
    runs.LOSS(model(runs.inputs())).backward()
    return {n: p.grad for n, p in model.named_parameters()}


@pytest.mark.parametrize("kind", ["tp", "fsdp", "fsdp_kept"])
@pytest.mark.parametrize("rank", range(RANKS))
def test_sharded_parameters_gradients_are_the_whole_gradients(seen, rank, kind):
    plain = plain_param_grads(runs.ResidualMLP if kind == "tp" else runs.TwoBlocks)
    found = seen[rank][f"{kind}_param_grads"]
    assert set(found) == set(plain)
    for name, (mean, norm, shard) in found.items():
        assert mean == pytest.approx(plain[name].mean().item(), abs=1e-6), name
        assert norm == pytest.approx(plain[name].norm().item(), rel=1e-5), name
        if kind != "tp":  # (FSDP2 shards every parameter on dim 0)
            assert shard == "the whole tensor, gathered from 2 ranks (Shard(dim=0))", name
    if kind == "fsdp":
        assert seen[rank]["fsdp_grads_left"] == []  # (each .grad put back: None)
    if kind == "fsdp_kept":  # (keep_grads: the backward pass's .grad kept, every one)
        assert seen[rank]["fsdp_grads_kept"] == list(plain)


@pytest.mark.parametrize("rank", range(RANKS))
def test_a_sharded_stage_replaced_on_every_rank(seen, rank):
    model, x = runs.made(runs.ResidualMLP), runs.inputs()
    with torch.no_grad():  # up's output zeroed: act(0) = 0, so down gives its bias alone
        expected = x + model.down(torch.zeros(2, runs.HIDDEN))
    summaries = seen[rank]["tp_replaced"]
    assert_summarises(summaries["up"][0], torch.zeros(2, runs.HIDDEN))
    assert_summarises(summaries["output:0"][0], expected)


@pytest.mark.parametrize("rank", range(RANKS))
def test_the_sharded_model_is_left_as_it_was(seen, rank):
    assert seen[rank]["tp_unchanged"] is True  # its shards, and what it computes
    assert seen[rank]["tp_grads_left"] == []  # (a backward pass without keep_grads)


def test_the_widget_on_rank_0_says_what_it_shows_and_runs_nothing_alone(seen):
    assert seen[0]["reply_up"].startswith("the whole tensor, gathered from 2 ranks")
    assert "rank 0 of 2" in seen[0]["zoom"] and "every rank" in seen[0]["zoom"]
    (answer,) = seen[0]["intervened"]  # (the context menu's intervention: refused, said why)
    assert answer["ok"] is False and "rank 0 of 2" in answer["error"], answer
    for rank in range(RANKS):  # a NaN run: no second run looks for its origin on one rank
        nan = seen[rank]["nan"]
        assert nan["nonfinite"]
        assert any("not looked for in a run over several ranks" in n for n in nan["notes"])


@pytest.mark.parametrize("rank", range(RANKS))
def test_an_fsdp2_model_traces_as_the_plain_model(seen, rank):
    record = seen[rank]["fsdp"]
    assert record["edges"] == FSDP_EDGES
    assert record["errors"] == {}
    model, x = runs.made(runs.TwoBlocks), runs.inputs()
    with torch.no_grad():
        a = model.a(x)
        expected = {"a.up": model.a.up(x), "b.up": model.b.up(a), "head": model(x)}
    for stage, tensor in expected.items():
        assert_summarises(record["summaries"][stage][0], tensor)
        assert record["summaries"][stage][0]["shard"] is None  # (activations are plain)
    outputs: dict[str, torch.Tensor] = {}

    def keep(name: str):
        def hook(_module, _inputs, out) -> None:
            out.retain_grad()
            outputs[name] = out

        return hook

    plain = runs.made(runs.TwoBlocks)
    for name in ("a.up", "b.up", "head"):
        plain.get_submodule(name).register_forward_hook(keep(name))
    runs.LOSS(plain(x)).backward()
    for name, out in outputs.items():  # each stage's gradient, the plain model's
        assert seen[rank]["fsdp_grad"][name] == pytest.approx(out.grad.mean().item(), abs=1e-6)


@pytest.mark.parametrize(("width", "height"), [(1280, 720), (1024, 768)])
def test_rank_0s_offline_page_says_the_inspector_shows_the_whole_tensor(
    browser, ranks, width, height
):
    sys.path.insert(0, str(pathlib.Path(__file__).parent / "browser"))
    from live import open_offline, search_and_open, shoot

    context, page, errors = open_offline(browser, ranks / "tp.html", width, height)
    search_and_open(page, "up")
    page.wait_for_selector(".nfw-stats .nfw-stat-k", timeout=15_000)
    rows = page.evaluate(
        """() => Object.fromEntries([...document.querySelectorAll(".nfw-stats .nfw-stat-k")]
            .map((k) => [k.textContent, k.nextElementSibling.textContent]))"""
    )
    shoot(page, f"sharded_inspector_{width}x{height}")
    context.close()
    assert rows["sharded"] == "the whole tensor, gathered from 2 ranks (Shard(dim=1))", rows
    assert rows["shape"].startswith("2×16 "), rows  # (the whole tensor's: each rank has 2×8)
    assert errors == []
