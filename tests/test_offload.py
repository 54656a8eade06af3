"""Models dispatched by accelerate (weights on the meta device until each module's hook loads
them from the CPU or from disk) trace exactly as the same model loaded plainly: the same edges,
summaries within 1e-6, the same attention maps, each stage's device; the model is left
dispatched as it was. GPT-2 and BERT from configurations (random weights, nothing downloaded).
"""

from __future__ import annotations

import copy
import shutil

import numpy as np
import pytest
import torch

import neural_flow_widget as nfw

accelerate = pytest.importorskip("accelerate")
transformers = pytest.importorskip("transformers")


def gpt2() -> tuple[torch.nn.Module, dict]:
    torch.manual_seed(0)
    config = transformers.GPT2Config(
        n_layer=2, n_embd=32, n_head=4, vocab_size=50, n_positions=16, bos_token_id=0,
        eos_token_id=0,
    )  # fmt: skip
    model = transformers.GPT2LMHeadModel(config).eval()
    return model, {"input_ids": torch.randint(0, 50, (1, 10), generator=_g())}


def bert() -> tuple[torch.nn.Module, dict]:
    torch.manual_seed(0)
    config = transformers.BertConfig(
        num_hidden_layers=2, hidden_size=32, num_attention_heads=4, intermediate_size=64,
        vocab_size=50, max_position_embeddings=16,
    )  # fmt: skip
    model = transformers.BertModel(config).eval()
    mask = torch.ones(1, 10, dtype=torch.long)
    mask[0, 8:] = 0  # (padding: the mask reaches every layer)
    return model, {
        "input_ids": torch.randint(0, 50, (1, 10), generator=_g()),
        "attention_mask": mask,
    }


def _g() -> torch.Generator:
    return torch.Generator().manual_seed(1)


def half_on_disk(model: torch.nn.Module, folder) -> dict[str, str]:
    """A device map that keeps every other top-level block on the CPU and offloads the rest to
    disk (what device_map="auto" gives a model larger than memory)."""
    names = [n for n, m in model.named_modules() if n and not list(m.children())]
    return {name: ("disk" if i % 2 else "cpu") for i, name in enumerate(names)}


def dispatched(model: torch.nn.Module, how: str, folder) -> torch.nn.Module:
    copied = copy.deepcopy(model)
    if how == "cpu_offload":
        return accelerate.cpu_offload(copied, execution_device="cpu")
    if how == "disk_offload":
        return accelerate.disk_offload(copied, str(folder), execution_device="cpu")
    device_map = half_on_disk(copied, folder)
    return accelerate.dispatch_model(
        copied, device_map=device_map, main_device="cpu", offload_dir=str(folder)
    )


def attention_of(flow: nfw.Flow) -> dict[str, list]:
    """The attention maps made inside each module call (its blocks, not only its stages: a
    map is made inside an attention module, around its leaves)."""
    return {call.id: flow.attention(call.id) for call in flow.calls}


def assert_same_run(plain: nfw.Flow, flow: nfw.Flow) -> None:
    assert flow.topology == plain.topology == "dataflow"
    assert [s.id for s in flow.stages] == [s.id for s in plain.stages]
    assert flow.edges == plain.edges
    for stage in (*(s.id for s in plain.stages), *plain.outputs):
        for a, b in zip(plain.summary(stage), flow.summary(stage), strict=True):
            assert (a.shape, a.dtype, a.error) == (b.shape, b.dtype, b.error), stage
            assert b.device == "cpu", stage  # the device each stage ran on (its inspector row)
            for field in ("min", "max", "mean", "std", "mean_abs", "zero_fraction"):
                assert getattr(b, field) == pytest.approx(getattr(a, field), abs=1e-6), field
    assert [c.id for c in flow.calls] == [c.id for c in plain.calls]
    maps = attention_of(plain)
    assert sum(map(len, maps.values())) >= 2  # (a map per layer at least: there are some)
    for name, found in attention_of(flow).items():
        assert len(found) == len(maps[name]), name
        for x, y in zip(maps[name], found):
            np.testing.assert_allclose(y.weights, x.weights, atol=1e-6)


@pytest.mark.parametrize("make", [gpt2, bert], ids=["gpt2", "bert"])
@pytest.mark.parametrize("how", ["cpu_offload", "disk_offload", "dispatch_model"])
def test_an_offloaded_model_traces_as_the_plain_one(make, how, tmp_path):
    model, inputs = make()
    plain = nfw.trace(model, inputs)
    offloaded = dispatched(model, how, tmp_path)
    on_meta = [n for n, p in offloaded.named_parameters() if p.is_meta]
    assert on_meta  # (weights are loaded by the hooks, call by call)
    with torch.no_grad():
        before = offloaded(**inputs)[0]
    assert_same_run(plain, nfw.trace(offloaded, inputs))
    # left dispatched as it was: the same weights on the meta device, the same hooks, output
    assert [n for n, p in offloaded.named_parameters() if p.is_meta] == on_meta
    assert all(hasattr(m, "_hf_hook") for m in offloaded.modules() if m._parameters)
    with torch.no_grad():
        torch.testing.assert_close(offloaded(**inputs)[0], before, rtol=0, atol=0)


def test_device_map_auto_from_disk_traces_as_the_plain_model(tmp_path):
    model, inputs = gpt2()
    model.save_pretrained(tmp_path / "saved")
    loaded = transformers.GPT2LMHeadModel.from_pretrained(
        tmp_path / "saved",
        device_map="auto",
        max_memory={"cpu": "100KB"},  # (smaller than the model: the rest goes to disk)
        offload_folder=str(tmp_path / "offload"),
    ).eval()
    assert "disk" in loaded.hf_device_map.values()
    assert_same_run(nfw.trace(model, inputs), nfw.trace(loaded, inputs))


def test_weights_that_cannot_be_loaded_name_the_stage_the_module_and_the_fix(tmp_path):
    model, inputs = gpt2()
    offloaded = dispatched(model, "disk_offload", tmp_path / "offload")
    shutil.rmtree(tmp_path / "offload")  # (the offload folder went away)
    given = {k: v.clone() for k, v in inputs.items()}
    with pytest.raises(nfw.TraceError) as caught:
        nfw.trace(offloaded, inputs)
    text = str(caught.value)
    assert "stage 'transformer.wte' (module Embedding)" in text
    assert "FileNotFoundError" in text
    assert "offload folder" in text and "dispatch the model again" in text
    assert caught.value.stage == "transformer.wte"
    assert all(torch.equal(inputs[k], given[k]) for k in inputs)  # (the inputs untouched)
