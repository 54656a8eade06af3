// Residual blocks (model/residual.ts) on real graphs, derived by hand from the models' code
// (tests/written_out.py, tests/zoo.py, HF GPT-2 / BERT / T5), and the scene's marks on the
// collapsed blocks and folds that hold them.
import { describe, expect, it } from "vitest";
import { computeLayout, type Direction } from "../src/layout/layout";
import { residualBlocks, residualInside, residualOf } from "../src/model/residual";
import { buildTree, type CallTree } from "../src/model/tree";
import { buildView, type ViewState } from "../src/model/view_model";
import { initialState } from "../src/model/view_state";
import { buildScene, layoutRequest } from "../src/scene/scene";
import { decodeGraph } from "../src/wire";
import { loadRaw } from "./fixtures";
import { at } from "../src/wire_check";

const golden = loadRaw("edges_golden.json") as { cases: { name: string; graph: unknown }[] };
const trees = new Map<string, CallTree>();
const tree = (name: string) => {
  let t = trees.get(name);
  if (!t) {
    t = buildTree(decodeGraph(golden.cases.find((c) => c.name === name)!.graph));
    trees.set(name, t);
  }
  return t;
};
/** "id: shortcut ×adds" of every residual block, in call order. */
const blocks = (name: string) => {
  const t = tree(name);
  return [...residualBlocks(t).values()]
    .sort((a, b) => a.call - b.call)
    .map((r) => `${at(t.graph.calls, r.call).id}: ${r.shortcut} ×${r.adds}`);
};
const scene = (t: CallTree, state: ViewState, dir: Direction = "TB") => {
  const view = buildView(t, state);
  return buildScene(t, view, computeLayout(layoutRequest(view, dir)), dir);
};
const marked = (t: CallTree, state: ViewState, dir: Direction = "TB") =>
  scene(t, state, dir)
    .nodes.filter((n) => n.residual)
    .map((n) => `${n.id} ${n.residual}`);

describe("which calls are residual blocks", () => {
  it("every torchvision Bottleneck: out += identity (downsample(x) in the first), then relu", () => {
    expect(blocks("torchvision_resnet")).toEqual(["layer1.0: projected ×1", "layer1.1: identity ×1"]);
  });

  it("zoo's BasicBlock: relu(conv2(relu(conv1(x))) + x); a pre-norm block's two adds", () => {
    expect(blocks("resnet")).toEqual(["layer1: identity ×1", "layer2: identity ×1"]);
    expect(blocks("prenorm")).toEqual(["blocks.0: identity ×2", "blocks.1: identity ×2", "blocks.2: identity ×2"]);
    expect(blocks("fixture_unet")).toEqual(["bottleneck: identity ×1"]); // conv2(act(conv1(x))) + x
  });

  it("every GPT-2 block (x + attn(ln_1(x)), then + mlp(ln_2(.))); not GPT2Model's wte + wpe, not the GELU's inner add", () => {
    expect(blocks("gpt2")).toEqual([0, 1, 2, 3].map((i) => `transformer.h.${i}: identity ×2`));
  });

  it("none in a DenseNet (its layers concatenate), a U-Net's double convs, plain Sequentials", () => {
    for (const name of [
      "torchvision_densenet",
      "demo_unet",
      "unet",
      "unet_sequential",
      "flat_mlp",
      "dense",
      "multimodal",
    ]) {
      expect(blocks(name), name).toEqual([]);
    }
  });

  it("BERT is post-norm: its attention is LN(dense(self(x)) + x), its layer LN(ff(a) + a), each add done by a child given both", () => {
    // BertAttention.forward: self.output(self.self(x), x); BertSelfOutput.forward(h, input_tensor):
    // LayerNorm(dropout(dense(h)) + input_tensor). BertLayer: self.output(self.intermediate(a), a)
    // with a = self.attention(x). The Add & Norm children (BertSelfOutput, BertOutput) join two
    // different inputs: no residual of their own; their parents are the residual blocks.
    expect(blocks("bert_padded")).toEqual(
      [0, 1, 2].flatMap((i) => [`encoder.layer.${i}: identity ×1`, `encoder.layer.${i}.attention: identity ×1`]),
    );
  });

  it("RoBERTa as BERT; its embeddings, words + token types + positions counted from the ids, no residual", () => {
    // RobertaEmbeddings.forward: position_ids = create_position_ids_from_input_ids(input_ids,
    // padding_idx) (a cumsum of the non-padding mask), then word_embeddings(input_ids) +
    // token_type_embeddings(...) + position_embeddings(position_ids): both added lookups are
    // made from the input ids, but a lookup is no projected shortcut
    expect(blocks("roberta")).toEqual(
      [0, 1].flatMap((i) => [`encoder.layer.${i}: identity ×1`, `encoder.layer.${i}.attention: identity ×1`]),
    );
  });

  it("T5's sublayers (x + dropout(attention(norm(x)))), not the T5Block around them", () => {
    const t5 = blocks("t5");
    expect(t5.length).toBeGreaterThan(0);
    for (const b of t5) expect(b).toMatch(/^(en|de)coder\.block\.\d+\.layer\.\d+: identity ×1$/);
  });

  it("DiT: AdaLN-Zero's norm(x) * (1 + scale) + shift is no residual (shift is scale's sibling, not what the branch is made from); its blocks are", () => {
    // AdaLayerNormZero.forward: emb = linear(silu(emb(timestep, class_labels))); shift_msa,
    // scale_msa, gate_msa, shift_mlp, scale_mlp, gate_mlp = emb.chunk(6); x = norm(x) * (1 +
    // scale_msa[:, None]) + shift_msa[:, None]. BasicTransformerBlock: hidden_states =
    // gate_msa * attn1(norm1(...)) + hidden_states, ... hidden_states = gate_mlp * ff(...) +
    // hidden_states: identity residuals.
    const found = blocks("dit");
    expect(found.filter((b) => b.includes("norm"))).toEqual([]);
    for (const k of [0, 1]) expect(found.some((b) => b.startsWith(`transformer_blocks.${k}: identity`))).toBe(true);
  });

  it("on every golden graph: a residual block has children and owns the add it is made by, or a child of it does (Add & Norm)", () => {
    for (const c of golden.cases) {
      const t = tree(c.name);
      const joins = new Map(t.graph.joins);
      for (const r of residualBlocks(t).values()) {
        expect(at(t.children, r.call).length, c.name).toBeGreaterThan(0);
        const owner = t.graph.ops[r.op]![0];
        expect(owner === r.call || at(t.graph.calls, owner).parent === r.call, c.name).toBe(true);
        if (owner !== r.call) expect(residualBlocks(t).has(owner), c.name).toBe(false); // no residual of its own
        expect(joins.get(r.op), c.name).toBe("add");
      }
    }
  });

  it("a fold says what its members are: all residual, mixed shortcuts, or none", () => {
    const t = tree("torchvision_resnet");
    const b0 = t.byId.get("layer1.0")!;
    const b1 = t.byId.get("layer1.1")!;
    expect(residualOf(t, [b0, b1])).toBe("mixed");
    expect(residualOf(t, [b1])).toBe("identity");
    expect(residualOf(t, [b0, t.byId.get("layer1")!])).toBeNull();
  });
});

describe("the marks on the drawing", () => {
  it("ResNet's first view marks both collapsed bottlenecks, nothing else", () => {
    const t = tree("torchvision_resnet");
    for (const dir of ["TB", "LR"] as const)
      expect(marked(t, initialState(t), dir)).toEqual(["layer1.0 projected", "layer1.1 identity"]);
  });

  it("a collapsed Sequential of residual blocks only (ResNet's layer1) says there is one in each block", () => {
    const t = tree("torchvision_resnet");
    const layer1 = t.byId.get("layer1")!;
    const state = { ...initialState(t), expanded: new Set([...initialState(t).expanded].filter((c) => c !== layer1)) };
    expect(marked(t, state)).toEqual(["layer1 mixed"]);
  });

  it("a wrapper round such a Sequential alone says so too (Hugging Face's ResNetStage: `layers(x)`)", () => {
    // torchvision's ResNet with layer1 put inside a module of its own, as Hugging Face's
    // ResNetStage holds its `layers`: folded, it marks the residual blocks inside
    const g = decodeGraph(golden.cases.find((c) => c.name === "torchvision_resnet")!.graph);
    const layer1 = g.calls.findIndex((c) => c.id === "layer1");
    const stage = { ...at(g.calls, layer1), id: "stage", module: "stage", type: "ResNetStage" };
    const calls = [...g.calls, stage];
    calls[layer1] = { ...at(g.calls, layer1), parent: calls.length - 1 };
    const t = buildTree({ ...g, calls });
    expect(residualInside(t, calls.length - 1)).toBe("mixed");
    // ... beside a leaf without weights (ConvNeXt's first stage: `downsampling_layer` an
    // nn.Identity()); beside a layer with weights, it says nothing (the stage does more)
    const leaf = (params: number) => ({
      ...at(g.calls, layer1),
      id: "stage.down",
      module: "stage.down",
      type: params ? "Conv2d" : "Identity",
      parent: calls.length - 1,
      params,
    });
    expect(residualInside(buildTree({ ...g, calls: [...calls, leaf(0)] }), calls.length - 1)).toBe("mixed");
    expect(residualInside(buildTree({ ...g, calls: [...calls, leaf(64)] }), calls.length - 1)).toBeNull();
    expect(residualInside(t, layer1)).toBe("mixed");
    expect(residualInside(t, t.byId.get("layer1.1")!)).toBe("identity");
    expect(residualInside(t, t.byId.get("conv1")!)).toBeNull();
  });

  it("a wrapper round one residual block says its shortcut (RegNet's stage of depth 1: `layers` round one layer)", () => {
    // torchvision's ResNet with layer1.0 alone put inside `stage.layers` inside `stage`
    const g = decodeGraph(golden.cases.find((c) => c.name === "torchvision_resnet")!.graph);
    const block = g.calls.findIndex((c) => c.id === "layer1.0");
    const wrap = (id: string, parent: number) => ({ ...at(g.calls, block), id, module: id, parent });
    const calls = [...g.calls, { ...wrap("stage", -1), type: "RegNetStage" }];
    calls.push({ ...wrap("stage.layers", calls.length - 1), type: "Sequential" });
    calls[block] = { ...at(g.calls, block), parent: calls.length - 1 };
    const t = buildTree({ ...g, calls });
    expect(residualInside(t, calls.length - 2)).toBe("projected");
    expect(residualInside(t, calls.length - 1)).toBe("projected");
    // round the block itself, no Sequential between (a U-Net's last down block round its one
    // resnet, whose forward does more): nothing said
    calls[block] = { ...at(g.calls, block), parent: calls.length - 2 };
    calls.pop();
    expect(residualInside(buildTree({ ...g, calls }), calls.length - 1)).toBeNull();
  });

  it("an expanded bottleneck shows its real junction instead", () => {
    const t = tree("torchvision_resnet");
    const state = { ...initialState(t), expanded: new Set([...initialState(t).expanded, t.byId.get("layer1.0")!]) };
    const sc = scene(t, state);
    expect(sc.nodes.filter((n) => n.residual).map((n) => n.id)).toEqual(["layer1.1"]);
    expect(sc.junctions.map((j) => j.glyph)).toContain("+");
  });

  it("GPT-2's blocks folded: one mark on the fold; its stacked first view draws the open block's junctions, no mark", () => {
    const t = tree("gpt2");
    const first = initialState(t);
    expect(marked(t, first)).toEqual([]);
    const folded: ViewState = {
      expanded: new Set([t.byId.get("transformer")!]),
      unfolded: new Set(),
      stacked: new Map(),
    };
    expect(marked(t, folded)).toEqual(["transformer.h.0 identity"]);
    const fold = scene(t, folded).nodes.find((n) => n.residual)!;
    expect(fold.kind).toBe("fold");
  });

  it("no mark in a DenseNet or a U-Net at any depth", () => {
    for (const name of ["torchvision_densenet", "demo_unet"]) {
      const t = tree(name);
      const all: ViewState = {
        expanded: new Set(t.graph.calls.map((_, i) => i)),
        unfolded: new Set(),
        stacked: new Map(),
      };
      expect(marked(t, initialState(t)), name).toEqual([]);
      expect(marked(t, all), name).toEqual([]);
    }
  });
});
