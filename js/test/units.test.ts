// The units of a block (model/units.ts): a layer and the norms and activations that only pass
// its output on, expected units derived by hand from the models' forward code (torchvision's
// ResNet and Bottleneck, DenseNet's _DenseLayer, GPT-2's MLP), and the block opened that does
// not fit, which folds them as its last resort: torchvision's Bottleneck as the paper draws it.
import { describe, expect, it } from "vitest";
import { Framing, fitsAt } from "../src/app/framing";
import { LayoutClient } from "../src/layout/client";
import { allParts, allUnits, partsOf } from "../src/model/parts";
import { buildTree, type CallTree } from "../src/model/tree";
import { buildView } from "../src/model/view_model";
import { initialState, levelStates, toggleExpanded } from "../src/model/view_state";
import { READ_K } from "../src/scene/scene";
import { decodeGraph, type WireGraph } from "../src/wire";
import { loadGraph, loadRaw } from "./fixtures";
import { at } from "../src/wire_check";

const golden = loadRaw("edges_golden.json") as { cases: { name: string; graph: unknown }[] };
const goldenTree = (name: string) => buildTree(decodeGraph(golden.cases.find((c) => c.name === name)!.graph));
const units = (t: CallTree) =>
  partsOf(t).list.flatMap((p) => (p.unit ? [p.members.map((m) => at(t.graph.calls, m).id)] : []));

describe("the units of a block", () => {
  it("torchvision's ResNet: the stem's conv1 -> bn1 -> relu, each Bottleneck's three and its downsample", () => {
    // ResNet._forward_impl: x = maxpool(relu(bn1(conv1(x)))); Bottleneck.forward:
    // out = relu(bn1(conv1(x))); out = relu(bn2(conv2(out))); out = bn3(conv3(out));
    // identity = downsample(x) (Sequential(conv1x1, BatchNorm2d)); out += identity; relu(out)
    const t = goldenTree("torchvision_resnet");
    const block = (b: string, down: boolean) => [
      [`${b}.conv1`, `${b}.bn1`, `${b}.relu#0`],
      [`${b}.conv2`, `${b}.bn2`, `${b}.relu#1`],
      [`${b}.conv3`, `${b}.bn3`],
      ...(down ? [[`${b}.downsample.0`, `${b}.downsample.1`]] : []),
    ];
    expect(units(t)).toEqual([["conv1", "bn1", "relu"], ...block("layer1.0", true), ...block("layer1.1", false)]);
  });

  it("DenseNet: each layer's BN -> ReLU -> Conv twice, the paper's composite function", () => {
    // _DenseLayer: bottleneck = conv1(relu1(norm1(cat(inputs)))); new = conv2(relu2(norm2(bottleneck)))
    // (Huang et al.: "H is BN-ReLU-Conv(1x1)-BN-ReLU-Conv(3x3)"): norm1 -> relu1 -> conv1 (norm1
    // reads the concatenation: a head reads what it likes) and norm2 -> relu2 -> conv2; the stem's
    // conv0 -> norm0 -> relu0 ends in its activation (pool0 is no activation); _Transition is
    // Sequential(norm, relu, conv, pool): norm -> relu -> conv
    const t = goldenTree("torchvision_densenet");
    const layer = (b: number, l: number) => {
      const p = `features.denseblock${b}.denselayer${l}`;
      return [
        [`${p}.norm1`, `${p}.relu1`, `${p}.conv1`],
        [`${p}.norm2`, `${p}.relu2`, `${p}.conv2`],
      ];
    };
    expect(units(t)).toEqual([
      ["features.conv0", "features.norm0", "features.relu0"],
      ...[1, 2, 3].flatMap((l) => layer(1, l)),
      ["features.transition1.norm", "features.transition1.relu", "features.transition1.conv"],
      ...[1, 2, 3].flatMap((l) => layer(2, l)),
    ]);
  });

  it("diffusers' UNet2DConditionModel: GroupNorm -> SiLU -> Conv in each ResnetBlock2D, not in its head", () => {
    // ResnetBlock2D.forward: h = conv1(nonlinearity(norm1(x))); temb = time_emb_proj(nonlinearity(temb));
    // h = h + temb; h = conv2(dropout(nonlinearity(norm2(h)))); UNet2DConditionModel.forward ends
    // conv_out(conv_act(conv_norm_out(sample))): the model's own stages, no block's unit
    const t = goldenTree("unet2d_condition");
    const got = units(t);
    expect(got.filter((u) => u.includes("conv_out"))).toEqual([]);
    const b = "down_blocks.0.resnets.0";
    const resnet = got.filter((u) => u[0]!.startsWith(`${b}.`));
    expect(resnet).toEqual([
      [`${b}.norm1`, `${b}.nonlinearity#0`, `${b}.conv1`],
      [`${b}.nonlinearity#1`, `${b}.time_emb_proj`],
      [`${b}.norm2`, `${b}.nonlinearity#2`, `${b}.dropout`, `${b}.conv2`],
    ]);
    // the timestep's MLP (linear_1 -> act -> linear_2): linear_1 -> act, a layer and its activation
    expect(got).toContainEqual(["time_embedding.linear_1", "time_embedding.act"]);
  });

  it("GPT-2's MLP: c_fc -> act, not c_proj -> dropout (no norm, no activation); a starting level folds none", () => {
    // GPT2MLP: dropout(c_proj(act(c_fc(h))))
    const t = goldenTree("gpt2");
    const h = (i: number) => `transformer.h.${i}.mlp`;
    expect(units(t)).toEqual([0, 1, 2, 3].map((i) => [`${h(i)}.c_fc`, `${h(i)}.act`]));
    const keys = new Set(
      partsOf(t)
        .list.filter((p) => p.unit)
        .map((p) => p.key),
    );
    expect([...allParts(t)].filter((k) => keys.has(k))).toEqual([]);
    for (const s of levelStates(t)) expect([...(s.parts ?? [])].filter((k) => keys.has(k))).toEqual([]);
  });

  it("a unit that is all of its block (a ConvBlock's conv -> act) folds on no starting level, a part of one does", () => {
    // tests/zoo.py ConvBlock.forward: act(conv(x)); torchvision's Bottleneck: three units and
    // its downsample (Sequential(conv1x1, BatchNorm2d): all of it)
    const whole = goldenTree("unet");
    expect(units(whole).length).toBe(5);
    expect([...allUnits(whole)]).toEqual([]);
    for (const s of levelStates(whole)) expect([...(s.parts ?? [])]).toEqual([]);
    const t = goldenTree("torchvision_resnet");
    const kept = [...allUnits(t)];
    expect(kept).toContain("layer1.0.relu#0");
    expect(kept).not.toContain("layer1.0.downsample.1");
    expect(levelStates(t).some((s) => kept.some((k) => s.parts?.has(k)))).toBe(true);
  });

  // block(x) = conv -> bn -> relu, as a hand-made graph; `branch`: the block's own add also
  // reads conv's output (relu(bn(conv(x))) + conv(x)), a branch a unit would hide
  const handMade = (branch: boolean): CallTree => {
    const base = at(loadGraph("wire_unet.json").calls, 0);
    const call = (id: string, type: string, parent: number, args: number[]) => ({
      ...base,
      id,
      module: id,
      type,
      parent,
      in: args,
      args: [0],
      state: -1,
    });
    const g: WireGraph = {
      ...loadGraph("wire_unet.json"),
      inputs: ["input:0"],
      outputs: ["output:0"],
      calls: [
        call("block", "Block", -1, [0]),
        call("block.conv", "Conv2d", 0, [0]),
        call("block.bn", "BatchNorm2d", 0, [1]),
        call("block.relu", "ReLU", 0, [2]),
      ],
      ops: [
        [-1, []],
        [1, [0]],
        [2, [1]],
        [3, [2]],
        [0, branch ? [3, 1] : [3]],
      ],
      joins: [],
      input_ops: [["input:0", 0]],
      output_ops: [["output:0", [4]]],
    };
    return buildTree(g);
  };

  it("hides no branch: a layer whose output is read beyond the next member heads none", () => {
    expect(units(handMade(false))).toEqual([["block.conv", "block.bn", "block.relu"]]);
    expect(units(handMade(true))).toEqual([]);
  });
});

describe("a block opened that does not fit folds its units last", () => {
  const client = new LayoutClient(false);
  const t = goldenTree("torchvision_resnet");

  it("torchvision's Bottleneck opened at 1280 x 674 and 1024 x 722: conv -> bn -> relu one node each", async () => {
    for (const [w, h] of [
      [1280, 674],
      [1024, 722],
    ] as const) {
      const canvas = { clientWidth: w, clientHeight: h } as HTMLElement;
      const f = new Framing(client, canvas);
      const start = initialState(t);
      const first = await f.lay(start, buildView(t, start), "TB", true);
      const opened = toggleExpanded(t, first.state, t.byId.get("layer1.0")!);
      const fit = { w, h, k: READ_K, reserve: 0 };
      // as opened, its ten rows do not fit
      expect(fitsAt(await new Framing(client, canvas).lay(opened, buildView(t, opened), "TB", false), fit)).toBe(false);
      const framed = await f.lay(opened, buildView(t, opened), "TB", false, READ_K, "expand");
      expect(fitsAt(framed, fit), `${w}`).toBe(true);
      expect(framed.state.expanded.has(t.byId.get("layer1.0")!)).toBe(true);
      const ids = framed.view.nodes.map((n) => n.id);
      for (const unit of ["layer1.0.relu#0", "layer1.0.relu#1", "layer1.0.bn3"]) expect(ids).toContain(unit);
      for (const member of ["layer1.0.conv1", "layer1.0.bn2", "layer1.0.conv3"]) expect(ids).not.toContain(member);
      expect(ids).toContain("layer1.0.relu#2"); // after the add: no unit's
    }
  });

  it("in a notebook's cell (845 x 450), where it is taller than the canvas alone, its units fold", async () => {
    const [w, h] = [845, 450];
    const canvas = { clientWidth: w, clientHeight: h } as HTMLElement;
    const f = new Framing(client, canvas);
    const start = initialState(t);
    const first = await f.lay(start, buildView(t, start), "TB", true);
    const opened = toggleExpanded(t, first.state, t.byId.get("layer1.0")!);
    const framed = await f.lay(opened, buildView(t, opened), "TB", false, READ_K, "expand");
    expect(fitsAt(framed, { w, h, k: READ_K, reserve: 0 })).toBe(false); // nothing makes it fit
    expect(framed.state.expanded.has(t.byId.get("layer1.0")!)).toBe(true);
    const ids = framed.view.nodes.map((n) => n.id);
    for (const unit of ["layer1.0.relu#0", "layer1.0.relu#1", "layer1.0.bn3"]) expect(ids).toContain(unit);
    expect(ids).not.toContain("layer1.0.conv1");
  });
});
