"""Capture in the traced run: summaries, views and attention maps through trace()."""

import numpy as np
import pytest
import torch
import zoo

import neural_flow_widget as nfw

transformers = pytest.importorskip("transformers")


def tiny_gpt2(attn):
    torch.manual_seed(0)
    config = transformers.GPT2Config(
        n_layer=2,
        n_embd=32,
        n_head=4,
        vocab_size=64,
        n_positions=32,
        bos_token_id=0,
        eos_token_id=0,
    )
    config._attn_implementation = attn
    return transformers.GPT2LMHeadModel(config).eval()


def tiny_bert(attn):
    torch.manual_seed(0)
    config = transformers.BertConfig(
        num_hidden_layers=2,
        hidden_size=32,
        num_attention_heads=4,
        intermediate_size=64,
        vocab_size=64,
        max_position_embeddings=32,
    )
    config._attn_implementation = attn
    return transformers.BertModel(config).eval()


@pytest.mark.parametrize("attn", ["eager", "sdpa"])
def test_gpt2_attention_equals_output_attentions(attn):
    model = tiny_gpt2(attn)
    ids = torch.randint(0, 64, (2, 12))
    reference = tiny_gpt2("eager")
    with torch.no_grad():
        expected = reference(ids, output_attentions=True).attentions
        plain = model(ids).logits
    flow = nfw.trace(model, ids, sample=1)
    for layer in range(2):
        (got,) = flow.attention(f"transformer.h.{layer}")
        assert got.pool == (1, 1) and got.weights.shape == (4, 12, 12)
        np.testing.assert_allclose(got.weights, expected[layer][1].numpy(), atol=1e-5)
    with torch.no_grad():
        assert torch.equal(model(ids).logits, plain)


@pytest.mark.parametrize("attn", ["eager", "sdpa"])
def test_bert_attention_with_padding_equals_output_attentions(attn):
    model = tiny_bert(attn)
    ids = torch.randint(0, 64, (2, 10))
    mask = torch.ones_like(ids)
    mask[1, 7:] = 0
    with torch.no_grad():
        expected = tiny_bert("eager")(ids, attention_mask=mask, output_attentions=True).attentions
    flow = nfw.trace(model, {"input_ids": ids, "attention_mask": mask}, sample=1)
    maps = flow.attention("encoder")
    assert len(maps) == 2
    for got, want in zip(maps, expected):
        np.testing.assert_allclose(got.weights, want[1].numpy(), atol=1e-5)
        assert np.all(got.weights[:, :, 7:] < 1e-6)  # padded keys get no attention


def test_multihead_attention_without_weights_is_captured():
    model = zoo.seeded(zoo.Attention)
    x = torch.randn(2, 5, 6)
    flow = nfw.trace(model, x)
    with torch.no_grad():
        h = model.embed(x)
        _, weights = model.attn(h, h, h, need_weights=True, average_attn_weights=False)
    (got,) = flow.attention("attn")
    assert got.source == "mha"
    np.testing.assert_allclose(got.weights, weights[0].numpy(), atol=1e-6)


def test_summaries_are_of_each_call_even_when_a_later_call_changes_the_tensor_in_place():
    flow = nfw.trace(zoo.seeded(zoo.UNet), torch.randn(1, 1, 16, 16))
    (conv,) = flow.summary("enc1.conv")
    (block,) = flow.summary("enc1")  # the same tensor object, after ReLU(inplace=True)
    assert conv.min < 0 and block.min == 0
    assert flow.view("enc1.conv").signed and not flow.view("enc1").signed


def test_reused_module_kth_call_summary_is_the_kth_output():
    model = zoo.seeded(zoo.Reused)
    x = torch.randn(2, 4)
    outputs = []
    hook = model.block.register_forward_hook(lambda m, a, out: outputs.append(out.clone()))
    with torch.no_grad():
        model(x)
    hook.remove()
    flow = nfw.trace(model, x)
    for k, out in enumerate(outputs):
        (summary,) = flow.summary(f"block#{k}")
        assert summary.mean == pytest.approx(out.mean().item(), rel=1e-6)
        assert summary.max == pytest.approx(out.max().item(), rel=1e-6)


def test_tuple_and_dict_outputs_give_one_summary_per_leaf():
    flow = nfw.trace(
        zoo.seeded(zoo.Nested), {"batch": {"x": torch.randn(2, 3), "pair": [torch.randn(2, 3)] * 2}}
    )
    assert len(flow.summary("a")) == 1
    heads = nfw.trace(zoo.seeded(zoo.ThreeHeads), torch.randn(2, 4))
    assert [s.shape for s in heads.summary("heads.c")] == [(2, 3)]


def test_a_failing_summary_marks_its_stage_and_the_run_goes_on():
    class Sparse(torch.nn.Module):
        def forward(self, x):
            return x.to_sparse()

    class Model(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.lin, self.sparse, self.out = torch.nn.Linear(4, 4), Sparse(), torch.nn.Linear(4, 2)

        def forward(self, x):
            return self.out(self.sparse(self.lin(x)).to_dense())

    flow = nfw.trace(Model(), torch.randn(2, 4))
    assert "summary failed" in flow.stage("sparse").error
    assert flow.stage("out").error is None and flow.summary("out")[0].shape == (2, 2)
    assert [tuple(e)[:2] for e in flow.edges] == [
        ("input:0", "lin"),
        ("lin", "sparse"),
        ("sparse", "out"),
        ("out", "output:0"),
    ]


def test_capture_false_gives_topology_only():
    flow = nfw.trace(zoo.seeded(zoo.UNet), torch.randn(1, 1, 16, 16), capture=False)
    with pytest.raises(ValueError, match="capture=True"):
        flow.summary("enc1")


def test_retained_bytes_stay_within_budget():
    flow = nfw.trace(zoo.seeded(zoo.UNet), torch.randn(1, 1, 64, 64), budget_bytes=20_000)
    for items in flow.capture.outputs.values():
        for item in items:
            assert item.retained.nbytes <= 20_000


def test_capture_device_other_than_cpu_is_refused_before_running():
    model = zoo.seeded(zoo.UNet)
    with pytest.raises(ValueError, match="host memory"):
        nfw.trace(model, torch.randn(1, 1, 16, 16), capture_device="cuda")


def test_capture_device_is_deprecated_and_points_at_the_callers_line():
    model = zoo.seeded(zoo.UNet)
    with pytest.warns(DeprecationWarning, match="leave capture_device out") as caught:
        nfw.trace(model, torch.randn(1, 1, 16, 16), capture_device="cpu")
    assert caught[0].filename == __file__


class _Overwrites(torch.nn.Module):
    """Stage outputs written to after their stage returned, in the parent's body."""

    def __init__(self):
        super().__init__()
        self.a, self.b, self.c = (torch.nn.Linear(4, 4) for _ in range(3))

    def forward(self, x):
        a = self.a(x)
        a.mul_(-1.0)  # in place
        b = self.b(x)
        torch.add(x, 100.0, out=b)  # out=
        c = self.c(x)
        c[:, :2].fill_(1000.0)  # through a view
        return a + b + c


def test_an_output_written_to_after_its_stage_keeps_the_values_the_stage_returned():
    model, x = zoo.seeded(_Overwrites), torch.randn(3, 4)
    with torch.no_grad():
        expected = {name: getattr(model, name)(x) for name in "abc"}
    flow = nfw.trace(model, x)
    for name in "abc":
        (summary,) = flow.summary(name)
        assert summary.max == pytest.approx(expected[name].max().item(), rel=1e-6)
        assert summary.min == pytest.approx(expected[name].min().item(), rel=1e-6)
        kept = flow.capture.outputs[flow.stage(name).index][0].retained.values("first")
        np.testing.assert_allclose(kept, expected[name][0].numpy(), rtol=1e-6)


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64, torch.float16, torch.bfloat16])
@pytest.mark.parametrize("layout", [torch.contiguous_format, torch.channels_last])
def test_captured_summaries_and_views_for_every_float_dtype_and_memory_layout(dtype, layout):
    model = zoo.seeded(zoo.UNet).to(dtype=dtype, memory_format=layout)
    x = torch.randn(2, 1, 16, 16).to(dtype=dtype, memory_format=layout)
    outputs = {}
    hooks = [
        m.register_forward_hook(lambda m, a, out, n=n: outputs.__setitem__(n, out.clone()))
        for n, m in model.named_modules()
        if n
    ]
    with torch.no_grad():
        model(x)
    for hook in hooks:
        hook.remove()
    flow = nfw.trace(model, x, sample=1)
    assert not [s.error for s in flow.calls if s.error]
    for name in ("enc1.conv", "enc2", "up1", "dec1", "head"):
        (summary,) = flow.summary(name)
        out = outputs[name].double()
        assert (summary.min, summary.max) == (out.min().item(), out.max().item()), name
        assert summary.mean == pytest.approx(out.mean().item(), rel=1e-3, abs=1e-3), name
        view = flow.view(name)
        assert view.data.size and np.isfinite([view.vmin, view.vmax]).all(), name


@pytest.mark.parametrize("accelerated", [True, False], ids=["accelerator", "torch-path"])
def test_capture_as_on_a_gpu_matches_the_cpu_capture(monkeypatch, accelerated):
    """What a GPU run does differently, on CPU tensors: every result packed into one buffer
    and moved after the pass, NaN/Inf not counted in the call. The records are the same."""
    from neural_flow_widget.capture import accelerator, host, statistics

    if not accelerated:
        monkeypatch.setattr(accelerator, "_state", dict(accelerator._state, enabled=False))
    model, x = zoo.seeded(zoo.UNet), torch.randn(2, 1, 16, 16) * 1e4
    cpu = nfw.trace(model, x, sample=1)
    monkeypatch.setattr(accelerator, "_state", dict(accelerator._state, enabled=False))
    monkeypatch.setattr(host, "READ_IN_PLACE", frozenset())
    monkeypatch.setattr(statistics, "COUNT_IN_CALL", frozenset())
    packed = nfw.trace(model, x, sample=1)
    for name in ("enc1.conv", "enc2", "up1", "dec1", "head"):
        (a,), (b,) = packed.summary(name), cpu.summary(name)
        assert (a.min, a.max, a.sampled) == (b.min, b.max, b.sampled), name
        for field in ("mean", "std", "mean_abs", "zero_fraction"):
            assert getattr(a, field) == pytest.approx(getattr(b, field), rel=1e-5), name
        kept_a = packed.capture.outputs[packed.stage(name).index][0].retained
        kept_b = cpu.capture.outputs[cpu.stage(name).index][0].retained
        assert list(kept_a.parts) == list(kept_b.parts), name
        for part in kept_b.parts:
            assert kept_a.parts[part].dtype == kept_b.parts[part].dtype, (name, part)
            np.testing.assert_allclose(
                kept_a.values(part),
                kept_b.values(part),
                rtol=2e-3,
                atol=1e-3,
                err_msg=f"{name} {part}",
            )


@pytest.mark.parametrize("topology", ["sequential", "fx"])
def test_attention_maps_without_the_dataflow_tracer_equal_the_traced_ones(topology):
    """With topology="sequential" (and "fx", which runs the model without the dataflow
    tracer's mode too) the attention recorder rides on a mode of its own."""
    model, x = zoo.seeded(zoo.Attention), torch.randn(2, 5, 6)
    traced = nfw.trace(model, x)
    other = nfw.trace(model, x, topology=topology)
    (want,) = traced.attention("attn")
    (got,) = other.attention("attn")
    np.testing.assert_array_equal(got.weights, want.weights)
    assert not [c.error for c in other.calls if c.error]
