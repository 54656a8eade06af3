import { describe, expect, it } from "vitest";
import { endKey } from "../src/model/ends";
import { playbackSteps } from "../src/model/playback";
import { familyOf } from "../src/model/ports";
import { stackable } from "../src/model/stack";
import { buildTree } from "../src/model/tree";
import { buildView, outputKey } from "../src/model/view_model";
import { initialState } from "../src/model/view_state";
import { drawnOf } from "../src/scene/request";
import { decodeGraph, type WireGraph } from "../src/wire";
import { loadRaw } from "./fixtures";

const golden = loadRaw("edges_golden.json") as { cases: { name: string; graph: unknown }[] };
const goldenTree = (name: string) => buildTree(decodeGraph(golden.cases.find((c) => c.name === name)!.graph));
const families = (outputs: string[]) =>
  [...new Set(familyOf({ outputs } as unknown as WireGraph).values())].map((f) => f.members);

// transformers' GPT-2 (4 layers) called with output_hidden_states=True: GPT2Model appends the
// stream before each block (hidden_states.0 is drop's output, .k block k - 1's), then ln_f's
const HIDDEN = [0, 1, 2, 3, 4].map((k) => `output:hidden_states.${k}`);

describe("a tuple of outputs is one port", () => {
  it("finds runs of two or more items of one name, numbered in a row", () => {
    expect(families(["output:logits", ...HIDDEN])).toEqual([HIDDEN]);
    expect(families(["output:0", "output:1", "output:2"])).toEqual([]); // a plain tuple's items differ
    expect(families(["output:a.0", "output:b.1"])).toEqual([]);
    expect(families(["output:a.0", "output:a.2", "output:a.4"])).toEqual([]);
    expect(families(["output:a.0", "output:x", "output:b.2", "output:b.3", "output:b.4"])).toEqual([
      ["output:b.2", "output:b.3", "output:b.4"],
    ]);
    expect(families(["output:a.0", "output:a.1", "output:a.3", "output:a.4"])).toEqual([
      ["output:a.0", "output:a.1"],
      ["output:a.3", "output:a.4"],
    ]);
    const [family] = familyOf({ outputs: HIDDEN } as unknown as WireGraph).values();
    expect(family!.label).toBe("output:hidden_states.0 … 4");
  });

  it("GPT-2's hidden states: one port fed by drop, the stack's last sum and ln_f; the layers still stack", () => {
    const tree = goldenTree("gpt2_hidden_states");
    expect(tree.runList.map((r) => stackable(tree, r))).toEqual([true]);
    const view = buildView(tree, initialState(tree));
    const port = outputKey(HIDDEN[0]!);
    expect(view.nodes.filter((n) => n.kind === "output").map((n) => n.key)).toEqual([outputKey("output:logits"), port]);
    expect(view.stacks.length).toBe(1);
    const { drawing, trunk } = drawnOf(view);
    const into = drawing.edges.filter((e) => e.dst === port);
    expect(into.every((e) => e.kind === "flow")).toBe(true);
    const sources = into.map((e) => e.src);
    expect(sources).toContain("s:transformer.drop");
    expect(sources).toContain("s:transformer.ln_f");
    const sums = sources.filter((s) => s.startsWith("j:"));
    expect(sums.length).toBe(1);
    expect(drawing.byKey.get(sums[0]!)!.what).toBe("add");
    // the residual stream is drawn as without the hidden states: the same residual pairs
    const plain = goldenTree("gpt2");
    const plainTrunk = drawnOf(buildView(plain, initialState(plain))).trunk;
    expect(trunk.residual.size).toBe(plainTrunk.residual.size);
    expect(trunk.spine.has("s:transformer.drop")).toBe(true);
  });

  it("a lone output read from a middle layer keeps the layers from stacking (a stack would drop its edge)", () => {
    const raw = structuredClone(golden.cases.find((c) => c.name === "gpt2_hidden_states")!.graph) as {
      outputs: string[];
      output_ops: [string, number[]][];
    };
    const keep = (name: string) => name === "output:logits" || name === "output:hidden_states.2";
    const rename = (name: string) => (name === "output:hidden_states.2" ? "output:middle" : name);
    raw.outputs = raw.outputs.filter(keep).map(rename);
    raw.output_ops = raw.output_ops.filter(([name]) => keep(name)).map(([name, ops]) => [rename(name), ops]);
    const tree = buildTree(decodeGraph(raw));
    expect(tree.runList.map((r) => stackable(tree, r))).toEqual([false]);
  });

  it("GPT-2's attention weights: one port fed by the attention drawn in the stack, not by a sum", () => {
    const tree = goldenTree("gpt2_attentions");
    const view = buildView(tree, initialState(tree));
    const port = outputKey("output:attentions.0");
    expect(view.nodes.filter((n) => n.kind === "output").map((n) => n.key)).toEqual([outputKey("output:logits"), port]);
    const { drawing, trunk } = drawnOf(view);
    const into = drawing.edges.filter((e) => e.dst === port).map((e) => `${e.src} ${e.kind}`);
    expect(into).toEqual(["s:transformer.h.0.attn flow"]);
    const plain = goldenTree("gpt2");
    const pairs = (r: Set<string>) => [...r].map((p) => p.replace(/j:\d+/g, "⊕")).sort();
    expect(pairs(trunk.residual)).toEqual(pairs(drawnOf(buildView(plain, initialState(plain))).trunk.residual));
  });

  it("selecting an item marks the port; playback shows every item on it", () => {
    const tree = goldenTree("gpt2_hidden_states");
    const captured = { ...tree.graph, ends: { "output:hidden_states.3": {} } } as unknown as WireGraph;
    expect(endKey(captured, "output:hidden_states.3")).toBe(outputKey(HIDDEN[0]!));
    const steps = playbackSteps(tree, initialState(tree));
    const last = steps.slice(-HIDDEN.length);
    expect(last.map((s) => s.id)).toEqual(HIDDEN);
    expect(new Set(last.map((s) => s.key))).toEqual(new Set([outputKey(HIDDEN[0]!)]));
  });
});
