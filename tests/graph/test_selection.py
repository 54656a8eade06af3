"""Stage selection: leaves, depth, names, globs, ids, callables."""

import pytest
import torch
import zoo

import neural_flow_widget as nfw

MODEL = zoo.seeded(zoo.UNet)  # alive for the module: callable selections need the model


@pytest.fixture(scope="module")
def unet():
    return nfw.trace(MODEL, torch.randn(1, 1, 16, 16), capture=False)


def ids(flow):
    return [s.id for s in flow.stages]


def test_default_is_every_leaf_and_modules_whose_children_never_ran():
    flow = nfw.trace(zoo.seeded(zoo.Attention), torch.randn(1, 3, 6), capture=False)
    assert ids(flow) == ["embed", "attn", "norm", "out"]  # attn.out_proj never runs itself


def test_depth_selection(unet):
    assert ids(unet.select(1)) == [
        "enc1",
        "pool#0",
        "enc2",
        "pool#1",
        "bottleneck",
        "up2",
        "dec2",
        "up1",
        "dec1",
        "head",
    ]
    assert ids(unet.select(2))[:3] == ["enc1.conv", "enc1.act", "pool#0"]  # shallow leaves stay


def test_depth_selection_sees_through_containers_that_never_run():
    class Tower(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.embed = torch.nn.Linear(3, 4)
            self.blocks = torch.nn.ModuleList(torch.nn.Linear(4, 4) for _ in range(3))

        def forward(self, x):
            x = self.embed(x)
            for block in self.blocks:
                x = block(x)
            return x

    flow = nfw.trace(Tower(), torch.randn(1, 3), stages=1, capture=False)
    assert ids(flow) == ["embed", "blocks.0", "blocks.1", "blocks.2"]


def test_globs_stay_within_a_dotted_part_unless_doubled(unet):
    assert ids(unet.select(["enc*"])) == ["enc1", "enc2"]
    assert ids(unet.select(["enc*.*"])) == ["enc1.conv", "enc1.act", "enc2.conv", "enc2.act"]
    assert ids(unet.select(["**.conv"]))[:2] == ["enc1.conv", "enc2.conv"]
    assert ids(unet.select(["dec[12]"])) == ["dec2", "dec1"]


def test_stage_ids_pick_single_calls_of_a_reused_module(unet):
    assert ids(unet.select(["pool#1", "head"])) == ["pool#1", "head"]
    assert ids(unet.select(["pool"])) == ["pool#0", "pool#1"]


def test_callable_selection(unet):
    convs = unet.select(lambda name, module: isinstance(module, torch.nn.Conv2d))
    assert ids(convs) == [
        "enc1.conv",
        "enc2.conv",
        "bottleneck.conv",
        "dec2.conv",
        "dec1.conv",
        "head",
    ]


@pytest.mark.parametrize(
    "stages, error, needle",
    [
        (["enc3"], ValueError, "closest: enc2, enc1"),
        (["nothing*"], ValueError, "matches no module"),
        (0, ValueError, "depth starts at 1"),
        (True, TypeError, "not a bool"),
        (3.5, TypeError, "not float"),
        ([1], TypeError, "names or patterns"),
    ],
)
def test_bad_selections_name_the_fix(unet, stages, error, needle):
    with pytest.raises(error, match=needle):
        unet.select(stages)


@pytest.mark.slow
def test_callable_selection_needs_the_model_alive():
    flow = nfw.trace(zoo.seeded(zoo.UNet), torch.randn(1, 1, 16, 16), capture=False)
    import gc

    gc.collect()
    with pytest.raises(ValueError, match="no longer alive"):
        flow.select(lambda name, module: True)


class Compiled(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.stem = torch.nn.Conv2d(1, 4, 3, padding=1)
        self.blocks = torch.nn.Sequential(torch.nn.ReLU(), torch.nn.Conv2d(4, 4, 1))
        self.head = torch.nn.Conv2d(4, 2, 1)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.head(self.blocks(self.stem(x)))


@pytest.mark.slow
def test_a_compiled_models_own_names_select_the_original_modules():
    """``torch.compile(model).named_modules()`` lists ``_orig_mod.stem``: those names (and
    patterns, and ids) select what ``stem`` does; a compiled submodule's ``_orig_mod`` part
    anywhere in the path too. (The trace runs the model's own code eagerly: nothing compiles.)"""
    torch.manual_seed(0)
    model = Compiled()
    compiled = torch.compile(model)
    listed = [name for name, _ in compiled.named_modules() if name.count(".") == 1]
    assert listed == ["_orig_mod.stem", "_orig_mod.blocks", "_orig_mod.head"]
    x = torch.randn(1, 1, 8, 8)
    flow = nfw.trace(compiled, x, stages=listed)
    assert ids(flow) == ["stem", "blocks", "head"]
    assert ids(flow.select(["_orig_mod.blocks.*"])) == ["blocks.0", "blocks.1"]
    assert ids(nfw.trace(compiled, x, stages="_orig_mod.head")) == ["head"]
    model.blocks = torch.compile(model.blocks)  # a compiled submodule: blocks._orig_mod.1
    inner = [n for n, _ in model.named_modules() if n.endswith("_orig_mod.1")]
    assert inner == ["blocks._orig_mod.1"]
    assert ids(nfw.trace(model, x, stages=inner)) == ["blocks.1"]
    with pytest.raises(ValueError, match="no module named '_orig_mod.tail'"):
        nfw.trace(compiled, x, stages=["_orig_mod.stem", "_orig_mod.tail"])


@pytest.mark.parametrize(
    "name", ["stem", "_orig_mod.stem", "a._orig_mod.b._orig_mod.c", "x._orig_mod"]
)
def test_selection_reads_compiled_names_as_the_tracer_names_them(name):
    from neural_flow_widget.graph.selection import unwrapped
    from neural_flow_widget.tracing.modules import compiled_names

    assert unwrapped(name) == compiled_names(name)
