// Playback: the steps walk the view in execution order, one level deeper than drawn.
import { describe, expect, it } from "vitest";
import { type Asked, drawnOn, playbackSteps, relays, sameState, standIn, stepGroup } from "../src/model/playback";
import { buildTree } from "../src/model/tree";
import { buildView, type ViewState } from "../src/model/view_model";
import { initialState, toggleExpanded } from "../src/model/view_state";
import { loadGraph } from "./fixtures";
import { at } from "../src/wire_check";

const unet = buildTree(loadGraph("wire_unet.json"));
const gpt = buildTree(loadGraph("wire_transformer12.json"));

/** What the walk must visit, derived from the tree: for each drawn stage, itself when it has
 * no children, else its children; each member of a fold; the inputs first, the outputs last. */
function expectedIds(tree: typeof unet, state: ViewState): string[] {
  const view = buildView(tree, state);
  const { calls } = tree.graph;
  const ids: string[] = [];
  for (const n of view.nodes) {
    if (n.kind !== "stage" && n.kind !== "fold") continue;
    const members = n.run ? n.run.members : [n.call];
    for (const m of members) {
      const kids = n.run ? [] : at(tree.children, m);
      if (kids.length) ids.push(...kids.map((k) => at(calls, k).id));
      else ids.push(at(calls, m).id);
    }
  }
  return [...tree.graph.inputs, ...ids, ...tree.graph.outputs];
}

describe.each([
  ["U-Net", unet, initialState(unet)],
  ["U-Net, bottleneck open", unet, toggleExpanded(unet, initialState(unet), unet.byId.get("bottleneck")!)],
  ["12-block transformer, folded", gpt, { ...initialState(gpt), stacked: undefined }], // a stack: stack.test.ts
] as const)("playback steps: %s", (_, tree, state) => {
  const steps = playbackSteps(tree, state);

  it("visit what the view draws, one level deeper, from the inputs to the outputs", () => {
    expect(steps.map((s) => s.id)).toEqual(expectedIds(tree, state));
  });

  it("go in execution order", () => {
    const calls = steps.filter((s) => s.call >= 0).map((s) => s.call);
    for (let i = 1; i < calls.length; i++) expect(at(calls, i)).toBeGreaterThan(at(calls, i - 1));
  });

  it("each draw their node, opening at most the one group (or run) the walk is passing through", () => {
    for (const s of steps) {
      const view = buildView(tree, s.state);
      expect(view.byKey.has(s.key), s.key).toBe(true);
      const opened = [...s.state.expanded].filter((c) => !state.expanded.has(c));
      const unfolded = [...s.state.unfolded].filter((r) => !state.unfolded.has(r));
      expect(opened.length + unfolded.length, s.id).toBe(s.depth);
      if (opened.length) expect(at(tree.graph.calls, s.call).parent).toBe(opened[0]);
      if (unfolded.length) expect(at(tree.runList, tree.runOf[s.call]!).key).toBe(unfolded[0]);
      if (s.depth === 0) expect(sameState(s.state, state)).toBe(true);
    }
  });
});

describe("playback of a folded run", () => {
  it("unfolds it and visits each member in turn, closed", () => {
    const steps = playbackSteps(gpt, { ...initialState(gpt), stacked: undefined });
    const layers = steps.filter((s) => /^layers\.\d+$/.test(s.id));
    expect(layers.map((s) => s.id)).toEqual(Array.from({ length: 12 }, (_, i) => `layers.${i}`));
    for (const s of layers) expect(s.state.unfolded.size).toBe(1);
  });
});

describe("relays: whether a step of playback lays the view out again", () => {
  const start = { ...initialState(gpt), auto: false };
  const steps = playbackSteps(gpt, start);
  const step = (key: string) => steps.find((s) => s.key === key)!;
  const view = buildView(gpt, start);
  const drawn = (whole: boolean, state: ViewState = start, v = view) => ({ state, view: v, whole });

  it("not for a step of the state drawn while the whole model shows", () => {
    expect(relays(step("s:embed"), drawn(true), null)).toBe(false);
  });

  it("for a step of the state drawn that shows in part, once per group the walk enters", () => {
    expect(relays(step("s:embed"), drawn(false), null)).toBe(true);
    const asked: Asked = { state: start, drew: start, group: stepGroup(view, "s:embed") };
    expect(relays(step("o:output:logits"), drawn(false), asked)).toBe(true); // another group
    expect(relays(step("s:lm_head"), drawn(false), asked)).toBe(false); // the same (the root)
  });

  it("not for a step of the state asked last, drawn with its groups folded, while it shows", () => {
    const folded: ViewState = { ...start, stacked: new Map() };
    const foldedView = buildView(gpt, folded);
    const asked: Asked = { state: start, drew: folded, group: stepGroup(foldedView, "s:embed") };
    expect(relays(step("s:lm_head"), drawn(false, folded, foldedView), asked)).toBe(false);
    // a step whose node is folded away is laid out again
    expect(relays(step("s:layers.0.attn"), drawn(true, folded, foldedView), asked)).toBe(true);
  });
});

describe("a step drawn on the group that holds it (folded to fit beside the inspector)", () => {
  // the walk opens enc1 to visit its layers; app/framing.ts may draw enc1 folded instead
  const start = { ...initialState(unet), auto: false };
  const steps = playbackSteps(unet, start);
  const step = (id: string) => steps.find((s) => s.id === id)!;
  const view = buildView(unet, start); // enc1 folded: one node

  it("stands on the nearest drawn node that holds it, its name inside that node its part", () => {
    expect(view.byKey.has(step("enc1.conv2").key)).toBe(false);
    expect(standIn(view, step("enc1.conv2"))).toBe("s:enc1");
    expect(drawnOn(view, step("enc1.conv2"))).toEqual({ key: "s:enc1", part: "conv2" });
    // its own node where that is drawn; an input always
    const open = buildView(unet, step("enc1.conv2").state);
    expect(standIn(open, step("enc1.conv2"))).toBe(step("enc1.conv2").key);
    expect(standIn(view, steps[0]!)).toBe(steps[0]!.key);
  });

  it("names a fold's member in it past the members' parent", () => {
    const state = { ...initialState(gpt), stacked: undefined };
    const folded = buildView(gpt, state); // "Block x 12"
    const call = gpt.byId.get("layers.3.attn")!;
    const inside = { key: "s:layers.3.attn", id: "layers.3.attn", call, state, depth: 1 };
    const on = drawnOn(folded, inside);
    expect(folded.byKey.get(on.key)?.kind).toBe("fold");
    expect(on.part).toBe("layers.3.attn");
  });

  it("is not laid out again while the walk stays in that group, and is when it leaves it", () => {
    const first = step("enc1.conv1");
    const asked: Asked = { state: first.state, drew: start, group: stepGroup(view, first.key), holder: "s:enc1" };
    const drawn = { state: start, view, whole: true };
    expect(relays(step("enc1.act1"), drawn, asked)).toBe(false);
    expect(relays(step("enc1.act2"), drawn, asked)).toBe(false);
    expect(relays(step("enc2.conv1"), drawn, asked)).toBe(true); // another group opens
    // a group folded away for another step (the accordion, no holder): laid out again
    expect(relays(step("enc1.act1"), drawn, { ...asked, holder: undefined })).toBe(true);
  });
});
