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


def test_callable_selection_needs_the_model_alive():
    flow = nfw.trace(zoo.seeded(zoo.UNet), torch.randn(1, 1, 16, 16), capture=False)
    import gc

    gc.collect()
    with pytest.raises(ValueError, match="no longer alive"):
        flow.select(lambda name, module: True)
