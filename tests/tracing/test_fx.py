"""topology="fx": torch.fx agrees with the runtime tracer where fx works; falls back where not."""

import pytest
import torch
import zoo

import neural_flow_widget as nfw


def two_sequences():
    return torch.randn(2, 6, 8), torch.randn(2, 6, 8)


CASES = [
    (zoo.UNet, lambda: torch.randn(1, 1, 16, 16)),
    (zoo.ResNet, lambda: torch.randn(1, 3, 8, 8)),
    (zoo.Multimodal, lambda: (torch.randn(2, 1, 8, 8), torch.randn(2, 6))),
    (zoo.ThreeHeads, lambda: torch.randn(2, 4)),
    (zoo.Reused, lambda: torch.randn(2, 4)),
    # an attention continues its queries (edges.py LEADING), in each way it may be written
    *(
        (type(f"CrossAttention_{how}", (zoo.CrossAttention,), {"how": how}), two_sequences)
        for how in ("sdpa", "written", "baddbmm")
    ),
]


@pytest.mark.parametrize("cls, make", CASES, ids=[c.__name__ for c, _ in CASES])
@pytest.mark.parametrize("stages", [None, 1])
def test_fx_agrees_with_the_runtime_tracer(cls, make, stages):
    model, x = zoo.seeded(cls), make()
    auto = nfw.trace(model, x, stages=stages, capture=False)
    fx = nfw.trace(model, x, stages=stages, capture=False, topology="fx")
    assert fx.topology == "fx" and auto.topology == "dataflow"
    assert fx.edges == auto.edges
    fx.lint()


def test_fx_select_retraces_for_the_new_selection():
    model, x = zoo.seeded(zoo.UNet), torch.randn(1, 1, 16, 16)
    fx = nfw.trace(model, x, stages=1, capture=False, topology="fx")
    again = fx.select(None)
    assert again.topology == "fx"
    assert again.edges == nfw.trace(model, x, capture=False, topology="fx").edges
    assert any(e.kind == "skip" for e in again.edges)


def test_data_dependent_control_flow_falls_back_with_the_documented_warning():
    model = zoo.seeded(zoo.Branchy)
    with pytest.warns(
        UserWarning,
        match=r"model could not be symbolically traced.*Using "
        r"runtime execution order instead\.",
    ):
        flow = nfw.trace(model, torch.randn(2, 4), topology="fx")
    assert flow.topology == "sequential"
    assert [e.kind for e in flow.edges] == ["flow"] * 4
    assert flow.summary("post")[0].shape == (2, 4)  # activations are never blocked by fx


def test_fx_keeps_activation_capture():
    flow = nfw.trace(zoo.seeded(zoo.UNet), torch.randn(1, 1, 16, 16), topology="fx", stages=1)
    assert flow.topology == "fx" and flow.summary("dec1")[0].shape == (1, 4, 16, 16)
