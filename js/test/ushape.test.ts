// A U-Net drawn as a U (layout/ushape.ts): the demo U-Net's placement is pinned, and a
// diffusers UNet2DConditionModel (the real fixture graph, tests/fixtures/edges_golden.json
// "unet2d_condition") is a U too: down blocks on one side, up blocks on the other, each level
// matched, skips straight across, the conditioning beside it, its buses never behind a node.
import { describe, expect, it } from "vitest";
import { type Box, computeLayout, type Direction, type FitTarget, GROUP_PAD } from "../src/layout/layout";
import { FIT_MARGIN } from "../src/layout/flow";
import { INSPECTOR_MIN } from "../src/app/viewfinder";
import { buildTree, type CallTree } from "../src/model/tree";
import { buildView, type ViewState } from "../src/model/view_model";
import { initialState, toggleExpanded } from "../src/model/view_state";
import { buildScene, layoutRequest, MINIMAP_STRIP, READ_K } from "../src/scene/scene";
import { segmentHitsBox } from "../src/layout/flow";
import { decodeGraph } from "../src/wire";
import { loadGraph, loadRaw, must } from "./fixtures";

const golden = loadRaw("edges_golden.json") as { cases: { name: string; graph: unknown }[] };
const goldenTree = (name: string) => buildTree(decodeGraph(golden.cases.find((c) => c.name === name)!.graph));
const round = (b: number[]) => b.map((v) => Math.round(v * 10) / 10);
const layoutOf = (tree: CallTree, state: ViewState, dir: Direction = "TB") =>
  computeLayout(layoutRequest(buildView(tree, state), dir));
const open = (tree: CallTree, ...ids: string[]) =>
  ids.reduce((s, id) => toggleExpanded(tree, s, tree.byId.get(id)!), initialState(tree));

describe("the demo U-Net keeps its U", () => {
  const unet = buildTree(loadGraph("wire_unet.json"));
  const demo = goldenTree("demo_unet");
  it.each([
    ["first view", unet, [] as string[], "TB" as Direction],
    ["on its side", unet, [], "LR" as Direction],
    ["bottleneck open", unet, ["bottleneck"], "TB" as Direction],
    ["enc1 and dec1 open", unet, ["enc1", "dec1"], "TB" as Direction],
    ["the demo", demo, [], "TB" as Direction],
  ])("%s: boxes and routes as before", (_, tree, ids, dir) => {
    const lay = layoutOf(tree, open(tree, ...ids), dir);
    const boxes = Object.fromEntries(Object.entries(lay.boxes).map(([k, b]) => [k, round(b)]));
    const routes = Object.fromEntries(Object.entries(lay.routes).map(([k, r]) => [k, round(r)]));
    expect({ boxes, routes, w: Math.round(lay.width), h: Math.round(lay.height) }).toMatchSnapshot();
  });
});

describe("the demo U-Net beside the inspector at 1024 px", () => {
  const unet = buildTree(loadGraph("wire_unet.json"));
  const fit: FitTarget = { w: 1024 - INSPECTOR_MIN, h: 768 - 48, k: READ_K, reserve: MINIMAP_STRIP };
  it("raises its head up the decoder's side: the whole U at 12 px, still a U", () => {
    const lay = computeLayout(layoutRequest(buildView(unet, initialState(unet)), "TB", fit));
    expect(lay.width * READ_K + 2 * FIT_MARGIN).toBeLessThanOrEqual(fit.w);
    expect(lay.height * READ_K + 2 * FIT_MARGIN).toBeLessThanOrEqual(fit.h);
    const box = (key: string) => must(lay.boxes, key);
    const mid = (b: Box) => b[0] + b[2] / 2;
    const level = (b: Box) => b[1] + b[3] / 2;
    const [head, dec1, enc1] = [box("s:head"), box("s:dec1"), box("s:enc1")];
    expect(Math.abs(mid(head) - mid(dec1))).toBeLessThan(1); // over the decoder's top
    expect(head[1] + head[3]).toBeLessThan(dec1[1]);
    expect(mid(enc1)).toBeLessThan(mid(dec1));
    // the level's skip straight across into the concatenation under dec1
    const joins = Object.entries(lay.boxes).filter(([k]) => k.startsWith("j:"));
    expect(joins.some(([, j]) => Math.abs(level(j) - level(enc1)) < 0.5 && mid(j) > mid(enc1))).toBe(true);
    // the canvas without the inspector: the head on to the side, as the paper draws it
    const wide = computeLayout(layoutRequest(buildView(unet, initialState(unet)), "TB", { ...fit, w: 1280 }));
    expect(wide.boxes["s:head"]![0]).toBeGreaterThan(wide.boxes["s:dec1"]![0] + wide.boxes["s:dec1"]![2]);
  });
});

describe("a diffusers UNet2DConditionModel is a U", () => {
  const tree = goldenTree("unet2d_condition");
  const centre = (b: Box): [number, number] => [b[0] + b[2] / 2, b[1] + b[3] / 2];
  const states: [string, () => ViewState][] = [
    ["first view", () => initialState(tree)],
    ["down_blocks.0 open", () => open(tree, "down_blocks.0")],
  ];

  it.each(states)("%s: down blocks down one side, up blocks up the other, each level matched", (_, state) => {
    const view = buildView(tree, state());
    const lay = computeLayout(layoutRequest(view, "TB"));
    const box = (id: string) => lay.boxes[`s:${id}`] ?? must(lay.boxes, `c:${id}`);
    const [x0, y0] = centre(box("down_blocks.0"));
    const [x1] = centre(box("down_blocks.1"));
    const [xm, ym] = centre(box("mid_block"));
    const [u0x] = centre(box("up_blocks.0"));
    const [u1x] = centre(box("up_blocks.1"));
    expect(x0).toBeLessThan(xm);
    expect(x1).toBeLessThan(xm);
    expect(u0x).toBeGreaterThan(xm);
    expect(u1x).toBeGreaterThan(xm);
    expect(ym).toBeGreaterThan(y0);
    // each level's skip straight across: down_blocks.1 -> up_blocks.0 at both ends' level,
    // down_blocks.0 -> up_blocks.1 at down_blocks.0's (below it where it is open: its exit)
    const straight = (r: number[]) => r.filter((_, i) => i % 2 === 1).every((y) => Math.abs(y - r[1]!) < 0.5);
    const deep = must(lay.routes, "s:down_blocks.1>s:up_blocks.0");
    expect(straight(deep)).toBe(true);
    expect(Math.abs(deep[1]! - centre(box("up_blocks.0"))[1])).toBeLessThan(0.5);
    expect(Math.abs(deep[1]! - centre(box("down_blocks.1"))[1])).toBeLessThan(0.5);
    const d0 = box("down_blocks.0");
    const outer = Object.entries(lay.routes).find(
      ([k]) => k.endsWith(">s:up_blocks.1") && k.includes("down_blocks.0"),
    )![1];
    const end = outer.length - 1;
    expect(Math.abs(outer[end]! - centre(box("up_blocks.1"))[1])).toBeLessThan(0.5);
    expect(Math.abs(outer[end]! - outer[end - 2]!)).toBeLessThan(0.5); // arrives across
    if (lay.boxes["c:down_blocks.0"]) expect(outer[end]).toBeGreaterThan(d0[1] + d0[3]);
    else {
      expect(straight(outer)).toBe(true);
      expect(Math.abs(y0 - centre(box("up_blocks.1"))[1])).toBeLessThan(0.5);
    }
    // the shared skips come down the middle, into their target beside its level skip
    const shared = must(lay.routes, "s:conv_in>s:up_blocks.1");
    const xs = shared.filter((_, i) => i % 2 === 0);
    expect(Math.min(...xs)).toBeGreaterThanOrEqual(box("conv_in")[0] + box("conv_in")[2] - 0.5);
    expect(Math.max(...xs)).toBeLessThanOrEqual(box("up_blocks.1")[0] + 0.5);
    // nothing overlaps; the conditioning beside the encoder, above its first level
    const keys = view.nodes.map((n) => n.key);
    for (let i = 0; i < keys.length; i++) {
      for (let j = i + 1; j < keys.length; j++) {
        const [a, b] = [must(lay.boxes, keys[i]!), must(lay.boxes, keys[j]!)];
        expect(
          a[0] < b[0] + b[2] && b[0] < a[0] + a[2] && a[1] < b[1] + b[3] && b[1] < a[1] + a[3],
          `${keys[i]} / ${keys[j]}`,
        ).toBe(false);
      }
    }
    for (const k of ["s:time_embedding", "i:input:encoder_hidden_states"]) {
      const b = must(lay.boxes, k);
      expect(b[0] + b[2]).toBeLessThan(box("conv_in")[0]);
      expect(b[1] + b[3]).toBeLessThan(d0[1]);
    }
  });

  it("up_blocks.1 open: upside down on the rising side, its skip across at down_blocks.0's level into its entry below it", () => {
    const view = buildView(tree, open(tree, "up_blocks.1"));
    const lay = computeLayout(layoutRequest(view, "TB"));
    const [xd, yd] = centre(must(lay.boxes, "s:down_blocks.0"));
    const [xm, ym] = centre(must(lay.boxes, "s:mid_block"));
    const up = must(lay.boxes, "c:up_blocks.1");
    expect(xd).toBeLessThan(xm);
    expect(up[0]).toBeGreaterThan(xm);
    expect(up[1] + up[3]).toBeLessThan(ym);
    const inner = view.nodes.filter((n) => n.key.startsWith("s:up_blocks.1."));
    expect(inner.length).toBeGreaterThanOrEqual(3);
    for (const n of inner) expect(centre(must(lay.boxes, n.key))[0]).toBeGreaterThan(xm);
    // the level skip leaves down_blocks.0 across at its centre and turns up into the group
    const skip = must(lay.routes, "s:down_blocks.0>c:up_blocks.1");
    expect(Math.abs(skip[1]! - yd)).toBeLessThan(0.5);
    expect(Math.abs(skip[skip.length - 1]! - (up[1] + up[3]))).toBeLessThan(GROUP_PAD + 0.5);
    expect(yd).toBeGreaterThan(up[1] + up[3]);
  });

  // beside the inspector at its least on a 1024 x 768 page: too narrow for the conditioning
  // beside the encoder (either way: 978 px at 1:1), as high as the U with it above
  const inspected: FitTarget = { w: 1024 - INSPECTOR_MIN, h: 768 - 46, k: READ_K, reserve: MINIMAP_STRIP };
  it("beside the inspector: the conditioning above the encoder, the U whole at 12 px", () => {
    const view = buildView(tree, initialState(tree));
    const lay = computeLayout(layoutRequest(view, "TB", inspected));
    expect(lay.width * READ_K + 2 * FIT_MARGIN).toBeLessThanOrEqual(inspected.w);
    expect(lay.height * READ_K + 2 * FIT_MARGIN).toBeLessThanOrEqual(inspected.h);
    const box = (id: string) => lay.boxes[`s:${id}`] ?? must(lay.boxes, `i:${id}`);
    const [xd] = centre(box("down_blocks.0"));
    const [xm, ym] = centre(box("mid_block"));
    const [xu, yu] = centre(box("up_blocks.0"));
    expect(xd).toBeLessThan(xm);
    expect(xu).toBeGreaterThan(xm);
    expect(yu).toBeLessThan(ym);
    expect(Math.abs(centre(box("down_blocks.1"))[1] - yu)).toBeLessThan(0.5); // level
    // the timestep's chain and the text above the encoder's input, each clear of the tail
    const sample = box("input:sample");
    for (const id of ["input:timestep", "time_proj", "time_embedding", "input:encoder_hidden_states"]) {
      const b = box(id);
      expect(b[1] + b[3], id).toBeLessThan(sample[1]);
      expect(b[0], id).toBeGreaterThanOrEqual(box("down_blocks.0")[0] - 0.5);
    }
    const keys = view.nodes.map((n) => n.key);
    for (const [i, a] of keys.entries())
      for (const b of keys.slice(i + 1)) {
        const [p, q] = [must(lay.boxes, a), must(lay.boxes, b)];
        const hit = p[0] < q[0] + q[2] && q[0] < p[0] + p[2] && p[1] < q[1] + q[3] && q[1] < p[1] + p[3];
        expect(hit, `${a} / ${b}`).toBe(false);
      }
  });

  it.each([
    ...states.map(([name, state]): [string, () => ViewState, FitTarget?] => [name, state]),
    ["up_blocks.1 open", () => open(tree, "up_blocks.1")],
    ["beside the inspector", () => initialState(tree), inspected],
  ] as [string, () => ViewState, FitTarget?][])(
    "%s: the timestep and text buses pass behind no node",
    (_, state, fit) => {
      const view = buildView(tree, state());
      const lay = computeLayout(layoutRequest(view, "TB", fit));
      const scene = buildScene(tree, view, lay, "TB");
      expect(scene.buses.map((b) => b.srcId).sort()).toEqual(["input:encoder_hidden_states", "time_embedding"]);
      const lines = [
        ...scene.buses.map((b) => ({ what: `bus ${b.srcId}`, ends: [b.src], pts: b.points })),
        ...scene.edges
          .filter((e) => e.from?.startsWith("b:"))
          .map((e) => ({ what: `tap ${e.srcId} -> ${e.dstId}`, ends: [e.src, e.dst], pts: e.points })),
      ];
      expect(lines.length).toBeGreaterThan(8);
      for (const { what, ends, pts } of lines) {
        for (const n of scene.nodes) {
          if (ends.includes(n.key)) continue;
          for (let i = 0; i + 3 < pts.length; i += 2) {
            expect(
              segmentHitsBox(pts[i]!, pts[i + 1]!, pts[i + 2]!, pts[i + 3]!, n.box, 2),
              `${what} behind ${n.id}`,
            ).toBe(false);
          }
        }
      }
    },
  );

  it("lies on its side left to right", () => {
    const lay = layoutOf(tree, initialState(tree), "LR");
    const c = (id: string) => centre(must(lay.boxes, `s:${id}`));
    expect(Math.abs(c("down_blocks.0")[0] - c("up_blocks.1")[0])).toBeLessThan(0.5);
    expect(c("down_blocks.0")[1]).toBeLessThan(c("mid_block")[1]);
    expect(c("mid_block")[1]).toBeLessThan(c("up_blocks.1")[1]);
    expect(c("mid_block")[0]).toBeGreaterThan(c("down_blocks.1")[0]);
  });
});

describe("a UNet whose conditioning merges before its blocks read it (SDXL's, Kandinsky's)", () => {
  // SDXL: time_ids -> add_time_proj, with text_embeds, concatenated -> add_embedding, added
  // to time_embedding: the sum every block reads. Kandinsky: image_embeds -> add_embedding
  // (added to time_embedding) and -> encoder_hid_proj (what the cross-attention reads).
  const centre = (b: Box): [number, number] => [b[0] + b[2] / 2, b[1] + b[3] / 2];
  it.each([
    ["unet2d_text_time", ["add_time_proj", "add_embedding", "time_embedding"]],
    ["unet2d_image", ["encoder_hid_proj", "add_embedding", "time_embedding"]],
  ])("%s: a U, the conditioning laid out whole beside it, the sum of embeddings a bus", (name, conditioning) => {
    const tree = goldenTree(name);
    const view = buildView(tree, initialState(tree));
    for (const fit of [undefined, { w: 1280, h: 674, k: READ_K, reserve: MINIMAP_STRIP }]) {
      const lay = computeLayout(layoutRequest(view, "TB", fit));
      const c = (id: string) => centre(must(lay.boxes, `s:${id}`));
      expect(Math.abs(c("down_blocks.0")[1] - c("up_blocks.1")[1])).toBeLessThan(0.5);
      expect(c("down_blocks.0")[0]).toBeLessThan(c("mid_block")[0]);
      expect(c("mid_block")[0]).toBeLessThan(c("up_blocks.1")[0]);
      for (const id of conditioning) expect(c(id)[1], id).toBeLessThan(c("down_blocks.0")[1]);
      const scene = buildScene(tree, view, lay, "TB");
      const sum = scene.buses.find((b) => b.src.startsWith("j:"));
      expect(sum, "the sum of embeddings is a bus").toBeDefined();
      expect(scene.edges.filter((e) => e.from === `b:${sum!.src}`).length).toBeGreaterThanOrEqual(4);
      // every drawn line passes behind no node but its own ends
      const lines = [
        ...scene.buses.map((b) => ({ what: `bus ${b.srcId}`, ends: [b.src], pts: b.points })),
        ...scene.edges.map((e) => ({
          what: `${e.from} -> ${e.to}`,
          ends: [e.src, e.dst, e.from, e.to],
          pts: e.points,
        })),
      ];
      for (const { what, ends, pts } of lines)
        for (const n of scene.nodes) {
          if (ends.includes(n.key)) continue;
          for (let i = 0; i + 3 < pts.length; i += 2)
            expect(
              segmentHitsBox(pts[i]!, pts[i + 1]!, pts[i + 2]!, pts[i + 3]!, n.box, 2),
              `${what} behind ${n.id}`,
            ).toBe(false);
        }
    }
  });
});

describe("a U whose mid block alone reads the text (DownBlock2D and UpBlock2D round UNetMidBlock2DCrossAttn)", () => {
  // UNet2DConditionModel.forward hands encoder_hidden_states to every block that has
  // attention: here only the mid block, so the text is one edge, no bus; it was drawn as one
  // column, down and up, its skips nested rectangles beside it
  it("is a U, the text's line beside the encoder into the mid block's top, behind no node", () => {
    const centre = (b: Box): [number, number] => [b[0] + b[2] / 2, b[1] + b[3] / 2];
    const tree = goldenTree("unet2d_mid");
    const view = buildView(tree, initialState(tree));
    for (const fit of [undefined, { w: 1280, h: 674, k: READ_K, reserve: MINIMAP_STRIP }]) {
      const lay = computeLayout(layoutRequest(view, "TB", fit));
      const box = (key: string) => must(lay.boxes, key);
      const c = (id: string) => centre(box(`s:${id}`));
      expect(Math.abs(c("down_blocks.0")[1] - c("up_blocks.1")[1])).toBeLessThan(0.5);
      expect(Math.abs(c("down_blocks.1")[1] - c("up_blocks.0")[1])).toBeLessThan(0.5);
      expect(c("down_blocks.1")[0]).toBeLessThan(c("mid_block")[0]);
      expect(c("mid_block")[0]).toBeLessThan(c("up_blocks.0")[0]);
      expect(c("mid_block")[1]).toBeGreaterThan(c("down_blocks.1")[1]);
      const scene = buildScene(tree, view, lay, "TB");
      const text = scene.edges.find((e) => e.src === "i:input:encoder_hidden_states")!;
      expect(text.dst).toBe("s:mid_block");
      const [x, y] = text.points.slice(-2) as [number, number];
      const mid = box("s:mid_block");
      expect(Math.abs(y - mid[1])).toBeLessThan(0.5); // into its top
      expect(x).toBeGreaterThan(mid[0]);
      for (const e of scene.edges)
        for (const n of scene.nodes) {
          if ([e.src, e.dst, e.from, e.to].includes(n.key)) continue;
          for (let i = 0; i + 3 < e.points.length; i += 2)
            expect(
              segmentHitsBox(e.points[i]!, e.points[i + 1]!, e.points[i + 2]!, e.points[i + 3]!, n.box, 2),
              `${e.src} -> ${e.dst} behind ${n.id}`,
            ).toBe(false);
        }
    }
  });
});

describe("a U that fits no way: the arrangement that shows the most of it (layout/ushape_fit.ts)", () => {
  it("SDXL's U a little too large for the canvas: its conditioning one column, not side by side and cut", () => {
    // at this scale one column of conditioning shows 97 % of the U (a few px off its bottom),
    // the conditioning side by side (as high as the canvas, the earlier choice) three quarters
    const tree = goldenTree("unet2d_text_time");
    const view = buildView(tree, initialState(tree));
    const fit = { w: 1280, h: 674, k: 0.945, reserve: 0 };
    const lay = computeLayout(layoutRequest(view, "TB", fit));
    const shown =
      Math.min(1, (fit.w - 2 * FIT_MARGIN) / (lay.width * fit.k)) *
      Math.min(1, (fit.h - 2 * FIT_MARGIN) / (lay.height * fit.k));
    expect(shown).toBeLessThan(1);
    expect(shown).toBeGreaterThanOrEqual(0.95);
    const [text, added] = [must(lay.boxes, "i:input:encoder_hidden_states"), must(lay.boxes, "s:add_embedding")];
    expect(text[1]).toBeGreaterThan(added[1] + added[3]); // one under the other
    expect(must(lay.boxes, "s:time_embedding")[0]).toBeLessThan(must(lay.boxes, "s:down_blocks.0")[0]);
  });
});
