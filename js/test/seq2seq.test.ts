// Encoder-decoders (T5 and Whisper from their configs, tests/fixture_models.py): runs of
// blocks whose first block holds more than the others (T5's relative position bias), the
// edges out of a stack as its last member makes them, expectations derived by hand from the
// models' code.
import { describe, expect, it } from "vitest";
import { counterpart, stackable } from "../src/model/stack";
import { buildTree, holds } from "../src/model/tree";
import { buildView, type ViewGraph } from "../src/model/view_model";
import { initialState } from "../src/model/view_state";
import { decodeGraph } from "../src/wire";
import { loadRaw } from "./fixtures";
import { at } from "../src/wire_check";

const golden = loadRaw("edges_golden.json") as { cases: { name: string; graph: unknown }[] };
const goldenTree = (name: string) => buildTree(decodeGraph(golden.cases.find((c) => c.name === name)!.graph));
const edgeText = (v: ViewGraph) =>
  v.edges.map((e) => `${v.byKey.get(e.src)!.id} -> ${v.byKey.get(e.dst)!.id} ${e.kind}`).sort();

describe("T5: the first block holds the position bias, and is one of the run", () => {
  // T5Block(has_relative_attention_bias=(i == 0)): block 0's T5Attention owns an Embedding
  // (relative_attention_bias) the others lack, computes the bias with it once and hands it
  // on; all else is the same module for module, parameter shape for parameter shape.
  const t5 = goldenTree("t5_3");
  const id = (c: number) => at(t5.graph.calls, c).id;
  const call = (name: string) => t5.byId.get(name)!;

  it("runs of three from block 0, both stacks stackable", () => {
    expect(t5.runList.map((r) => r.members.map(id))).toEqual([
      ["encoder.block.0", "encoder.block.1", "encoder.block.2"],
      ["decoder.block.0", "decoder.block.1", "decoder.block.2"],
    ]);
    for (const run of t5.runList) expect(stackable(t5, run), run.key).toBe(true);
  });

  it("block 0 holds block 1: every call of block 1 has its own in block 0; the Embedding stands for itself", () => {
    const map = holds(t5.graph, t5.children, call("encoder.block.0"), call("encoder.block.1"))!;
    expect(map).not.toBeNull();
    const bias = call("encoder.block.0.layer.0.SelfAttention.relative_attention_bias");
    expect(map.has(bias)).toBe(false);
    for (const [a, b] of map) expect(id(b)).toBe(id(a).replace(/^encoder\.block\.0/, "encoder.block.1"));
    // member 2 through the run: the stepper shows it in the same drawing
    const run = t5.runs.get("encoder.block.0")!;
    expect(counterpart(t5, run, 2)!.get(call("encoder.block.0.layer.1"))).toBe(call("encoder.block.2.layer.1"));
  });

  it("but not a block with more than leaves, nor a block of other shapes", () => {
    // the decoder's block 0 has a whole cross-attention sublayer the encoder's blocks lack
    expect(holds(t5.graph, t5.children, call("decoder.block.0"), call("encoder.block.1"))).toBeNull();
    expect(holds(t5.graph, t5.children, call("encoder.block.1"), call("encoder.block.0"))).toBeNull();
    // torchvision's first Bottleneck: a projection (downsample: conv, bn) and other shapes
    const resnet = goldenTree("torchvision_resnet");
    const [b0, b1] = [resnet.byId.get("layer1.0")!, resnet.byId.get("layer1.1")!];
    expect(holds(resnet.graph, resnet.children, b0, b1)).toBeNull();
  });

  it("the stacks' edges out are the last block's: no skip from the self-attention to the final norm", () => {
    // T5LayerFF returns x + FF(norm(x)), the block's output; block k's self-attention
    // sublayer returns the bias it was given, which block k + 1 reads, but the final norm
    // reads the last block's hidden state only.
    const v = buildView(t5, initialState(t5, 1000, 1000));
    expect(v.stacks.map((s) => s.key)).toEqual(["k:encoder.block.0", "k:decoder.block.0"]);
    const out = edgeText(v).filter((e) => e.includes("final_layer_norm") && !e.startsWith("encoder.final"));
    expect(out.filter((e) => !e.startsWith("decoder.final"))).toEqual([
      "decoder.block.0.layer.2 -> decoder.final_layer_norm flow",
      "encoder.block.0.layer.1 -> encoder.final_layer_norm flow",
    ]);
    expect(edgeText(v)).toContain("encoder.dropout#1 -> decoder.block.0.layer.1 merge"); // the cross-attention
  });
});
