import { describe, expect, it } from "vitest";
import { buildTree } from "../src/model/tree";
import { buildView, searchCalls, type ViewState } from "../src/model/view_model";
import {
  chosenState,
  initialState,
  isShown,
  layerCount,
  revealCall,
  toggleExpanded,
  toggleUnfolded,
  visibleCount,
} from "../src/model/view_state";
import type { WireGraph } from "../src/wire";
import { loadGraph } from "./fixtures";
import { at } from "../src/wire_check";

const unet = buildTree(loadGraph("wire_unet.json"));
const gpt = buildTree(loadGraph("wire_transformer12.json"));
const none: ViewState = { expanded: new Set(), unfolded: new Set() };
const ids = (tree: typeof unet, calls: Iterable<number>) => [...calls].map((c) => at(tree.graph.calls, c).id).sort();
const edgeText = (v: ReturnType<typeof buildView>) =>
  v.edges.map((e) => `${v.byKey.get(e.src)!.id} -> ${v.byKey.get(e.dst)!.id} ${e.kind}`);

describe("view model", () => {
  it("starts as deep as stays readable: few nodes in few layers", () => {
    // Fully open, the U-Net is 22 nodes in a 24-layer chain: too tall to read, so it starts collapsed.
    const s = initialState(unet);
    expect(s.expanded.size).toBe(0);
    expect(visibleCount(unet, s)).toBe(8);
    expect(layerCount(buildView(unet, s))).toBe(10);
    const open = initialState(unet, 40, 30);
    expect(ids(unet, open.expanded)).toEqual(["bottleneck", "dec1", "dec2", "enc1", "enc2"]);
    expect(visibleCount(unet, open)).toBe(22);
    expect(layerCount(buildView(unet, open))).toBe(24);
    expect(visibleCount(unet, initialState(unet, 10, 30))).toBe(8);
  });

  it("lists visible nodes in canonical order with inputs and outputs", () => {
    const v = buildView(unet, none);
    expect(v.nodes.map((n) => n.id)).toEqual([
      "input:0",
      "enc1",
      "enc2",
      "bottleneck",
      "up2",
      "dec2",
      "up1",
      "dec1",
      "head",
      "output:0",
    ]);
    expect(v.nodes.map((n) => n.kind).filter((k) => k === "stage").length).toBe(8);
  });

  it("edges follow the expansion state; a collapsed residual block adds no skip", () => {
    const collapsed = buildView(unet, none);
    expect(edgeText(collapsed).filter((e) => e.endsWith("skip"))).toEqual(["enc2 -> dec2 skip", "enc1 -> dec1 skip"]);
    const open = buildView(unet, toggleExpanded(unet, none, unet.byId.get("bottleneck")!));
    expect(edgeText(open).filter((e) => e.endsWith("skip"))).toEqual([
      "enc2 -> up2 skip",
      "enc2 -> dec2 skip",
      "enc1 -> dec1 skip",
    ]);
    expect(edgeText(open)).toContain("enc2 -> bottleneck.conv1 flow");
    const cluster = open.items.find((i) => i.kind === "cluster")!;
    expect(cluster.key).toBe("c:bottleneck");
    expect(open.byKey.get("s:bottleneck.conv1")!.path).toEqual(["", "c:bottleneck"]);
  });

  it("leaf calls do not expand", () => {
    const up2 = unet.byId.get("up2")!;
    expect(toggleExpanded(unet, none, up2)).toBe(none);
  });
});

describe("folding", () => {
  it("finds the 12 transformer blocks as one run (and nothing in the U-Net)", () => {
    expect(unet.runList).toEqual([]);
    expect(gpt.runList.map((r) => [r.key, r.type, r.members.length])).toEqual([["layers.0", "TransformerBlock", 12]]);
  });

  it("draws one fold node; edges to members go to it, internal ones vanish", () => {
    const s = { ...initialState(gpt), stacked: undefined }; // it opens as a stack (stack.test.ts)
    expect(s.expanded.size).toBe(0);
    const v = buildView(gpt, s);
    // The trace names the model's inputs and outputs `input:<argument>` and `output:<key>`:
    // TinyGPT is called as model(input_ids=...) and returns {"logits": ...}.
    expect(v.nodes.map((n) => `${n.kind} ${n.id}`)).toEqual([
      "input input:input_ids",
      "stage embed",
      "fold layers.0",
      "stage norm",
      "stage lm_head",
      "output output:logits",
    ]);
    expect(edgeText(v)).toEqual([
      "input:input_ids -> embed flow",
      "embed -> layers.0 flow",
      "layers.0 -> norm flow",
      "norm -> lm_head flow",
      "lm_head -> output:logits flow",
    ]);
    expect(v.selection.length).toBe(3 + 12);
  });

  it("unfolds into a run container; a block expands to show its residual skips", () => {
    const unfolded = toggleUnfolded(initialState(gpt), "layers.0");
    const v = buildView(gpt, unfolded);
    expect(v.items.map((i) => i.kind)).toEqual(["stage", "run", "stage", "stage"]);
    expect(visibleCount(gpt, unfolded)).toBe(15);
    expect(edgeText(v).filter((e) => e.includes("layers.3 ") || e.includes("layers.3 ->"))).toEqual([
      "layers.2 -> layers.3 flow",
      "layers.3 -> layers.4 flow",
    ]);
    expect(edgeText(v).some((e) => e.endsWith("skip"))).toBe(false);
    const block = gpt.byId.get("layers.3")!;
    const open = buildView(gpt, toggleExpanded(gpt, unfolded, block));
    const skips = edgeText(open).filter((e) => e.endsWith("skip"));
    // Both residual adds live in the block's own forward: with the block open they show as
    // skips. The stream from layers.2 reaches layers.4 only through the first add, which
    // norm2 reads: it is shown entering norm2, and layers.3.attn carries it on (step 5b).
    expect(skips).toEqual(["layers.2 -> layers.3.norm2 skip", "layers.3.attn -> layers.4 skip"]);
  });

  it("reveal unfolds and expands what hides a call; search matches name or type", () => {
    const target = gpt.byId.get("layers.7.mlp.fc1")!;
    const s = revealCall(gpt, none, target); // from the fold (a stack shows layer 7 instead: stack.test.ts)
    const v = buildView(gpt, s);
    expect(v.byKey.has("s:layers.7.mlp.fc1")).toBe(true);
    expect(searchCalls(gpt, "LAYERS.7.mlp").map((c) => at(gpt.graph.calls, c).id)).toEqual([
      "layers.7.mlp",
      "layers.7.mlp.fc1",
      "layers.7.mlp.act",
      "layers.7.mlp.fc2",
    ]);
    expect(searchCalls(gpt, "layernorm").length).toBe(25);
  });
});

describe("graph.initial: the stages the user chose", () => {
  const withInitial = (graph: WireGraph, names: string[]) => {
    const index = new Map(graph.calls.map((c, i) => [c.id, i]));
    return buildTree({ ...graph, initial: names.map((n) => index.get(n)!) });
  };
  const shownStages = (tree: typeof unet, s: ViewState) =>
    buildView(tree, s)
      .nodes.filter((n) => n.kind !== "input" && n.kind !== "output")
      .map((n) => `${n.kind}:${n.id}`);

  it("null keeps the automatic depth", () => {
    expect(unet.graph.initial).toBeNull();
    expect(initialState(unet).expanded.size).toBe(0);
    expect(ids(gpt, initialState(buildTree({ ...gpt.graph, initial: null }), 40, 30).expanded)).toEqual(
      ids(gpt, initialState(gpt, 40, 30).expanded),
    );
  });

  it("a list shows exactly those calls: ancestors expanded, the calls collapsed", () => {
    const tree = withInitial(unet.graph, [
      "enc1.conv1",
      "enc1.act1",
      "enc1.conv2",
      "enc1.act2",
      "enc2",
      "bottleneck.conv1",
      "bottleneck.act",
      "bottleneck.conv2",
      "up2",
      "dec2",
      "up1",
      "dec1",
      "head",
    ]);
    const s = initialState(tree);
    expect(ids(tree, s.expanded)).toEqual(["bottleneck", "enc1"]);
    expect(shownStages(tree, s)).toEqual([
      "stage:enc1.conv1",
      "stage:enc1.act1",
      "stage:enc1.conv2",
      "stage:enc1.act2",
      "stage:enc2",
      "stage:bottleneck.conv1",
      "stage:bottleneck.act",
      "stage:bottleneck.conv2",
      "stage:up2",
      "stage:dec2",
      "stage:up1",
      "stage:dec1",
      "stage:head",
    ]);
    // Where the automatic rule would stop (too many layers), the user's choice still wins.
    expect(layerCount(buildView(tree, s))).toBeGreaterThan(14);
    // The depth-1 stages (stages=1) give the collapsed model.
    const top = withInitial(unet.graph, ["enc1", "enc2", "bottleneck", "up2", "dec2", "up1", "dec1", "head"]);
    expect(initialState(top).expanded.size).toBe(0);
    expect(visibleCount(top, initialState(top))).toBe(8);
  });

  it("runs fold as usual; a run opens only around a chosen call inside a member", () => {
    const blocks = withInitial(gpt.graph, [
      "embed",
      ...Array.from({ length: 12 }, (_, i) => `layers.${i}`),
      "norm",
      "lm_head",
    ]);
    expect(shownStages(blocks, initialState(blocks))).toEqual([
      "stage:embed",
      "fold:layers.0",
      "stage:norm",
      "stage:lm_head",
    ]);
    const inner = withInitial(gpt.graph, ["embed", "layers.3.attn", "norm", "lm_head"]);
    const s = initialState(inner);
    expect([...s.unfolded]).toEqual(["layers.0"]);
    expect(ids(inner, s.expanded)).toEqual(["layers.3"]);
    expect(isShown(inner, s, inner.byId.get("layers.3.attn")!)).toBe(true);
    expect(shownStages(inner, s)).toContain("stage:layers.3.attn");
    expect(shownStages(inner, s)).toContain("stage:layers.4");
  });

  it("chosenState and isShown agree with the drawn view", () => {
    for (const tree of [unet, gpt]) {
      tree.graph.calls.forEach((_, call) => {
        const s = chosenState(tree, [call]);
        const id = at(tree.graph.calls, call).id;
        const run = tree.runOf[call]! >= 0 ? at(tree.runList, tree.runOf[call]!) : null;
        // A chosen run member shows as its fold; any other chosen call as itself.
        expect(isShown(tree, s, call), id).toBe(run === null);
        expect(buildView(tree, s).byKey.has(run ? `f:${run.key}` : `s:${id}`), id).toBe(true);
        const view = buildView(tree, initialState(tree));
        expect(isShown(tree, initialState(tree), call)).toBe(view.byKey.has(`s:${at(tree.graph.calls, call).id}`));
      });
    }
  });
});
