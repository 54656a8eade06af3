// Bands (layout/bands.ts, routes.ts): where a long arrangement may be cut, and how the edges
// of a cut cross into the next band. A pre-norm residual chain (norm -> sub-layer -> (+), the
// stream (+) -> (+) beside each sub-layer) may be cut only right after a junction, where the
// stream is one value; the edges of such a cut share one connector into the next band. With
// one tall item, the cuts give it a band of its own rather than splitting the length evenly.
import { describe, expect, it } from "vitest";
import { segmentHitsBox } from "../src/layout/flow";
import { type Box, computeLayout, type Direction, type LayoutGroup, type LayoutResult } from "../src/layout/layout";
import { must } from "./fixtures";

/** input -> an open group of `blocks` pre-norm residual blocks -> output; item keys n<k>
 * (norm), s<k> (sub-layer), j<k> (junction); the stream enters n0 and j0. */
function residualChain(
  blocks: number,
  wrap?: number,
  streamOnTrunk = true,
): { root: LayoutGroup; chain: LayoutGroup; order: string[] } {
  const items: LayoutGroup["items"] = [];
  const edges: LayoutGroup["edges"] = [];
  const order: string[] = [];
  for (let k = 0; k < blocks; k++) {
    const [n, s, j] = [items.length, items.length + 1, items.length + 2];
    items.push(
      { key: `n${k}`, w: 200, h: 44 },
      { key: `s${k}`, w: 200, h: 44 },
      { key: `j${k}`, w: 22, h: 22, spine: streamOnTrunk, junction: true },
    );
    order.push(`n${k}`, `s${k}`, `j${k}`);
    edges.push({ src: n, dst: s, weight: 1 }, { src: s, dst: j, weight: 1 });
    if (k > 0) edges.push({ src: n - 1, dst: n, weight: 1 }, { src: n - 1, dst: j, weight: 1, kind: "skip" });
  }
  const chain: LayoutGroup = {
    key: "chain",
    items,
    edges,
    entries: [0, 2],
    exits: [items.length - 1],
    spine: true,
    wrap,
  };
  const root: LayoutGroup = {
    key: "root",
    items: [{ key: "in", w: 120, h: 32, spine: true }, chain, { key: "out", w: 120, h: 32, spine: true }],
    edges: [
      { src: 0, dst: 1, weight: 1 },
      { src: 1, dst: 2, weight: 1 },
    ],
  };
  return { root, chain, order };
}

/** Per key of a chain in its order, the band it stands in: a wrapped chain reads down each
 * band (TB; along it in LR) and on at the start of the next, beside it. */
function bandsOf(lay: LayoutResult, order: string[], dir: Direction = "TB"): Map<string, number> {
  const [al, ac] = dir === "TB" ? [1, 0] : [0, 1];
  const out = new Map<string, number>();
  let band = 0;
  for (const [i, k] of order.entries()) {
    const [b, prev] = [must(lay.boxes, k), i > 0 ? must(lay.boxes, order[i - 1]!) : null];
    if (prev && b[al]! <= prev[al]!) {
      expect(b[ac], `${k} beside ${order[i - 1]}`).toBeGreaterThan(prev[ac]!);
      band++;
    }
    out.set(k, band);
  }
  return out;
}

const overlaps = (a: Box, b: Box) =>
  a[0] < b[0] + b[2] && b[0] < a[0] + a[2] && a[1] < b[1] + b[3] && b[1] < a[1] + a[3];
/** Whether a point lies on a box's border (within a pixel). */
const onBorder = (x: number, y: number, b: Box) => {
  const inX = x >= b[0] - 1 && x <= b[0] + b[2] + 1;
  const inY = y >= b[1] - 1 && y <= b[1] + b[3] + 1;
  const nearX = Math.abs(x - b[0]) <= 1 || Math.abs(x - b[0] - b[2]) <= 1;
  const nearY = Math.abs(y - b[1]) <= 1 || Math.abs(y - b[1] - b[3]) <= 1;
  return inX && inY && (nearX || nearY);
};

// the stream on the trunk (a transformer's blocks), or the sub-layers on it (the trunk the
// longest path: the stream's skips then run beside them, and into the next band round them)
describe.each([
  ["TB", true],
  ["TB", false],
  ["LR", true],
  ["LR", false],
] as const)("a residual chain wraps after its junctions (%s, stream on the trunk: %s)", (dir, onTrunk) => {
  const { root, chain, order } = residualChain(4, 3, onTrunk);
  const lay = computeLayout({ dir, root });
  const band = bandsOf(lay, order, dir);
  const [al, ac] = dir === "TB" ? [1, 0] : [0, 1];

  it("is cut into bands, each cut right after a junction, never between a sub-layer and its junction", () => {
    expect(new Set(band.values()).size).toBeGreaterThanOrEqual(2);
    for (let i = 1; i < order.length; i++) {
      if (band.get(order[i]!) !== band.get(order[i - 1]!)) expect(order[i - 1]!.startsWith("j")).toBe(true);
    }
    // each block's norm, sub-layer and junction together
    for (let k = 0; k < 4; k++) expect(new Set([`n${k}`, `s${k}`, `j${k}`].map((x) => band.get(x))).size).toBe(1);
  });

  it("overlaps no node with another", () => {
    const keys = [...order, "in", "out"];
    for (let i = 0; i < keys.length; i++)
      for (let j = i + 1; j < keys.length; j++)
        expect(overlaps(must(lay.boxes, keys[i]!), must(lay.boxes, keys[j]!)), `${keys[i]} ${keys[j]}`).toBe(false);
  });

  it("routes each edge from its source's box to its target's, behind no other node", () => {
    for (const e of chain.edges) {
      const [a, b] = [chain.items[e.src]!.key, chain.items[e.dst]!.key];
      const p = must(lay.routes, `${a}>${b}`);
      expect(onBorder(p[0]!, p[1]!, must(lay.boxes, a)), `${a}>${b} starts on ${a}`).toBe(true);
      expect(onBorder(p[p.length - 2]!, p[p.length - 1]!, must(lay.boxes, b)), `${a}>${b} ends on ${b}`).toBe(true);
      for (const w of order) {
        if (w === a || w === b) continue;
        for (let i = 0; i + 3 < p.length; i += 2)
          expect(
            segmentHitsBox(p[i]!, p[i + 1]!, p[i + 2]!, p[i + 3]!, must(lay.boxes, w)),
            `${a}>${b} behind ${w}`,
          ).toBe(false);
      }
    }
  });

  it("draws a cut as one connector from the junction that parts only above the next band", () => {
    const cuts = [0, 1, 2].filter((k) => band.get(`j${k}`) !== band.get(`n${k + 1}`));
    expect(cuts.length).toBeGreaterThan(0);
    for (const k of cuts) {
      const toNorm = must(lay.routes, `j${k}>n${k + 1}`);
      const toJunction = must(lay.routes, `j${k}>j${k + 1}`);
      let shared = 0;
      while (shared < Math.min(toNorm.length, toJunction.length) && toNorm[shared] === toJunction[shared]) shared++;
      shared -= shared % 2; // whole points
      // the shared part runs into the next band's column, above its first row
      const next = must(lay.boxes, `n${k + 1}`);
      const parted = [toNorm[shared - 2]!, toNorm[shared - 1]!];
      expect(band.get(`n${k + 1}`)).toBe(band.get(`j${k}`)! + 1);
      expect(parted[al]).toBeLessThan(next[al]!);
      expect(parted[ac]).toBeGreaterThan(must(lay.boxes, `j${k}`)[ac]! + 22); // past the gap, not at the junction
      // the stream's branch ends on its junction, in the next band
      const j = must(lay.boxes, `j${k + 1}`);
      expect(onBorder(toJunction[toJunction.length - 2]!, toJunction[toJunction.length - 1]!, j)).toBe(true);
    }
  });

  it("is not cut where the stream runs beside the rows (the wrap asks for more bands than there are cuts)", () => {
    // four blocks have three cuts at most: asking for eight bands gives four
    const many = residualChain(4, 8, onTrunk);
    const got = bandsOf(computeLayout({ dir, root: many.root }), many.order, dir);
    expect(new Set(got.values()).size).toBeLessThanOrEqual(4);
  });
});

describe("cuts that show the whole largest (layout/bands.ts)", () => {
  it("gives one tall item a band of its own rather than splitting the length evenly", () => {
    // s0 s1 TALL s2 .. s7 in a chain, wrapped into three bands: even thirds would put TALL
    // with s2 (the longest band then TALL + s2); the shortest longest band holds TALL alone
    const keys = ["s0", "s1", "tall", "s2", "s3", "s4", "s5", "s6", "s7"];
    const group: LayoutGroup = {
      key: "g",
      items: keys.map((k) => ({ key: k, w: 160, h: k === "tall" ? 500 : 48 })),
      edges: keys.slice(1).map((_, i) => ({ src: i, dst: i + 1, weight: 1 })),
      entries: [0],
      exits: [keys.length - 1],
      wrap: 3,
    };
    const root: LayoutGroup = { key: "root", items: [group], edges: [] };
    const lay = computeLayout({ dir: "TB", root });
    const band = bandsOf(lay, keys);
    expect(new Set(band.values()).size).toBe(3);
    expect(keys.filter((k) => band.get(k) === band.get("tall"))).toEqual(["tall"]);
    // and the group is no taller than the tall item's band needs
    expect(must(lay.boxes, "g")[3]).toBeLessThan(500 + 150);
  });
});
