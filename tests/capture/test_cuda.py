"""Capture on a CUDA device: the same oracles as on the CPU, run where the tensors live.

Skipped without a GPU (CI has none); run on one with ``pytest tests/capture/test_cuda.py``.
``NFW_TEST_DEVICE`` names another device to run them on (``cpu`` checks the tests themselves).
Capture has one implementation on every device; what differs on a GPU is that nothing in the
pass waits for the device: the results stay there and reach the host in one transfer after
the pass, and NaN/Inf are counted from the sample (the CPU tests force both paths onto CPU
tensors; here they run for real, with CUDA's sync checks on).
"""

import os

import numpy as np
import pytest
import torch
import torch.nn.functional as F
import zoo

import neural_flow_widget as nfw
from neural_flow_widget.capture.retained import retain
from neural_flow_widget.capture.summary import summarise

CUDA = torch.device(os.environ.get("NFW_TEST_DEVICE", "cuda"))
pytestmark = pytest.mark.skipif(
    CUDA.type == "cuda" and not torch.cuda.is_available(), reason="needs a CUDA device"
)


def outputs_of(model, x):
    """Each named module's output in a plain forward (copied), and the model's output."""
    outputs = {}
    hooks = [
        m.register_forward_hook(lambda m, a, out, n=n: outputs.__setitem__(n, out.clone()))
        for n, m in model.named_modules()
        if n
    ]
    try:
        with torch.no_grad():
            y = model(x)
    finally:
        for hook in hooks:
            hook.remove()
    return outputs, y


@pytest.mark.parametrize("dtype", [torch.float32, torch.float16, torch.bfloat16])
@pytest.mark.parametrize("layout", [torch.contiguous_format, torch.channels_last])
def test_unet_capture_on_cuda_matches_its_outputs(dtype, layout):
    torch.backends.cudnn.deterministic = True
    model = zoo.seeded(zoo.UNet).to(CUDA, dtype, memory_format=layout)
    x = torch.randn(2, 1, 32, 32, device=CUDA).to(dtype=dtype, memory_format=layout)
    before = x.clone()
    outputs, plain = outputs_of(model, x)
    flow = nfw.trace(model, x, sample=1)
    assert not [s.error for s in flow.calls if s.error]
    with torch.no_grad():
        assert torch.equal(model(x), plain)  # the model is unchanged by tracing
    assert torch.equal(x, before)
    for name in ("enc1.conv", "enc2", "up1", "dec1", "head"):
        (summary,) = flow.summary(name)
        out = outputs[name].double()
        assert summary.device.startswith(CUDA.type)
        assert (summary.min, summary.max) == (out.min().item(), out.max().item()), name
        assert summary.mean == pytest.approx(out.mean().item(), rel=1e-3, abs=1e-3), name
        kept = flow.capture.outputs[flow.stage(name).index][0].retained
        mean_map = out[1].float().mean(0).cpu()
        pooled = F.adaptive_avg_pool2d(mean_map[None], kept.parts["mean"].shape)[0]
        np.testing.assert_allclose(kept.values("mean"), pooled.numpy(), rtol=2e-2, atol=2e-2)
        view = flow.view(name)
        assert view.data.size and np.isfinite([view.vmin, view.vmax]).all(), name
        assert view.to_png()[:4] == b"\x89PNG"


def test_device_summaries_equal_the_cpu_ones_on_known_tensors():
    torch.manual_seed(0)
    cases = {
        "normal": torch.randn(3, 50, 70),
        "nan-inf": torch.tensor([1.0, float("nan"), -2.0, float("inf"), 0.0, -float("inf")]),
        "zeros": torch.zeros(4, 5),
        "half": torch.randn(1000).half(),
        "bf16": torch.randn(20_000).bfloat16(),
        "ints": torch.randint(-5, 6, (40_000,)),
        "bools": torch.rand(300) > 0.3,
        "empty": torch.zeros(0, 3),
    }
    for name, t in cases.items():
        cpu, gpu = summarise(t), summarise(t.to(CUDA))
        assert (gpu.kind, gpu.shape, gpu.numel) == (cpu.kind, cpu.shape, cpu.numel), name
        assert (gpu.nan, gpu.posinf, gpu.neginf) == (cpu.nan, cpu.posinf, cpu.neginf), name
        assert (gpu.min, gpu.max) == (cpu.min, cpu.max), name
        for field in ("mean", "std", "mean_abs", "zero_fraction"):
            a, b = getattr(gpu, field), getattr(cpu, field)
            assert (a is None) == (b is None), (name, field)
            if a is not None:
                assert a == pytest.approx(b, rel=1e-4, abs=1e-5), (name, field)
        assert gpu.values == cpu.values, name
        assert abs(int(gpu.hist_counts.sum()) - int(cpu.hist_counts.sum())) == 0, name


@pytest.mark.parametrize("shape", [(2, 64, 56, 56), (1, 128, 7, 7), (2, 77, 300), (3, 1000)])
def test_device_retention_equals_the_cpu_one(shape):
    torch.manual_seed(1)
    t = torch.randn(shape) * 3.0
    cpu, gpu = (
        retain(t, sample=1 if shape[0] > 1 else 0),
        retain(t.to(CUDA), sample=1 if shape[0] > 1 else 0),
    )
    assert (gpu.layout, gpu.shape, gpu.sample) == (cpu.layout, cpu.shape, cpu.sample)
    assert set(gpu.parts) == set(cpu.parts)
    for name in cpu.parts:
        a, b = gpu.values(name), cpu.values(name)
        assert a.shape == b.shape, name
        if name == "top_channels":
            assert set(a.tolist()) == set(b.tolist()), name  # ties may order differently
        elif name not in ("top", "topk_indices", "topk_values"):
            np.testing.assert_allclose(a, b, rtol=2e-3, atol=2e-3, err_msg=name)


def test_transformers_maps_on_cuda_equal_output_attentions():
    transformers = pytest.importorskip("transformers")
    torch.manual_seed(0)
    config = transformers.GPT2Config(
        n_layer=2,
        n_embd=64,
        n_head=4,
        vocab_size=100,
        n_positions=64,
        bos_token_id=0,
        eos_token_id=0,
    )
    ids = torch.randint(0, 100, (2, 24), device=CUDA)
    config._attn_implementation = "eager"
    eager = transformers.GPT2LMHeadModel(config).to(CUDA).eval()
    with torch.no_grad():
        expected = eager(ids, output_attentions=True).attentions
    for impl in ("eager", "sdpa"):
        config._attn_implementation = impl
        model = transformers.GPT2LMHeadModel(config).to(CUDA).eval()
        model.load_state_dict(eager.state_dict())
        with torch.no_grad():
            plain = model(ids).logits
        flow = nfw.trace(model, ids, sample=1)
        with torch.no_grad():
            assert torch.equal(model(ids).logits, plain), impl
        for layer in range(2):
            (got,) = flow.attention(f"transformer.h.{layer}")
            np.testing.assert_allclose(
                got.weights, expected[layer][1].cpu().numpy(), atol=1e-5, err_msg=impl
            )


def test_mha_without_weights_on_cuda_equals_a_manual_computation():
    torch.manual_seed(2)
    mha = torch.nn.MultiheadAttention(32, 4, batch_first=True).to(CUDA).eval()
    x = torch.randn(2, 9, 32, device=CUDA)
    pad = torch.zeros(2, 9, dtype=torch.bool, device=CUDA)
    pad[1, 6:] = True

    class Wrap(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.mha = mha

        def forward(self, x):
            return self.mha(x, x, x, key_padding_mask=pad, need_weights=False)[0]

    flow = nfw.trace(Wrap().eval(), x, sample=1)
    (got,) = flow.attention("mha")
    w_q, w_k, _ = mha.in_proj_weight.chunk(3)
    b_q, b_k, _ = mha.in_proj_bias.chunk(3)
    q = (x[1] @ w_q.T + b_q).view(9, 4, 8).transpose(0, 1)
    k = (x[1] @ w_k.T + b_k).view(9, 4, 8).transpose(0, 1)
    scores = (q @ k.transpose(-2, -1)) / 8**0.5
    scores = scores.masked_fill(pad[1][None, None, :], float("-inf"))
    np.testing.assert_allclose(got.weights, scores.softmax(-1).detach().cpu().numpy(), atol=1e-5)


def test_int_and_bool_outputs_on_cuda_get_counts():
    class Ids(torch.nn.Module):
        def forward(self, x):
            return x.argmax(-1), x > 0

    x = torch.randn(4, 10, 7, device=CUDA)
    flow = nfw.trace(torch.nn.Sequential(Ids()), x)
    ids, mask = flow.summary("0")
    assert ids.kind == "int" and sum(c for _, c in ids.values) == 40
    assert mask.kind == "bool" and dict(mask.values)[True] == int((x > 0).sum())


def test_nothing_in_the_forward_pass_waits_for_the_device(monkeypatch):
    """With CUDA's synchronisation debug mode set to raise, a traced forward of a U-Net and
    of GPT-2 (capture and attention on) runs to its end; only what comes after the pass (one
    transfer of every result) may synchronise."""
    from neural_flow_widget.capture import observer

    finish = observer.CaptureObserver.finish

    def after_the_pass(self):
        torch.cuda.set_sync_debug_mode(0)
        return finish(self)

    monkeypatch.setattr(observer.CaptureObserver, "finish", after_the_pass)
    transformers = pytest.importorskip("transformers")
    config = transformers.GPT2Config(
        n_layer=2,
        n_embd=64,
        n_head=4,
        vocab_size=100,
        n_positions=64,
        bos_token_id=0,
        eos_token_id=0,
    )
    gpt2 = transformers.GPT2LMHeadModel(config).to(CUDA).eval()
    cases = [
        (zoo.seeded(zoo.UNet).to(CUDA), torch.randn(2, 1, 32, 32, device=CUDA)),
        (gpt2, torch.randint(0, 100, (2, 24), device=CUDA)),
    ]
    for model, x in cases:
        nfw.trace(model, x)  # warm up (first-time allocations, cached pooling matrices)
        torch.cuda.synchronize()
        torch.cuda.set_sync_debug_mode("error")
        try:
            flow = nfw.trace(model, x)
        finally:
            torch.cuda.set_sync_debug_mode(0)
        assert not [s.error for s in flow.calls if s.error]
        assert flow.summary(flow.stages[0].id)[0].device.startswith("cuda")
        # the model's input and output were read too (a sync there marks them, not raises)
        assert not flow.capture.end_failures
        assert flow.view(flow.outputs[0]).kind in ("mask", "next token")
        assert flow.summary(flow.inputs[0])[0].device.startswith("cuda")
