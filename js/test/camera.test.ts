// view/camera.ts placeWhole: the whole graph on the canvas, as large as it can be, its nodes
// (and view/part.ts partView: part of it around a focus, where the whole does not fit)
// clear of the legend where that costs little.
import { describe, expect, it } from "vitest";
import { FIT_MARGIN } from "../src/layout/flow";
import type { Box } from "../src/layout/layout";
import { LEAST_K } from "../src/view/camera";
import { chooseShape, placeWhole } from "../src/view/whole";
import { partView } from "../src/view/part";

const onScreen = (t: { x: number; y: number; k: number }, [x, y, w, h]: Box): Box => [
  t.x + x * t.k,
  t.y + y * t.k,
  w * t.k,
  h * t.k,
];
const overlaps = (a: Box, b: Box) =>
  a[0] < b[0] + b[2] && b[0] < a[0] + a[2] && a[1] < b[1] + b[3] && b[1] < a[1] + a[3];
const inside = ([x, y, w, h]: Box, W: number, H: number) =>
  x >= -0.5 && y >= -0.5 && x + w <= W + 0.5 && y + h <= H + 0.5;

describe("placeWhole", () => {
  // a U: a column down on the left, one up on the right, the bottom node near the middle
  const marks: Box[] = [
    [0, 0, 200, 50],
    [0, 100, 200, 50],
    [0, 200, 200, 50],
    [300, 0, 200, 50],
    [300, 200, 200, 50],
    [150, 300, 200, 50],
  ];
  const [sw, sh] = [500, 350];

  it("fits the whole graph, centred, up to the largest scale, when nothing lies over the canvas", () => {
    const p = placeWhole(marks, sw, sh, { w: 1000, h: 600, overlays: [] }, 3, LEAST_K)!;
    expect(p.clear).toBe(true);
    expect(p.t.k).toBeCloseTo((600 - 2 * FIT_MARGIN) / 350, 5);
    expect(p.t.x + (sw * p.t.k) / 2).toBeCloseTo(500, 5);
    expect(placeWhole(marks, sw, sh, { w: 4000, h: 3000, overlays: [] }, 1.2, LEAST_K)!.t.k).toBe(1.2);
  });

  it("slides the graph aside, at the same scale, to clear a legend in a corner", () => {
    const legend: Box = [10, 560, 380, 30]; // over the bottom node, centred
    const room = { w: 1000, h: 600, overlays: [legend] };
    expect(placeWhole(marks, sw, sh, { w: 1000, h: 600, overlays: [] }, 3, LEAST_K)!.t.x + 150 * 1.53).toBeLessThan(
      390,
    );
    const p = placeWhole(marks, sw, sh, room, 3, LEAST_K)!;
    expect(p.clear).toBe(true);
    expect(p.t.k).toBeCloseTo((600 - 2 * FIT_MARGIN) / 350, 5);
    for (const m of marks) {
      expect(overlaps(onScreen(p.t, m), legend)).toBe(false);
      expect(inside(onScreen(p.t, m), 1000, 600)).toBe(true);
    }
  });

  it("fits the graph beside the legend when it cannot slide, if that costs little; else keeps the size and says so", () => {
    const legend: Box = [10, 560, 980, 30]; // the whole width: above it, a little smaller
    const p = placeWhole(marks, sw, sh, { w: 1000, h: 600, overlays: [legend] }, 3, LEAST_K)!;
    expect(p.clear).toBe(true);
    expect(p.t.k).toBeLessThan((600 - 2 * FIT_MARGIN) / 350);
    for (const m of marks) expect(overlaps(onScreen(p.t, m), legend)).toBe(false);
    const tall: Box = [10, 200, 980, 390]; // clearing it would cost too much of the scale
    const q = placeWhole(marks, sw, sh, { w: 1000, h: 600, overlays: [tall] }, 3, LEAST_K)!;
    expect(q.clear).toBe(false);
    expect(q.t.k).toBeCloseTo((600 - 2 * FIT_MARGIN) / 350, 5);
  });

  it("gives up below the least scale", () => {
    const big = marks.map(([x, y, w, h]): Box => [x * 10, y * 10, w * 10, h * 10]);
    expect(placeWhole(big, 5000, 3500, { w: 1000, h: 600, overlays: [] }, 3, LEAST_K)).toBeNull();
    expect(placeWhole(big, 5000, 3500, { w: 1000, h: 600, overlays: [] }, 3, 0.02)!.t.k).toBeCloseTo(
      (600 - 2 * FIT_MARGIN) / 3500,
      5,
    );
  });

  it("keeps the nodes in the margins and lets a line beyond them (a bus' lane) run into them", () => {
    // the marks are the U above, shifted 8 right and 8 down; the scene is 8 larger all
    // round (a bus round the outside): scaled to the marks, on the canvas whole
    const moved = marks.map(([x, y, w, h]): Box => [x + 8, y + 8, w, h]);
    const room = { w: 1000, h: 600, overlays: [] };
    const p = placeWhole(moved, sw + 16, sh + 16, room, 3, LEAST_K)!;
    expect(p.t.k).toBeCloseTo((600 - 2 * FIT_MARGIN) / 350, 5);
    for (const m of moved) {
      const [x, y, w, h] = onScreen(p.t, m);
      expect(x >= FIT_MARGIN - 0.5 && y >= FIT_MARGIN - 0.5 && x + w <= 1000 - FIT_MARGIN + 0.5).toBe(true);
      expect(y + h).toBeLessThanOrEqual(600 - FIT_MARGIN + 0.5);
    }
    expect(inside(onScreen(p.t, [0, 0, sw + 16, sh + 16]), 1000, 600)).toBe(true);
    // the layout's extent (scene.core) keeps the margin, as the framing fitted it: a badge
    // standing out of a node at the edge may run into the margin
    const badged = [...moved, [250, 350, 16, 16] as Box]; // 8 below the core
    const c = placeWhole(badged, sw + 16, sh + 16, room, 3, LEAST_K, undefined, [8, 8, sw, sh])!;
    expect(c.t.k).toBeCloseTo((600 - 2 * FIT_MARGIN) / 350, 5);
    expect(placeWhole(badged, sw + 16, sh + 16, room, 3, LEAST_K)!.t.k).toBeLessThan(c.t.k);
    // a lane farther out than the margin holds: the lines stay on the canvas, the scale gives
    const q = placeWhole(
      moved.map(([x, y, w, h]): Box => [x + 92, y + 92, w, h]),
      sw + 200,
      sh + 200,
      room,
      3,
      0.1,
    )!;
    expect(inside(onScreen(q.t, [0, 0, sw + 200, sh + 200]), 1000, 600)).toBe(true);
    expect(q.t.k).toBeCloseTo(600 / (sh + 200), 5);
  });
});

describe("chooseShape: the legend in one row or wrapped, whichever leaves the graph largest and nearest the middle", () => {
  // a language model's first view: a column as tall as the canvas, its output at the bottom
  const column: Box[] = [0, 1, 2, 3, 4, 5].map((i) => [0, i * 100, 300, 50]);
  const [W, H] = [1280, 720];
  const row: Box = [10, H - 44, 780, 34]; // one row, 780 px wide
  const wrapped: Box = [10, H - 63, 440, 53]; // wrapped into two rows
  const place = (marks: Box[], w: number, h: number, shapes: Box[]) =>
    shapes.map((o) => placeWhole(marks, w, h, { w: W, h: H, overlays: [o] }, 3, LEAST_K));
  const middle = (t: { x: number; k: number }, core: Box) => {
    const [l, r] = [t.x + core[0] * t.k, W - (t.x + (core[0] + core[2]) * t.k)];
    return Math.abs(l - r);
  };

  it("takes the wrapped legend under a tall view that slides right to clear the row", () => {
    const placed = place(column, 300, 550, [row, wrapped]);
    const [r, w] = [placed[0]!, placed[1]!];
    expect(r.clear && w.clear).toBe(true);
    expect(w.t.k).toBeCloseTo(r.t.k, 3); // as large either way (the canvas' height decides)
    expect(middle(r.t, [0, 0, 300, 550])).toBeGreaterThan(400); // slid aside beside the row
    expect(chooseShape(placed, [0, 0, 300, 550], W, H)).toBe(1);
    expect(middle(w.t, [0, 0, 300, 550])).toBeLessThan(100);
  });

  it("keeps the row under a view that is as much in the middle beside it (the first shape wins a tie)", () => {
    const wide: Box[] = [
      [0, 0, 1000, 50],
      [0, 100, 1000, 50],
    ];
    const placed = place(wide, 1000, 150, [row, wrapped]);
    expect(chooseShape(placed, [0, 0, 1000, 150], W, H)).toBe(0);
  });

  it("takes a shape that leaves the graph much larger, and one clear of the legend over one that is not", () => {
    const at = (x: number, k: number, clear = true) => ({ t: { x, y: 0, k }, clear });
    const core: Box = [0, 0, 300, 550];
    expect(chooseShape([at(800, 1.0), at(490, 1.2)], core, W, H)).toBe(1); // 20 % larger
    expect(chooseShape([at(490, 1.0), at(300, 1.05)], core, W, H)).toBe(0); // in the middle, 5 % smaller
    expect(chooseShape([at(490, 1.0, false), at(800, 0.95)], core, W, H)).toBe(1);
    expect(chooseShape([null, null], core, W, H)).toBe(-1);
    // as near the middle either way: the shape the legend is in stays
    expect(chooseShape([at(490, 1.0), at(495, 1.0)], core, W, H, undefined, 1)).toBe(1);
    expect(chooseShape([at(490, 1.0), at(800, 1.0)], core, W, H, undefined, 1)).toBe(0);
    expect(chooseShape([at(480, 1.04), at(490, 1.0)], core, W, H, undefined, 1)).toBe(0); // (larger)
  });

  it("keeps the legend off the lines where a shape of it can at the same size (GPT-2 at 1024 x 768)", () => {
    // two bands: the blocks down the left, the way out along the bottom and up the middle to
    // ln_f, lm_head and the output at the top right (the layout's coordinates)
    const [w, h] = [1024, 723];
    const nodes: Box[] = [
      ...[0, 1, 2, 3, 4, 5, 6, 7].map((i): Box => [0, i * 85, 300, 50]),
      ...[0, 1, 2].map((i): Box => [420, i * 85, 200, 50]),
    ];
    const wires: Box[] = [
      [150, 645, 1, 40], // out of the last block
      [150, 685, 230, 1], // along the bottom
      [380, 0, 1, 685], // up the middle
      [380, 0, 140, 1], // into ln_f
    ];
    const shapes: Box[] = [
      [10, h - 44, 780, 34], // one row at the left
      [w - 450, h - 63, 440, 53], // wrapped at the right
      [w - 240, h - 150, 230, 140], // a column at the right
    ];
    const placed = shapes.map((o) =>
      placeWhole(nodes, 620, 685, { w, h, overlays: [o] }, 3, LEAST_K, undefined, undefined, wires),
    );
    const core: Box = [0, 0, 620, 685];
    const [row, wrapped, column] = [placed[0]!, placed[1]!, placed[2]!];
    expect(row.t.k).toBeLessThan(column.t.k * 0.98); // the row: the blocks shrink above it
    expect(wrapped.clear && !wrapped.open).toBe(true); // the wrapped legend on the way out
    expect(column.open).toBe(true);
    expect(column.t.k).toBeCloseTo(wrapped.t.k, 3);
    expect(chooseShape(placed, core, w, h)).toBe(2);
    // without the lines, the wrapped legend as before (the first of two as good)
    const blind = shapes.map((o) => placeWhole(nodes, 620, 685, { w, h, overlays: [o] }, 3, LEAST_K));
    expect(chooseShape(blind, core, w, h)).toBe(1);
  });
});

describe("partView (view/part.ts)", () => {
  const scene = { width: 2000, height: 1500 };
  const dims: [number, number] = [1000, 600];
  const k = 12 / 14;
  it("keeps a focus that is on screen where it is, at the readable scale", () => {
    const from = { x: -400, y: -300, k: 1 };
    const focus: Box = [900, 500, 200, 60]; // on screen at 500..700, 200..260
    const t = partView(scene, focus, "TB", dims, from, k);
    expect(t.k).toBe(k);
    const [sx, sy, sw, sh] = onScreen(t, focus);
    expect(sx + sw / 2).toBeCloseTo(600, 5); // its centre where it was
    expect(sy + sh / 2).toBeCloseTo(230, 5);
  });

  it("brings a focus off screen in with the least pan, its top left first when it is larger", () => {
    const from = { x: 0, y: 0, k: 1 };
    const t = partView(scene, [1800, 1400, 150, 80], "TB", dims, from, k);
    const [sx, sy, sw, sh] = onScreen(t, [1800, 1400, 150, 80]);
    expect(inside([sx, sy, sw, sh], dims[0], dims[1])).toBe(true);
    expect(sx + sw).toBeCloseTo(dims[0] - 24, 5); // just in, at the margin
    const big: Box = [100, 100, 1400, 900];
    const [bx, by] = onScreen(partView(scene, big, "TB", dims, from, k), big);
    expect([bx, by]).toEqual([24, 24]);
  });

  it("leaves no more canvas beyond the graph's ends than the margin, and starts at the network's start without a focus", () => {
    const t = partView(scene, [0, 0, 100, 40], "TB", dims, { x: 500, y: 400, k: 1 }, k);
    expect(t.x).toBe(24);
    expect(t.y).toBe(24);
    const small = partView({ width: 300, height: 200 }, null, "TB", dims, { x: 0, y: 0, k: 1 }, k);
    expect(small.x).toBeCloseTo((1000 - 300 * k) / 2, 5); // centred across
    expect(small.y).toBe(24); // from the top
  });
});

describe("placeWhole's margin", () => {
  // Stable Diffusion's U with data in Present at 1024 px: at names 12 px high its layout is
  // 1,017 px wide, its buses round the outside; within the margins it fits at no readable
  // scale, to the canvas's edges it does, whole (view/camera.ts whole tries that second)
  const marks: Box[] = [
    [0, 0, 560, 700],
    [626, 0, 560, 700],
  ];
  const [sw, sh] = [1186, 748];
  const least = 1017 / 1186;
  it("kept round the core unless told less; with none, all of it on the canvas at the least scale", () => {
    const room = { w: 1024, h: 708, overlays: [] };
    expect(placeWhole(marks, sw, sh, room, 1.5, least)).toBeNull();
    const p = placeWhole(marks, sw, sh, { ...room, margin: 0 }, 1.5, least)!;
    expect(p.t.k).toBeGreaterThanOrEqual(least - 1e-9);
    expect(inside(onScreen(p.t, [0, 0, sw, sh]), 1024, 708)).toBe(true);
  });
});
