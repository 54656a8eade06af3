// The names on nodes (scene/names.ts): a module's short name, and the indexed block around it
// where no box of the view names that block. Expected from the module paths of the models'
// code (diffusers' UNet2DConditionModel: down_blocks.N.resnets.M), not from the drawing.
import { describe, expect, it } from "vitest";
import { buildTree } from "../src/model/tree";
import { buildView, type ViewState } from "../src/model/view_model";
import { layoutRequest } from "../src/scene/scene";
import { contextOf, lastPart, stageTitle } from "../src/scene/names";
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
});
