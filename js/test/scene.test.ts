// Scene edges: ports spread along a node's sides, so flow and skip edges never share an end;
// edges that share a laid-out route get lanes; edges into and out of groups go around nodes.
import { describe, expect, it } from "vitest";
import { type Box, computeLayout, type Direction } from "../src/layout/layout";
import { buildTree, type CallTree } from "../src/model/tree";
import { buildView, type ViewState } from "../src/model/view_model";
import { initialState, toggleExpanded, toggleUnfolded } from "../src/model/view_state";
import { signsDrawn } from "../src/model/glyphs";
import { segmentHitsBox } from "../src/layout/flow";
import {
  clusterHeaderWidth,
  estimate,
  type Measure,
  PORT_H,
  portHeight,
  portLines,
  portWidth,
  stageWidth,
} from "../src/scene/request";
import { buildScene, layoutRequest } from "../src/scene/scene";
import type { Scene, SceneEdge } from "../src/scene/types";
import { loadGraph, loadRaw } from "./fixtures";
import { decodeGraph } from "../src/wire";

const unet = buildTree(loadGraph("wire_unet.json"));
const gpt = buildTree(loadGraph("wire_transformer12.json"));

function scene(tree: CallTree, state: ViewState, dir: Direction): Scene {
  const view = buildView(tree, state);
  return buildScene(tree, view, computeLayout(layoutRequest(view, dir)), dir);
}

const bottleneck = toggleExpanded(unet, initialState(unet), unet.byId.get("bottleneck")!);
const block = toggleExpanded(gpt, toggleUnfolded(initialState(gpt), "layers.0"), gpt.byId.get("layers.3")!);
const cases: [string, Scene][] = [];
for (const dir of ["TB", "LR"] as const) {
  cases.push([`U-Net ${dir}`, scene(unet, initialState(unet), dir)]);
  cases.push([`U-Net, bottleneck open ${dir}`, scene(unet, bottleneck, dir)]);
  cases.push([`transformer, block 3 open ${dir}`, scene(gpt, block, dir)]);
}

describe.each(cases)("ports: %s", (_, sc) => {
  const tb = sc.dir === "TB";
  const ends = (key: string, out: boolean) =>
    sc.edges
      .filter((e) => (out ? e.src : e.dst) === key)
      .map((e) => {
        const p = e.points;
        const i = out ? 0 : p.length - 2;
        return { e, x: p[i]!, y: p[i + 1]!, nx: p[out ? 2 : i - 2]!, ny: p[out ? 3 : i - 1]! };
      });

  // Which side of a box a point lies on, or null when it is not on the border.
  const sideOf = (b: Box, x: number, y: number): "top" | "bottom" | "left" | "right" | null => {
    const [bx, by, bw, bh] = b;
    const within = (v: number, lo: number, len: number) => v > lo && v < lo + len;
    if (Math.abs(y - by) < 1e-6 && within(x, bx, bw)) return "top";
    if (Math.abs(y - by - bh) < 1e-6 && within(x, bx, bw)) return "bottom";
    if (Math.abs(x - bx) < 1e-6 && within(y, by, bh)) return "left";
    if (Math.abs(x - bx - bw) < 1e-6 && within(y, by, bh)) return "right";
    return null;
  };
  const drawnBox = (key: string) =>
    (sc.nodes.find((n) => n.key === key) ?? sc.junctions.find((j) => j.key === key))?.box;

  it("every edge starts on the border of what it is drawn from and ends on the border of what it is drawn to", () => {
    let trunk = 0;
    for (const e of [...sc.edges, ...sc.stubs]) {
      const n = e.points.length;
      const [x0, y0, x1, y1] = [e.points[0]!, e.points[1]!, e.points[n - 2]!, e.points[n - 1]!];
      const from = drawnBox(e.from);
      const to = drawnBox(e.to);
      if (from) expect(sideOf(from, x0, y0), `${e.key} leaves ${e.from}`).not.toBeNull();
      if (to) expect(sideOf(to, x1, y1), `${e.key} enters ${e.to}`).not.toBeNull();
      // an edge between two nodes in one column (the trunk of a chain) leaves the outgoing side
      // and enters the incoming side
      if (e.from === e.src && e.to === e.dst && n === 4 && (tb ? x0 === x1 && y0 < y1 : y0 === y1 && x0 < x1)) {
        trunk++;
        expect(sideOf(from!, x0, y0), e.key).toBe(tb ? "bottom" : "right");
        expect(sideOf(to!, x1, y1), e.key).toBe(tb ? "top" : "left");
      }
    }
    expect(trunk).toBeGreaterThan(0);
  });

  it("edges sharing a node's side get their own ports, leaving and entering square to it", () => {
    let shared = 0;
    for (const n of sc.nodes) {
      for (const out of [true, false]) {
        const list = ends(n.key, out).filter((p) => (out ? p.e.from : p.e.to) === n.key);
        for (const side of ["top", "bottom", "left", "right"] as const) {
          const here = list.filter((p) => sideOf(n.box, p.x, p.y) === side);
          const vertical = side === "top" || side === "bottom";
          // the first segment is square to the side: no edge leaves a port sideways over its neighbour
          for (const p of here)
            expect(vertical ? p.nx : p.ny, `${p.e.key} ${side}`).toBeCloseTo(vertical ? p.x : p.y, 6);
          if (here.length < 2) continue;
          shared++;
          const along = here.map((p) => (vertical ? p.x : p.y)).sort((a, b) => a - b);
          for (let i = 1; i < along.length; i++)
            expect(along[i]! - along[i - 1]!, `${n.key} ${side}`).toBeGreaterThanOrEqual(7);
        }
      }
    }
    // a U's nodes have one edge a side; the transformer's residual stream shares sides
    if (_.startsWith("transformer")) expect(shared).toBeGreaterThan(0);
  });

  it("ports are ordered like the edges' directions, so they do not cross at the node", () => {
    // Where an edge is across the flow, `d` along the flow away from the node's side (on its polyline).
    const acrossAt = (pts: number[], out: boolean, d: number) => {
      const n = pts.length / 2;
      const P = (i: number) => (out ? i : n - 1 - i);
      const a = (i: number) => pts[2 * P(i) + (tb ? 1 : 0)]!;
      const c = (i: number) => pts[2 * P(i) + (tb ? 0 : 1)]!;
      const target = a(0) + (out ? d : -d);
      for (let i = 1; i < n; i++) {
        const [a0, a1] = [a(i - 1), a(i)];
        if ((target - a0) * (target - a1) <= 0 && a0 !== a1)
          return c(i - 1) + ((target - a0) / (a1 - a0)) * (c(i) - c(i - 1));
      }
      return c(n - 1);
    };
    for (const n of sc.nodes) {
      for (const out of [true, false]) {
        const list = ends(n.key, out);
        if (list.length < 2) continue;
        const byPort = [...list].sort((a, b) => (tb ? a.x - b.x : a.y - b.y)).map((p) => acrossAt(p.e.points, out, 16));
        for (let i = 1; i < byPort.length; i++)
          expect(byPort[i]! + 0.5, `${n.key} ${out ? "out" : "in"}: ${byPort}`).toBeGreaterThanOrEqual(byPort[i - 1]!);
      }
    }
  });
});

describe.each(cases)("lanes: %s", (_, sc) => {
  it("no edge runs through a node it does not connect (group entries and exits detour along the margin)", () => {
    for (const e of sc.edges) {
      for (const n of sc.nodes) {
        if (n.key === e.src || n.key === e.dst) continue;
        for (let i = 2; i < e.points.length; i += 2) {
          const hit = segmentHitsBox(e.points[i - 2]!, e.points[i - 1]!, e.points[i]!, e.points[i + 1]!, n.box, 2);
          expect(hit, `${e.key} crosses ${n.key}`).toBe(false);
        }
      }
    }
  });

  it("no two edges of different sources share a point, also where they share a laid-out route into or out of a group", () => {
    // edges of one source may share a line (one line with taps); data of two sources never
    const seen = new Map<string, SceneEdge>();
    for (const e of sc.edges) {
      for (let i = 0; i < e.points.length; i += 2) {
        const p = `${e.points[i]!.toFixed(1)},${e.points[i + 1]!.toFixed(1)}`;
        const other = seen.get(p);
        expect(other === undefined || other.src === e.src, `${e.key} and ${other?.key} meet at ${p}`).toBe(true);
        seen.set(p, e);
      }
    }
  });
});

describe("skip edges of a U", () => {
  it("run straight across: one straight segment from the encoder stage to the decoder side", () => {
    for (const [name, sc] of cases.filter(([k]) => k.startsWith("U-Net ") && !k.includes("open"))) {
      const skips = sc.edges.filter((e) => e.kind === "skip");
      expect(skips.length, name).toBe(2);
      for (const e of skips) {
        expect(e.points.length, `${name} ${e.key}`).toBe(4);
        const across = sc.dir === "TB" ? e.points[1]! - e.points[3]! : e.points[0]! - e.points[2]!;
        expect(Math.abs(across), `${name} ${e.key}`).toBeLessThan(0.5);
      }
      const fromEnc1 = sc.edges.filter((e) => e.src === "s:enc1");
      expect(fromEnc1.map((e) => e.kind).sort()).toEqual(["flow", "skip"]);
      expect(fromEnc1[0]!.points.slice(0, 2)).not.toEqual(fromEnc1[1]!.points.slice(0, 2));
    }
  });
});

describe("the legend's junction signs", () => {
  it("name each sign drawn once, in a fixed order; a junction named by its function explains itself", () => {
    const drawn = [{ glyph: "⧺" }, { glyph: "+" }, { glyph: "⧺" }, { glyph: "einsum" }];
    expect(signsDrawn(drawn)).toEqual([
      ["+", "added"],
      ["⧺", "concatenated"],
    ]);
    expect(signsDrawn([])).toEqual([]);
  });

  it("are the U-Net's concatenations and the transformer's additions, from their scenes", () => {
    const signs = (name: string) => signsDrawn(cases.find(([n]) => n === name)![1].junctions).map(([sign]) => sign);
    expect(signs("U-Net TB")).toEqual(["⧺"]);
    expect(signs("transformer, block 3 open TB")).toContain("+");
  });
});

describe("a port's width", () => {
  it("holds the whole name of a nested output (CLIP's) on two lines, cut only past some 65 characters", () => {
    const font = 7.6; // scene/request.ts: the width per character of a port's name at 13 px
    expect(portLines("input:input_ids")).toEqual(["input:input_ids"]);
    expect(portHeight("input:input_ids")).toBe(PORT_H);
    const id = "output:vision_model_output.last_hidden_state";
    expect(portLines(id)).toEqual(["output:vision_model_output", ".last_hidden_state"]);
    expect(portHeight(id)).toBeGreaterThan(PORT_H);
    for (const line of portLines(id)) expect(portWidth(id)).toBeGreaterThanOrEqual(Math.round(28 + font * line.length));
    expect(portWidth("output:".padEnd(120, "x"))).toBeLessThanOrEqual(520);
  });
});

describe("a stage's width", () => {
  it('holds the title of every pass a stack steps through (ALBERT\'s shared layer: "full_layer_layer_norm #3")', () => {
    const golden = loadRaw("edges_golden.json") as { cases: { name: string; graph: unknown }[] };
    const albert = buildTree(decodeGraph(golden.cases.find((c) => c.name === "albert")!.graph));
    // every block open, the layer group's four passes one stack (as ALBERT's first view draws it)
    const open = new Set(albert.graph.calls.map((_, i) => i).filter((i) => albert.children[i]!.length));
    const view = buildView(albert, { ...initialState(albert), expanded: open });
    const req = layoutRequest(view, "TB");
    const leaves = new Map<string, number>();
    const walk = (g: { items: ({ key: string; w: number } | { items: unknown[] })[] }) => {
      for (const x of g.items)
        if ("items" in x) walk(x as never);
        else leaves.set(x.key, x.w);
    };
    walk(req.root as never);
    const norms = view.nodes.filter((n) => n.id.includes(".full_layer_layer_norm"));
    expect(norms.length).toBeGreaterThan(0);
    const passes = albert.graph.calls.filter((c) => c.module.endsWith("full_layer_layer_norm"));
    const last = passes.reduce((a, b) => (b.call > a.call ? b : a));
    expect(last.call).toBeGreaterThan(0);
    for (const n of norms) expect(leaves.get(n.key)).toBeGreaterThanOrEqual(stageWidth(last));
  });

  it("holds a long type beside its shape (Segformer's patch embeddings), cut only past some 40 characters", () => {
    const call = (type: string) =>
      ({ module: "segformer.encoder.patch_embeddings.0", call: 0, params: 2400, type, shapes: [[1, 64, 16]] }) as never;
    const type = "SegformerOverlapPatchEmbeddings";
    expect(stageWidth(call(type))).toBeGreaterThanOrEqual(
      Math.round(40 + 7.4 * type.length + 8 * "1×64×16".length + 8),
    );
    expect(stageWidth(call("X".repeat(80)))).toBeLessThanOrEqual(380);
  });

  it("is as wide as the page measures its words, wider than an average letter gives for wide ones", () => {
    const call = { module: "m.mmmmmmmmmmmmmmmmmm", call: 0, params: 1056, type: "Linear", shapes: [[2, 32]] } as never;
    const wide: Measure = (text, kind) => (kind === "t1" ? 13 * text.length : estimate(text, kind));
    const name = "mmmmmmmmmmmmmmmmmm";
    expect(stageWidth(call)).toBeLessThan(40 + 13 * name.length); // the estimate cuts it
    expect(stageWidth(call, wide)).toBeGreaterThanOrEqual(
      Math.round(40 + 13 * name.length + estimate("1.06K", "num") + 10),
    );
    expect(stageWidth(call, estimate)).toBe(stageWidth(call));
  });
});

describe("an unfolded run's box", () => {
  // ConvNeXt's stage beside the inspector: "convnext.encoder.stages.0.layers.* (3)" over a
  // column of three narrow blocks was cut to "convnext.encoder.stage…"
  const golden = loadRaw("edges_golden.json") as { cases: { name: string; graph: unknown }[] };
  it.each(["gpt2", "t5_3", "whisper", "bart"])("%s: as wide as its header", (name) => {
    const tree = buildTree(decodeGraph(golden.cases.find((c) => c.name === name)!.graph));
    const unfolded = new Set(tree.runList.map((r) => r.key));
    const view = buildView(tree, { ...initialState(tree), stacked: undefined, unfolded });
    const scene = buildScene(tree, view, computeLayout(layoutRequest(view, "TB")), "TB");
    const runs = scene.clusters.filter((c) => c.kind === "run");
    expect(runs.length).toBeGreaterThan(0);
    for (const c of runs) expect(c.box[2], c.label).toBeGreaterThanOrEqual(clusterHeaderWidth(c.label, c.type) - 0.5);
  });
});
