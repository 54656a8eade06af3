// The names on nodes (scene/names.ts): a module's short name, and the indexed block around it
// where no box of the view names that block. Expected from the module paths of the models'
// code (diffusers' UNet2DConditionModel: down_blocks.N.resnets.M), not from the drawing.
import { describe, expect, it } from "vitest";
import { buildTree } from "../src/model/tree";
import { buildView, type ViewState } from "../src/model/view_model";
import { layoutRequest } from "../src/scene/scene";
import { contextOf, lastPart, stackLabel, stageContext, stageTitle } from "../src/scene/names";
import type { Run } from "../src/model/tree";
import type { ViewGraph } from "../src/model/view_model";
import { decodeGraph } from "../src/wire";
import { loadRaw } from "./fixtures";

const golden = loadRaw("edges_golden.json") as { cases: { name: string; graph: unknown }[] };
const tree = (name: string) => buildTree(decodeGraph(golden.cases.find((c) => c.name === name)!.graph));

describe("a node's name", () => {
  it("is the module's last part, with the name its indices belong to", () => {
    expect(lastPart("transformer.h.0.attn")).toBe("attn");
    expect(lastPart("resnet.encoder.stages.1.layers.0")).toBe("layers.0");
    expect(lastPart("segformer.encoder.block.0.1")).toBe("block.0.1");
    expect(lastPart("fc")).toBe("fc");
    expect(lastPart("3")).toBe("3");
  });

  it("says which block it is in where that block is drawn without a box", () => {
    const t = tree("unet2d_condition");
    const down0 = t.byId.get("down_blocks.0")!;
    const resnet = t.graph.calls[t.byId.get("down_blocks.0.resnets.0")!]!;
    const open: ViewState = { expanded: new Set([down0]), unfolded: new Set() };
    const boxed = buildView(t, open);
    const boxless = buildView(t, { ...open, inlined: new Set([down0]) });
    expect(contextOf(boxed, resnet.module)).toBe("");
    expect(stageTitle(resnet, 0, contextOf(boxed, resnet.module))).toBe("resnets.0");
    expect(stageTitle(resnet, 0, contextOf(boxless, resnet.module))).toBe("down_blocks.0.resnets.0");
    // a module right under the model, or under a block with no index, has nothing before it
    expect(contextOf(boxless, "conv_in")).toBe("");
    expect(contextOf(boxless, "mid_block.resnets.0")).toBe("");
    // ... and the node is laid out as wide as its longer name
    const width = (v: typeof boxed) => {
      const leaf = JSON.stringify(layoutRequest(v, "TB").root);
      const at = leaf.indexOf(`"s:${resnet.id}"`);
      return Number(/"w":([\d.]+)/.exec(leaf.slice(at))![1]);
    };
    expect(width(boxless)).toBeGreaterThan(width(boxed));
  });

  it("gives the whole path where the call ran outside its module's block (DiT's last layer calls block 0's norm1.emb)", () => {
    // DiTTransformer2DModel.forward: `conditioning = self.transformer_blocks[0].norm1.emb(
    // timestep, class_labels, ...)`, a second call of the module, from the model's own forward
    const t = tree("dit");
    const view = buildView(t, { expanded: new Set(), unfolded: new Set() });
    const title = (id: string) => {
      const c = t.graph.calls[t.byId.get(id)!]!;
      return stageTitle(c, c.call, stageContext(view, c));
    };
    expect(title("transformer_blocks.0.norm1.emb#1")).toBe("transformer_blocks.0.norm1.emb #1");
    expect(title("transformer_blocks.0.norm1.emb#0")).toBe("emb"); // (called by norm1)
    expect(title("transformer_blocks.0.norm1.emb.time_proj#1")).toBe("time_proj #1"); // (by emb)
    expect(title("pos_embed")).toBe("pos_embed");
  });
});

describe("a stack's header where another says the same", () => {
  // Swin-T's stages hold 2, 2, 6 and 2 SwinLayers: the first and the last stacks both say
  // "SwinLayer × 2"; their paths part at the stage's index, named with what it indexes
  const run = (prefix: string, count: number): Run =>
    ({ key: `${prefix}.0`, members: [], type: "SwinLayer", prefix, period: 1, count }) as Run;
  const stages = [0, 1, 2, 3].map((i) => run(`swin.encoder.layers.${i}.blocks`, [2, 2, 6, 2][i]!));
  const view = { stacks: [stages[0], stages[3]].map((r) => ({ run: r })) } as unknown as ViewGraph;
  it("says where their paths part: layers.0 and layers.3 (an index with its name), encoder and decoder", () => {
    expect(stackLabel(stages[0]!, view)).toBe("SwinLayer × 2 · layers.0");
    expect(stackLabel(stages[3]!, view)).toBe("SwinLayer × 2 · layers.3");
    const [enc, dec] = ["encoder.block", "decoder.block"].map((p) => ({ ...run(p, 3), type: "T5Block" }));
    const t5 = { stacks: [{ run: enc }, { run: dec }] } as unknown as ViewGraph;
    expect([stackLabel(enc!, t5), stackLabel(dec!, t5)]).toEqual(["T5Block × 3 · encoder", "T5Block × 3 · decoder"]);
  });
});
