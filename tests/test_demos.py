"""Tests for neural_flow_widget.demos: loading, shapes, shipped weights, data, docstrings."""

from __future__ import annotations

import doctest
import importlib.util
import sys
from pathlib import Path

import pytest
import torch

from neural_flow_widget import demos
from neural_flow_widget.demos import data, fusion, resnet, transformer, unet, vit

ROOT = Path(__file__).resolve().parents[1]
FRESH_SEEDS = (data.EVAL_SEED, 2024)  # the script's held-out seed and one it never printed


@pytest.fixture(autouse=True)
def _one_thread():
    """Small models run fastest on one thread, and the test machine's cores are shared."""
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(threads)


def _as_tensors(out) -> list[torch.Tensor]:
    return list(out.values()) if isinstance(out, dict) else [out]


# -- loading and shapes ---------------------------------------------------------------------


def test_demos_lists_the_five_models():
    assert demos.DEMOS == ("unet", "fusion", "resnet", "transformer", "vit")


@pytest.mark.parametrize("name", demos.DEMOS)
@pytest.mark.parametrize("pretrained", [True, False])
def test_load_gives_an_eval_mode_model_and_its_metadata(name, pretrained):
    demo = demos.load(name, pretrained=pretrained)
    assert demo.name == name
    assert not demo.model.training
    assert all(not m.training for m in demo.model.modules())
    assert demo.task and "\n" not in demo.task
    assert demo.description.endswith(".") and demo.description.count(". ") == 0
    assert all(p.dtype == torch.float32 for p in demo.model.parameters())


EXPECTED_SHAPES = {
    "unet": {"inputs": [(1, 1, 64, 64)], "outputs": [(1, 1, 64, 64)]},
    "fusion": {"inputs": [(1, 1, 32, 32), (1, 8)], "outputs": [(1, 4), (1,)]},
    "resnet": {"inputs": [(1, 3, 32, 32)], "outputs": [(1, 4)]},
    "transformer": {"inputs": [(1, 16)], "outputs": [(1, 16, data.VOCAB_SIZE)]},
    "vit": {"inputs": [(1, 1, 32, 32)], "outputs": [(1, 16)]},
}


@pytest.mark.parametrize("name", demos.DEMOS)
def test_sample_input_and_output_have_the_documented_shapes(name):
    demo = demos.load(name)
    inputs = demo.inputs if isinstance(demo.inputs, tuple) else (demo.inputs,)
    assert [tuple(t.shape) for t in inputs] == EXPECTED_SHAPES[name]["inputs"]
    outputs = _as_tensors(demo.run())
    assert [tuple(t.shape) for t in outputs] == EXPECTED_SHAPES[name]["outputs"]
    assert all(torch.isfinite(t).all() for t in outputs)


def test_fusion_returns_a_dict_of_diagnosis_and_severity():
    out = demos.load("fusion").run()
    assert list(out) == ["diagnosis", "severity"]


def test_transformer_sample_is_a_long_sequence_with_a_separator():
    tokens = demos.load("transformer").inputs
    assert tokens.dtype == torch.long
    assert tokens[0, data.REVERSAL_DIGITS].item() == data.SEP
    assert tokens.max().item() < data.VOCAB_SIZE


@pytest.mark.parametrize("name", demos.DEMOS)
def test_eval_mode_is_deterministic(name):
    demo = demos.load(name)
    first, second = _as_tensors(demo.run()), _as_tensors(demo.run())
    assert all(torch.equal(a, b) for a, b in zip(first, second))


@pytest.mark.parametrize("name", demos.DEMOS)
def test_pretrained_weights_change_the_output(name):
    trained = _as_tensors(demos.load(name).run())
    random = _as_tensors(demos.load(name, pretrained=False).run())
    assert all(not torch.allclose(a, b, atol=1e-3) for a, b in zip(trained, random))


@pytest.mark.parametrize("name", demos.DEMOS)
def test_random_init_is_repeatable_and_leaves_the_global_rng_alone(name):
    state = torch.random.get_rng_state()
    first = demos.load(name, pretrained=False).model.state_dict()
    second = demos.load(name, pretrained=False).model.state_dict()
    assert torch.equal(torch.random.get_rng_state(), state)
    assert all(torch.equal(first[k], second[k]) for k in first)


def test_unknown_demo_names_the_choices():
    with pytest.raises(
        ValueError, match="unknown demo 'vgg'.*unet, fusion, resnet, transformer, vit"
    ):
        demos.load("vgg")


# -- shipped weights ------------------------------------------------------------------------


@pytest.mark.parametrize("name", demos.DEMOS)
def test_weights_file_is_a_float16_state_dict_matching_the_model(name):
    path = Path(str(demos.weights_file(name)))
    state = torch.load(path, map_location="cpu", weights_only=True)
    model_state = demos.load(name, pretrained=False).model.state_dict()
    assert set(state) == set(model_state)
    for key, tensor in state.items():
        assert tensor.shape == model_state[key].shape, key
        if tensor.is_floating_point():
            assert tensor.dtype == torch.float16, key


def test_weights_stay_small():
    total = sum(Path(str(demos.weights_file(name))).stat().st_size for name in demos.DEMOS)
    assert total < 2 * 1024 * 1024


@pytest.mark.slow
@pytest.mark.parametrize("seed", FRESH_SEEDS)
def test_unet_segments_fresh_images(seed):
    metrics = demos.evaluate("unet", n=64, seed=seed)
    assert metrics["iou"] >= 0.8


@pytest.mark.slow
@pytest.mark.parametrize("seed", FRESH_SEEDS)
def test_resnet_classifies_fresh_stripes(seed):
    assert demos.evaluate("resnet", n=512, seed=seed)["accuracy"] >= 0.9


@pytest.mark.slow
@pytest.mark.parametrize("seed", FRESH_SEEDS)
def test_fusion_beats_chance_and_the_mean_baseline(seed):
    metrics = demos.evaluate("fusion", n=1000, seed=seed)
    assert metrics["chance_accuracy"] < 0.45
    assert metrics["accuracy"] >= 0.9
    assert metrics["severity_mse"] < 0.25 * metrics["mean_baseline_mse"]


def test_fusion_needs_both_modalities():
    model = demos.load("fusion").model
    image, clinical, diagnosis, _ = data.clinical_batch(1000, seed=data.EVAL_SEED)
    with torch.no_grad():
        no_image = model(torch.zeros_like(image), clinical)["diagnosis"].argmax(1)
        no_table = model(image, torch.zeros_like(clinical))["diagnosis"].argmax(1)
    assert (no_image == diagnosis).float().mean() < 0.7
    assert (no_table == diagnosis).float().mean() < 0.7


@pytest.mark.slow
@pytest.mark.parametrize("seed", FRESH_SEEDS)
def test_transformer_reverses_held_out_sequences(seed):
    assert demos.evaluate("transformer", n=1000, seed=seed)["token_accuracy"] >= 0.95


@pytest.mark.slow
@pytest.mark.parametrize("seed", FRESH_SEEDS)
def test_vit_finds_where_the_shape_lies(seed):
    # 16 cells; a shape near a cell border is ambiguous
    assert demos.evaluate("vit", n=1000, seed=seed)["accuracy"] >= 0.8  # chance: 1 in 16


@pytest.mark.slow
def test_random_init_does_not_solve_the_tasks():
    assert demos.evaluate("resnet", demos.load("resnet", pretrained=False).model)["accuracy"] < 0.5
    random_transformer = demos.load("transformer", pretrained=False).model
    assert demos.evaluate("transformer", random_transformer)["token_accuracy"] < 0.3
    assert demos.evaluate("vit", demos.load("vit", pretrained=False).model)["accuracy"] < 0.2


# -- attention maps -------------------------------------------------------------------------


def test_attention_maps_are_causal_distributions_and_leave_the_logits_unchanged():
    demo = demos.load("transformer")
    with torch.no_grad():
        logits, maps = demo.model(demo.inputs, return_attentions=True)
    assert torch.equal(logits, demo.run())
    assert len(maps) == len(demo.model.blocks)
    for attn in maps:
        assert tuple(attn.shape) == (1, 4, 16, 16)
        torch.testing.assert_close(attn.sum(dim=-1), torch.ones(1, 4, 16))
        assert (attn.triu(diagonal=1) == 0).all()


def test_trained_attention_reads_the_mirrored_position():
    model = demos.load("transformer").model
    tokens, _ = data.reversal_batch(200, seed=data.EVAL_SEED)
    with torch.no_grad():
        _, maps = model(tokens, return_attentions=True)
    queries = torch.arange(data.REVERSAL_DIGITS, 2 * data.REVERSAL_DIGITS)
    keys = 2 * data.REVERSAL_DIGITS - 1 - queries  # the digit this position must copy
    mirrored = torch.stack([attn[:, :, queries, keys].mean(dim=(0, 2)) for attn in maps])
    assert mirrored.max() > 0.8  # some head is a clear anti-diagonal
    assert (
        mirrored.max()
        > 5
        * demos.load("transformer", pretrained=False)
        .model(tokens, return_attentions=True)[1][0][:, :, queries, keys]
        .mean()
    )


def test_vit_attention_rollout_from_the_cls_token_peaks_on_the_shape():
    """The model's own attention (computed here from its q, k: no capture involved), rolled
    out through the blocks (Abnar & Zuidema), peaks on a patch the shape covers: the trained
    model finds the shape; a random one does not."""
    images, _ = data.shape_place_batch(200, seed=data.EVAL_SEED)
    bright = images[:, 0].reshape(200, 8, 4, 8, 4).mean(dim=(2, 4))
    ground = bright.flatten(1).median(dim=1).values[:, None, None]

    def peak_on_shape(model) -> float:
        maps = []

        def grab(module, args, _out):
            (x,) = args
            q, k, _ = module.qkv(x).view(*x.shape[:2], 3, module.heads, -1).permute(2, 0, 3, 1, 4)
            maps.append((q @ k.transpose(-1, -2) * q.shape[-1] ** -0.5).softmax(-1).mean(1))

        hooks = [block.attn.register_forward_hook(grab) for block in model.blocks]
        with torch.no_grad():
            model(images)
        for hook in hooks:
            hook.remove()
        n = maps[0].shape[-1]
        rolled = torch.eye(n).expand(len(images), n, n)
        for a in maps:
            mixed = 0.5 * torch.eye(n) + 0.5 * a
            rolled = (mixed / mixed.sum(-1, keepdim=True)) @ rolled
        at = rolled[:, 0, 1:].argmax(-1)
        hit = (bright - ground).flatten(1)[torch.arange(len(images)), at] > 0.3
        return hit.float().mean().item()

    assert peak_on_shape(demos.load("vit").model) >= 0.8
    assert peak_on_shape(demos.load("vit", pretrained=False).model) < 0.5


def test_too_long_sequences_name_the_limit():
    model = demos.load("transformer", pretrained=False).model
    with pytest.raises(ValueError, match="max_len is 16"):
        model(torch.zeros(1, 17, dtype=torch.long))


# -- data -----------------------------------------------------------------------------------

GENERATORS = [
    lambda seed: data.shapes_batch(3, seed=seed),
    lambda seed: data.clinical_batch(3, seed=seed),
    lambda seed: data.stripes_batch(3, seed=seed),
    lambda seed: data.reversal_batch(3, seed=seed),
    lambda seed: data.shape_place_batch(3, seed=seed),
]


@pytest.mark.parametrize("generate", GENERATORS)
def test_generators_are_seeded(generate):
    state = torch.random.get_rng_state()
    first, again, other = generate(1), generate(1), generate(2)
    assert torch.equal(torch.random.get_rng_state(), state)
    assert all(torch.equal(a, b) for a, b in zip(first, again))
    assert not all(torch.equal(a, b) for a, b in zip(first, other))


def test_shape_masks_mark_the_bright_pixels():
    images, masks = data.shapes_batch(32, seed=0)
    inside, outside = images[masks > 0.5].mean(), images[masks < 0.5].mean()
    assert inside - outside > 0.5
    assert 0.05 < masks.mean() < 0.5


def test_clinical_labels_follow_the_documented_rule():
    _image, clinical, diagnosis, severity = data.clinical_batch(200, seed=0)
    marker = clinical[:, data.CLINICAL_FEATURES.index("marker")]
    assert torch.equal(diagnosis % 2, (marker > 0).long())
    assert set(diagnosis.tolist()) == {0, 1, 2, 3}
    assert severity.dtype == torch.float32


# -- docstrings and the training script -----------------------------------------------------


@pytest.mark.parametrize("module", [demos, data, unet, fusion, resnet, transformer, vit])
def test_docstring_examples_run(module):
    result = doctest.testmod(module, optionflags=doctest.ELLIPSIS)
    assert result.attempted > 0
    assert result.failed == 0


def test_training_script_has_a_recipe_per_demo_and_rejects_unknown_names(monkeypatch):
    path = ROOT / "scripts" / "train_demos.py"
    spec = importlib.util.spec_from_file_location("train_demos", path)
    script = importlib.util.module_from_spec(spec)
    monkeypatch.setattr(sys, "path", list(sys.path))  # the script prepends the repository root
    monkeypatch.setitem(sys.modules, spec.name, script)
    spec.loader.exec_module(script)
    assert set(script.RECIPES) == set(demos.DEMOS)
    with pytest.raises(SystemExit):
        script.main(["vgg"])
