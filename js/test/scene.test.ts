// Scene edges: ports spread along a node's sides, so flow and skip edges never share an end;
// edges that share a laid-out route get lanes; edges into and out of groups go around nodes.
import { describe, expect, it } from "vitest";
import { computeLayout, type Direction } from "../src/layout/layout";
import { buildTree, type CallTree } from "../src/model/tree";
import { buildView, initialState, toggleExpanded, toggleUnfolded, type ViewState } from "../src/model/view_model";
import { segmentHitsBox } from "../src/scene/routing";
import { buildScene, layoutRequest } from "../src/scene/scene";
import type { Scene } from "../src/scene/types";
import { loadGraph } from "./fixtures";

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
  const box = (key: string) => sc.nodes.find((n) => n.key === key)!.box;
  const ends = (key: string, out: boolean) =>
    sc.edges.filter((e) => (out ? e.src : e.dst) === key).map((e) => {
      const p = e.points;
      const i = out ? 0 : p.length - 2;
      return { e, x: p[i], y: p[i + 1], nx: p[out ? 2 : i - 2], ny: p[out ? 3 : i - 1] };
    });

  it("every edge starts on its source's outgoing side and ends on its target's incoming side", () => {
    for (const e of sc.edges) {
      const [sx, sy, sw, sh] = box(e.src);
      const [dx, dy, dw, dh] = box(e.dst);
      const n = e.points.length;
      const [x0, y0, x1, y1] = [e.points[0], e.points[1], e.points[n - 2], e.points[n - 1]];
      if (tb) {
        expect(y0, e.key).toBeCloseTo(sy + sh, 6);
        expect(x0 > sx && x0 < sx + sw, e.key).toBe(true);
        expect(y1, e.key).toBeCloseTo(dy, 6);
        expect(x1 > dx && x1 < dx + dw, e.key).toBe(true);
      } else {
        expect(x0, e.key).toBeCloseTo(sx + sw, 6);
        expect(y0 > sy && y0 < sy + sh, e.key).toBe(true);
        expect(x1, e.key).toBeCloseTo(dx, 6);
        expect(y1 > dy && y1 < dy + dh, e.key).toBe(true);
      }
    }
  });

  it("edges sharing a node's side get their own ports, leaving and entering square to it", () => {
    let shared = 0;
    for (const n of sc.nodes) {
      for (const out of [true, false]) {
        const list = ends(n.key, out);
        if (list.length < 2) continue;
        shared++;
        const across = list.map((p) => (tb ? p.x : p.y)).sort((a, b) => a - b);
        for (let i = 1; i < across.length; i++) expect(across[i] - across[i - 1], `${n.key} ${out ? "out" : "in"}`).toBeGreaterThanOrEqual(7);
        // The first segment runs along the flow: no edge leaves a port sideways over its neighbour.
        for (const p of list) expect(tb ? p.nx : p.ny, p.e.key).toBeCloseTo(tb ? p.x : p.y, 6);
      }
    }
    expect(shared).toBeGreaterThan(0);
  });

  it("ports are ordered like the edges' directions, so they do not cross at the node", () => {
    // Where an edge is across the flow, `d` along the flow away from the node's side (on its polyline).
    const acrossAt = (pts: number[], out: boolean, d: number) => {
      const n = pts.length / 2;
      const P = (i: number) => (out ? i : n - 1 - i);
      const a = (i: number) => pts[2 * P(i) + (tb ? 1 : 0)];
      const c = (i: number) => pts[2 * P(i) + (tb ? 0 : 1)];
      const target = a(0) + (out ? d : -d);
      for (let i = 1; i < n; i++) {
        const [a0, a1] = [a(i - 1), a(i)];
        if ((target - a0) * (target - a1) <= 0 && a0 !== a1) return c(i - 1) + ((target - a0) / (a1 - a0)) * (c(i) - c(i - 1));
      }
      return c(n - 1);
    };
    for (const n of sc.nodes) {
      for (const out of [true, false]) {
        const list = ends(n.key, out);
        if (list.length < 2) continue;
        const byPort = [...list].sort((a, b) => (tb ? a.x - b.x : a.y - b.y)).map((p) => acrossAt(p.e.points, out, 16));
        for (let i = 1; i < byPort.length; i++) expect(byPort[i] + 0.5, `${n.key} ${out ? "out" : "in"}: ${byPort}`).toBeGreaterThanOrEqual(byPort[i - 1]);
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
          const hit = segmentHitsBox(e.points[i - 2], e.points[i - 1], e.points[i], e.points[i + 1], n.box, 2);
          expect(hit, `${e.key} crosses ${n.key}`).toBe(false);
        }
      }
    }
  });

  it("no two edges share a point, also where they share a laid-out route into or out of a group", () => {
    const seen = new Map<string, string>();
    for (const e of sc.edges) {
      for (let i = 0; i < e.points.length; i += 2) {
        const p = `${e.points[i].toFixed(1)},${e.points[i + 1].toFixed(1)}`;
        const other = seen.get(p);
        expect(other === undefined || other === e.key, `${e.key} and ${other} meet at ${p}`).toBe(true);
        seen.set(p, e.key);
      }
    }
  });
});

describe("skip edges", () => {
  it("stay curved: more than two points, so the path bends away from the trunk", () => {
    const sc = cases[0][1];
    const skips = sc.edges.filter((e) => e.kind === "skip");
    expect(skips.length).toBe(2);
    for (const e of skips) expect(e.points.length).toBeGreaterThan(4);
    const fromEnc1 = sc.edges.filter((e) => e.src === "s:enc1");
    expect(fromEnc1.map((e) => e.kind).sort()).toEqual(["flow", "skip"]);
    expect(fromEnc1[0].points.slice(0, 2)).not.toEqual(fromEnc1[1].points.slice(0, 2));
  });
});
