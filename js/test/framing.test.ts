// Framing a view (app/framing.ts): Present prefers a shallower level whose names are large to
// a deeper one at the readable size; a state the user opened that fits nowhere while
// presenting gives way to a starting level (kept otherwise); and a canvas that changed size
// by RELAY_PX or more asks for the view to be laid out again.
import { describe, expect, it } from "vitest";
import { Framing, fitsAt, RELAY_PX } from "../src/app/framing";
import { PRESENT_K } from "../src/app/presenter";
import { LayoutClient } from "../src/layout/client";
import { playbackSteps } from "../src/model/playback";
import { buildTree } from "../src/model/tree";
import { buildView, type ViewState } from "../src/model/view_model";
import { initialState, toggleExpanded } from "../src/model/view_state";
import { better, shownAt } from "../src/layout/bands";
import { layoutRequest, MINIMAP_STRIP, NODE_H, pictureBox, READ_K, SIDE_W, THUMB_H } from "../src/scene/scene";
import { decodeGraph } from "../src/wire";
import { loadGraph, loadRaw } from "./fixtures";

const gpt = buildTree(loadGraph("wire_transformer12.json"));
const unet = buildTree(loadGraph("wire_unet.json"));
const client = new LayoutClient(false);
const canvas = (w: number, h: number) => ({ clientWidth: w, clientHeight: h }) as HTMLElement;
const framing = (c: HTMLElement) => new Framing(client, c);

describe("Framing.lay", () => {
  it("presents the level that fits at the larger type rather than a deeper one at the readable size", async () => {
    const c = canvas(1000, 600);
    const start = initialState(gpt);
    const read = await framing(c).lay(start, buildView(gpt, start), "TB", true, READ_K);
    const present = await framing(c).lay(start, buildView(gpt, start), "TB", true, PRESENT_K);
    // the readable first view is deeper than the presented one; the presented one fits at 1.5x
    expect(read.view.nodes.length).toBeGreaterThan(present.view.nodes.length);
    expect(fitsAt(present, { w: 1000, h: 600, k: PRESENT_K, reserve: 0 })).toBe(true);
    expect(fitsAt(read, { w: 1000, h: 600, k: PRESENT_K, reserve: 0 })).toBe(false);
    expect(present.state.auto).toBe(true);
  });

  it("keeps a state the user opened, but gives way to a starting level when presenting it cannot fit", async () => {
    let opened: ViewState = initialState(unet);
    for (const id of ["enc1", "enc2", "bottleneck", "dec1", "dec2"])
      if (unet.byId.has(id)) opened = toggleExpanded(unet, opened, unet.byId.get(id)!);
    opened = { ...opened, auto: false };
    const c = canvas(600, 400);
    const kept = await framing(c).lay(opened, buildView(unet, opened), "TB", false, READ_K);
    expect(kept.state).toBe(opened);
    const presented = await framing(c).lay(opened, buildView(unet, opened), "TB", true, PRESENT_K);
    expect(presented.state.auto).toBe(true);
    expect(presented.view.nodes.length).toBeLessThan(kept.view.nodes.length);
    // ... and with data on the graph (nodes with pictures), framed afresh
    const f = framing(c);
    f.thumbs = true;
    const pictured = await f.lay(opened, buildView(unet, opened), "TB", true, READ_K);
    expect(pictured.state.auto).toBe(true);
    expect(pictured.view.nodes.length).toBeLessThan(kept.view.nodes.length);
  });
});

describe("Framing.lay with data on the graph", () => {
  it("puts the pictures beside the words where no level fits with them under (a U: as tall as without)", async () => {
    const c = canvas(1100, 440);
    const fit = { w: 1100, h: 440, k: READ_K, reserve: 0 };
    const start = initialState(unet);
    const plain = await framing(c).lay(start, buildView(unet, start), "TB", true);
    const f = framing(c);
    f.thumbs = true;
    const pictured = await f.lay(start, buildView(unet, start), "TB", true);
    // no level fits with the pictures under the words: they go beside them, the whole U in view
    expect(fitsAt(pictured, fit)).toBe(true);
    expect(pictured.view.nodes.length).toBe(plain.view.nodes.length);
    const stages = pictured.view.nodes.filter((n) => n.kind === "stage").map((n) => pictured.boxes[n.key]!);
    expect(stages.length).toBeGreaterThan(4);
    for (const [, , w, h] of stages) {
      expect(h).toBe(NODE_H);
      expect(pictureBox(w, h, NODE_H)[0]).toBe(w - SIDE_W); // drawn on the right end
    }
    const under = await client.layout(layoutRequest(pictured.view, "TB", fit, "under"));
    expect(fitsAt(under, fit)).toBe(false);
    // a view laid out again (the inspector opened) keeps them beside
    const again = await f.lay(pictured.state, pictured.view, "TB", false, READ_K, "canvas");
    expect(again.boxes[pictured.view.nodes.find((n) => n.kind === "stage")!.key]![3]).toBe(NODE_H);
    // where they fit under (a wide canvas), they are under
    const wide = framing(canvas(1600, 1400));
    wide.thumbs = true;
    const tall = await wide.lay(start, buildView(unet, start), "TB", true);
    expect(tall.boxes[tall.view.nodes.find((n) => n.kind === "stage")!.key]![3]).toBe(NODE_H + THUMB_H + 8);
  });
});

describe("Framing.lay with data on the graph where nothing fits", () => {
  it("draws the shallowest level's pictures the way that shows more of it (under where it is too wide)", async () => {
    // the 12 blocks' column on a wide, low canvas (under shows more), the U on a small one (beside)
    for (const [tree, w, h] of [
      [gpt, 900, 160],
      [unet, 600, 300],
    ] as const) {
      const fit = { w, h, k: READ_K, reserve: MINIMAP_STRIP };
      const f = framing(canvas(w, h));
      f.thumbs = true;
      const start = initialState(tree);
      const got = await f.lay(start, buildView(tree, start), "TB", true);
      expect(fitsAt(got, fit)).toBe(false);
      const shows = (l: { width: number; height: number }) => shownAt(l.width, l.height, fit);
      for (const look of ["under", "beside"] as const) {
        const other = await client.layout(layoutRequest(got.view, "TB", fit, look));
        expect(better(shows(other), shows(got), 1)).toBe(false);
      }
    }
  });
});

describe("Framing.outgrown", () => {
  it("asks for a new layout once the canvas has changed by RELAY_PX or more", async () => {
    const c = { clientWidth: 1000, clientHeight: 600 };
    const f = framing(c as HTMLElement);
    const start = initialState(gpt);
    expect(f.outgrown()).toBe(false); // nothing laid out yet
    await f.lay(start, buildView(gpt, start), "TB", true);
    const at = (w: number, h: number) => {
      Object.assign(c, { clientWidth: w, clientHeight: h });
      return f.outgrown();
    };
    expect(at(1000 + RELAY_PX - 1, 600)).toBe(false);
    expect(at(1000, 600 - RELAY_PX + 1)).toBe(false);
    expect(at(1000 - RELAY_PX, 600)).toBe(true);
    expect(at(1000, 600 + RELAY_PX)).toBe(true);
  });

  it("keeps a starting level laid out again for a narrower canvas where it fits wrapped", async () => {
    const c = { clientWidth: 1280, clientHeight: 660 };
    const f = framing(c as HTMLElement);
    const start = initialState(gpt);
    const wide = await f.lay(start, buildView(gpt, start), "TB", true);
    Object.assign(c, { clientWidth: 900 }); // the inspector opened beside it
    const again = await f.lay(wide.state, wide.view, "TB", false, READ_K, "canvas");
    expect(again.state).toBe(wide.state);
    expect(fitsAt(again, { w: 900, h: 660, k: READ_K, reserve: 0 })).toBe(true);
  });
});

describe("Framing.lay after opening a block", () => {
  it("folds the other open blocks, farthest first, while the view does not fit (an accordion)", async () => {
    const c = canvas(1280, 660);
    const fit = { w: 1280, h: 660, k: READ_K, reserve: 0 };
    const f = framing(c);
    let framed = await f.lay({ ...initialState(unet), auto: false }, buildView(unet, initialState(unet)), "TB", true);
    const open = async (id: string) => {
      const state = toggleExpanded(unet, framed.state, unet.byId.get(id)!);
      framed = await f.lay(state, buildView(unet, state), "TB", false, READ_K, "expand");
      return state;
    };
    const names = () => [...framed.state.expanded].map((x) => unet.graph.calls[x]!.id).sort();
    await open("enc1");
    await open("enc2");
    expect(names()).toEqual(["enc1", "enc2"]); // both fit: nothing folds
    const asked = await open("bottleneck");
    // all three do not fit, wrapped or not ...
    const plain = await framing(c).lay(asked, buildView(unet, asked), "TB", false, READ_K);
    expect(fitsAt(plain, fit)).toBe(false);
    // ... so the encoder's blocks fold, the farthest first, until the bottleneck fits open
    // unwrapped (wrapped, folding enc1 alone would fit: a view that needs no bands comes first)
    expect(names()).toEqual(["bottleneck"]);
    expect(fitsAt(framed, fit)).toBe(true);
    // not after another action: a state the user set up stays as it is
    const other = await framing(c).lay(asked, buildView(unet, asked), "TB", false, READ_K, "reveal");
    expect(other.state).toBe(asked);
  });
});

describe("Framing.lay for a step of playback", () => {
  // the 12-block transformer's first view: its blocks one stack, open (taller than 500 px)
  const start = { ...initialState(gpt), auto: false };
  const steps = playbackSteps(gpt, start);
  const step = (key: string) => steps.find((s) => s.key === key)!;
  const lay = async (key: string, w: number, h: number) => {
    const s = step(key);
    const f = framing(canvas(w, h));
    return { s, r: await f.lay(s.state, buildView(gpt, s.state), "TB", false, READ_K, "playback", key) };
  };

  it("folds what is away from the step where the view does not fit beside the inspector", async () => {
    const { s, r } = await lay("s:embed", 700, 500);
    expect(
      fitsAt(await framing(canvas(700, 500)).lay(s.state, buildView(gpt, s.state), "TB", false), {
        w: 700,
        h: 500,
        k: READ_K,
        reserve: 0,
      }),
    ).toBe(false); // as asked, it does not fit
    // the block's sublayers each one node ("norm2 -> mlp"), or the blocks one "x 12" node
    expect((r.state.parts?.size ?? 0) > 0 || (r.state.stacked?.size ?? 0) === 0).toBe(true);
    expect(r.view.byKey.has("s:embed")).toBe(true);
    expect(fitsAt(r, { w: 700, h: 500, k: READ_K, reserve: 0 })).toBe(true);
  });

  it("folds away from the step for a starting level laid out again beside the inspector", async () => {
    // the steps ran on while the inspector opened: the first view, a starting level, is laid
    // out again for the narrower canvas with the step as its focus
    const c = { clientWidth: 1280, clientHeight: 720 };
    const f = framing(c as HTMLElement);
    const first = await f.lay(initialState(gpt), buildView(gpt, initialState(gpt)), "TB", true);
    expect(first.state.auto).toBe(true);
    Object.assign(c, { clientWidth: 700, clientHeight: 500 });
    const fit = { w: 700, h: 500, k: READ_K, reserve: 0 };
    const kept = await framing(canvas(700, 500)).lay(first.state, first.view, "TB", false, READ_K, "canvas");
    expect(fitsAt(kept, fit)).toBe(false); // the level kept, wrapped: too tall
    const r = await f.lay(first.state, first.view, "TB", false, READ_K, "canvas", "s:embed");
    expect(fitsAt(r, fit)).toBe(true);
    expect(r.view.byKey.has("s:embed")).toBe(true);
  });

  it("keeps the stack open while the step is in it, and folds nothing where the view fits", async () => {
    const inside = await lay("s:layers.0.mlp", 700, 500);
    expect([...(inside.r.state.stacked ?? [])]).toEqual([...(inside.s.state.stacked ?? [])]);
    const roomy = await lay("s:embed", 1200, 900);
    expect(roomy.r.state).toBe(roomy.s.state);
  });
});

describe("Framing.lay for a view too wide for the canvas", () => {
  // BERT's embeddings opened: word, position and token type embeddings side by side, the
  // last two read no data (their ids come from buffers: "runs after")
  const golden = loadRaw("edges_golden.json") as { cases: { name: string; graph: unknown }[] };
  const bert = buildTree(decodeGraph(golden.cases.find((c) => c.name === "bert_padded")!.graph));
  const first = initialState(bert);
  const shown = buildView(bert, first).byKey.has("s:embeddings.word_embeddings");
  const opened = { ...(shown ? first : toggleExpanded(bert, first, bert.byId.get("embeddings")!)), auto: false };
  const ids = ["word_embeddings", "position_embeddings", "token_type_embeddings"].map((n) => `s:embeddings.${n}`);

  it("stands the sources on the trunk where that shows more (beside the inspector at 1024 px), not where it fits beside", async () => {
    const wide = await framing(canvas(3000, 3000)).lay(opened, buildView(bert, opened), "TB", false);
    expect(new Set(ids.map((id) => wide.boxes[id]![1])).size).toBe(1); // one row, where it fits
    const w = 480;
    const narrow = await framing(canvas(w, 700)).lay(opened, buildView(bert, opened), "TB", false);
    const x = ids.map((id) => narrow.boxes[id]![0] + narrow.boxes[id]![2] / 2);
    expect(new Set(ids.map((id) => narrow.boxes[id]![1])).size).toBe(3); // one under the other
    expect(Math.max(...x) - Math.min(...x)).toBeLessThan(1); // on the trunk's line
    expect(narrow.width).toBeLessThan(wide.width);
  });

  it("keeps the root's sources beside its trunk where all of them on it is too tall (BERT's mask)", async () => {
    // 500 x 1020: the embeddings side by side are too wide, every source on its trunk too
    // tall (the mask a row of its own); the embeddings one under the other, the mask beside
    const fit = { w: 500, h: 1020, k: READ_K, reserve: 0 };
    const r = await framing(canvas(fit.w, fit.h)).lay(opened, buildView(bert, opened), "TB", false);
    expect(fitsAt(r, fit)).toBe(true);
    expect(new Set(ids.map((id) => r.boxes[id]![1])).size).toBe(3);
    const [, my, , mh] = r.boxes["i:input:attention_mask"]!;
    const beside = Object.entries(r.boxes).filter(
      ([k, [, y, , h]]) => (k.startsWith("s:") || k.startsWith("c:")) && y < my + mh && my < y + h,
    );
    expect(beside.length).toBeGreaterThan(0); // beside the trunk (the embeddings), not a row of its own
  });
});
