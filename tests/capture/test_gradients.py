"""Gradients (``trace(loss=...)``): every stage's gradient norm against torch.autograd's own,
NaN found where it entered the backward pass, vanishing and exploding gradients located,
the model left as it was, and clear errors for a loss that cannot be differentiated."""

from __future__ import annotations

import math

import pytest
import torch
import zoo
from grad_models import NanChain
from torch import nn

import neural_flow_widget as nfw


def retained_norms(model, inputs, loss, kwargs=None):
    """The oracle: the L2 norm of d loss / d (each module call's tensor output), by stage id,
    from torch.autograd of a plain forward whose forward hooks keep each output and hand on a
    clone of it (so that a later in-place op, ``ReLU(inplace=True)``, changes the clone: the
    gradient asked for is of the output as the call returned it)."""
    outputs: dict[str, list[torch.Tensor]] = {}
    seen: dict[str, int] = {}
    names = {m: n for n, m in model.named_modules() if n}
    calls: list[tuple[str, torch.Tensor]] = []

    def hook(module, _args, output):
        name = names[module]
        k = seen.get(name, 0)
        seen[name] = k + 1
        if isinstance(output, torch.Tensor) and output.is_floating_point():
            calls.append((f"{name}#{k}", output))
            return output.clone()
        return None

    handles = [m.register_forward_hook(hook) for m in names]
    try:
        with torch.enable_grad():
            args = inputs if isinstance(inputs, tuple) else (inputs,)
            out = model(*args, **(kwargs or {}))
            found = [t for _, t in calls if t.requires_grad]
            grads = torch.autograd.grad(loss(out), found, allow_unused=True)
    finally:
        for h in handles:
            h.remove()
    norms: dict[str, float] = {}
    it = iter(grads)
    for cid, t in calls:
        if t.requires_grad:
            g = next(it)
            if g is not None:
                outputs.setdefault(cid, []).append(g)
                norms[cid] = float(torch.linalg.vector_norm(g.float()))
    # a module called once is "name"; several times "name#k" (the Flow's ids)
    single = {cid.split("#")[0] for cid in norms if seen[cid.split("#")[0]] == 1}
    return {
        (cid.split("#")[0] if cid.split("#")[0] in single else cid): v for cid, v in norms.items()
    }


def assert_norms_match(flow, expected, rtol=1e-5):
    compared = 0
    for stage in flow.calls:
        if stage.id not in expected:
            continue
        (got,) = [s.norm for s in flow.grad(stage.id)][:1]
        assert got == pytest.approx(expected[stage.id], rel=rtol, abs=1e-7), stage.id
        compared += 1
    assert compared >= len(expected) * 0.9 and compared > 3


class Mlp(nn.Module):
    def __init__(self, depth: int = 4, width: int = 16, act=nn.Tanh, residual=False):
        super().__init__()
        self.inp = nn.Linear(6, width)
        self.layers = nn.ModuleList(nn.Linear(width, width) for _ in range(depth))
        self.acts = nn.ModuleList(act() for _ in range(depth))
        self.out = nn.Linear(width, 3)
        self.residual = residual

    def forward(self, x):
        h = self.inp(x)
        for layer, act in zip(self.layers, self.acts):
            h = h + act(layer(h)) if self.residual else act(layer(h))
        return self.out(h)


def test_gradient_norms_of_an_mlp_equal_torch_autograd():
    model = zoo.seeded(Mlp)
    x = torch.randn(5, 6)
    loss = lambda out: (out**2).mean()
    flow = nfw.trace(model, x, loss=loss)
    assert_norms_match(flow, retained_norms(model, x, loss))
    xs = x.clone().requires_grad_(True)
    (expected,) = torch.autograd.grad(loss(model(xs)), xs)
    assert flow.grad("input:0")[0].norm == pytest.approx(float(expected.norm()), rel=1e-5)
    summary = flow.grad("layers.1")[0]
    assert summary.shape == (5, 16) and summary.min <= summary.mean <= summary.max


def test_gradient_norms_of_a_unet_equal_torch_autograd():
    model = zoo.seeded(zoo.UNet)
    x = torch.randn(2, 1, 16, 16)
    loss = lambda out: out.abs().mean()
    flow = nfw.trace(model, x, loss=loss)
    assert_norms_match(flow, retained_norms(model, x, loss))
    assert flow.grad_view("enc1").kind in ("grid", "mean")


@pytest.mark.slow
def test_gradient_norms_of_gpt2_and_bert_from_configs_equal_torch_autograd():
    transformers = pytest.importorskip("transformers")
    torch.manual_seed(0)
    gpt2 = transformers.GPT2LMHeadModel(
        transformers.GPT2Config(n_layer=2, n_embd=32, n_head=4, vocab_size=64, n_positions=32)
    ).eval()
    ids = torch.randint(0, 64, (1, 12))
    loss = lambda out: out.logits[0, -1].logsumexp(-1)
    flow = nfw.trace(gpt2, ids, loss=loss)
    assert_norms_match(flow, retained_norms(gpt2, ids, loss), rtol=1e-4)
    assert flow.grad_view("transformer.h.0").kind == "tokens"
    bert = transformers.BertModel(
        transformers.BertConfig(
            hidden_size=32, num_hidden_layers=2, num_attention_heads=4, intermediate_size=64,
            vocab_size=64, max_position_embeddings=32,
        )
    ).eval()  # fmt: skip
    mask = torch.ones(1, 12, dtype=torch.long)
    mask[0, 9:] = 0
    inputs = {"input_ids": ids, "attention_mask": mask}
    loss = lambda out: out.last_hidden_state.pow(2).mean()
    flow = nfw.trace(bert, inputs, loss=loss)
    assert_norms_match(flow, retained_norms(bert, (), loss, kwargs=inputs), rtol=1e-4)


def test_a_nan_made_in_one_stage_backward_is_found_where_it_entered():
    flow = nfw.trace(zoo.seeded(NanChain), torch.randn(3, 4), loss=lambda out: out.sum())
    # d loss / d (poison's output) is finite; its backward makes NaN, so the first stage
    # whose gradient holds NaN is the one feeding it, and the ones before follow
    assert flow.nonfinite_grad[:3] == ("b", "a", "input:0")
    assert math.isfinite(flow.grad("poison")[0].norm) and math.isnan(flow.grad("b")[0].norm)
    assert flow.grad("b")[0].nan == 12


def test_vanishing_gradients_of_a_deep_sigmoid_mlp_and_a_healthy_residual_one():
    x = torch.randn(8, 6)
    deep = zoo.seeded(lambda: Mlp(depth=14, act=nn.Sigmoid))
    found = nfw.trace(deep, x, loss=lambda out: out.pow(2).mean()).gradient_flow()
    assert found is not None and found.kind == "vanishing" and found.at.startswith("layers.")
    assert found.ratio < 1e-3 and "vanishes" in found.describe()
    residual = zoo.seeded(lambda: Mlp(depth=14, act=nn.Sigmoid, residual=True))
    flow = nfw.trace(residual, x, loss=lambda out: out.pow(2).mean())
    assert flow.gradient_flow().kind == "healthy"


def test_exploding_gradients_are_located():
    model = zoo.seeded(lambda: Mlp(depth=10, act=nn.Identity))
    with torch.no_grad():
        for layer in model.layers:
            layer.weight.mul_(6.0)
    found = nfw.trace(model, torch.randn(4, 6), loss=lambda o: o.mean()).gradient_flow()
    assert found.kind == "exploding" and found.ratio > 1e3


def test_the_model_is_left_as_it_was():
    model = zoo.seeded(zoo.ResNet).train()
    model.fc.weight.requires_grad_(False)
    state = {k: v.clone() for k, v in model.state_dict().items()}
    x = torch.randn(2, 3, 8, 8)
    x_before = x.clone()
    flow = nfw.trace(model, x, loss=lambda out: out.sum())
    assert flow.param_grads("stem")["stem.weight"].norm > 0
    assert "fc.weight" not in flow.param_grads("fc")  # frozen: no gradient asked for
    assert all(p.grad is None for p in model.parameters())
    assert model.training and not model.fc.weight.requires_grad
    assert all(torch.equal(v, model.state_dict()[k]) for k, v in state.items())
    assert torch.equal(x, x_before) and not x.requires_grad and x.grad is None
    assert zoo.hooks_left(model) == 0 and not zoo.mode_stack()
    nfw.trace(model, x, loss=lambda out: out.sum(), keep_grads=True)
    assert model.stem.weight.grad is not None and model.fc.weight.grad is None


@pytest.mark.parametrize("compiled", [True, False], ids=["compiled", "torch-path"])
def test_param_grads_equal_torch_autograd(compiled, monkeypatch):
    """Each parameter's gradient summarised (one pass of the compiled path, or the torch path's
    summary): its norm and statistics against torch.autograd's gradient."""
    from neural_flow_widget.capture import accelerator

    monkeypatch.setitem(accelerator._state, "enabled", compiled)
    model = zoo.seeded(Mlp)
    x = torch.randn(5, 6)
    loss = lambda out: out.pow(2).sum()
    flow = nfw.trace(model, x, loss=loss)
    for name in ("layers.2.weight", "layers.2.bias"):
        (expected,) = torch.autograd.grad(loss(model(x)), model.get_parameter(name))
        got = flow.param_grads("layers.2")[name]
        assert got.norm == pytest.approx(float(expected.norm()), rel=1e-5)
        assert got.mean == pytest.approx(float(expected.mean()), rel=1e-4, abs=1e-8)
        assert (got.min, got.max) == (float(expected.min()), float(expected.max()))
        assert got.std == pytest.approx(float(expected.std(unbiased=False)), rel=1e-4)
        assert got.shape == tuple(expected.shape)


def test_a_model_autograd_cannot_follow_says_to_trace_without_loss():
    class Out(nn.Module):  # out= has no gradient
        def __init__(self):
            super().__init__()
            self.a = nn.Linear(4, 4)
            self.register_buffer("acc", torch.zeros(2, 4))

        def forward(self, x):
            torch.mul(self.a(x), 2, out=self.acc)
            return self.acc.sum(1)

    model = zoo.seeded(Out)
    with pytest.raises(nfw.TraceError, match="trace without loss=") as caught:
        nfw.trace(model, torch.randn(2, 4), loss=lambda o: o.sum())
    assert "Out" in str(caught.value) and model.a.weight.grad is None
    assert zoo.hooks_left(model) == 0 and not zoo.mode_stack()
    assert nfw.trace(model, torch.randn(2, 4)).stages  # (and without loss= it traces)


def test_bad_losses_get_errors_that_say_the_fix():
    model = zoo.seeded(Mlp)
    x = torch.randn(5, 6)
    with pytest.raises(ValueError, match="must return one number"):
        nfw.trace(model, x, loss=lambda out: out)
    with pytest.raises(TypeError, match="pass a function"):
        nfw.trace(model, x, loss=3.0)
    with pytest.raises(ValueError, match="needs capture=True"):
        nfw.trace(model, x, loss=lambda out: out.sum(), capture=False)
    torch.manual_seed(0)
    frozen = nn.Sequential(nn.Embedding(10, 4), nn.Linear(4, 2)).requires_grad_(False)
    with pytest.raises(ValueError, match="requires grad"):
        nfw.trace(frozen, torch.randint(0, 10, (2, 5)), loss=lambda o: o.sum())
    assert model.inp.weight.grad is None
    plain = nfw.trace(model, x)
    with pytest.raises(ValueError, match="without loss="):
        plain.grad("inp")
