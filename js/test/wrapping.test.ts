import { describe, expect, it } from "vitest";
import { type Box, computeLayout, type LayoutGroup, type LayoutRequest } from "../src/layout/layout";
import { FIT_MARGIN, type FitTarget } from "../src/layout/flow";
import { better, shownAt } from "../src/layout/bands";
import { scaleOn, wrapToFit } from "../src/layout/wrapping";
import { must } from "./fixtures";

/** input -> an open group of `n` stages in a chain (a ConvBlock opened) -> output; `skip`: an
 * edge from the group's first stage to its last, across every row (a residual). */
function request(n: number, skip = false): LayoutRequest {
  const inner: LayoutGroup = {
    key: "block",
    items: Array.from({ length: n }, (_, i) => ({ key: `s${i}`, w: 180, h: 48 })),
    edges: [
      ...Array.from({ length: n - 1 }, (_, i) => ({ src: i, dst: i + 1, weight: 1 })),
      ...(skip ? [{ src: 0, dst: n - 1, weight: 1 }] : []),
    ],
    entries: [0],
    exits: [n - 1],
  };
  const root: LayoutGroup = {
    key: "root",
    items: [{ key: "in", w: 120, h: 36 }, inner, { key: "out", w: 120, h: 36 }],
    edges: [
      { src: 0, dst: 1, weight: 1 },
      { src: 1, dst: 2, weight: 1 },
    ],
  };
  return { dir: "TB", root };
}

const overlaps = (a: Box, b: Box) =>
  a[0] < b[0] + b[2] && b[0] < a[0] + a[2] && a[1] < b[1] + b[3] && b[1] < a[1] + a[3];
const inside = (a: Box, b: Box) =>
  a[0] >= b[0] && a[1] >= b[1] && a[0] + a[2] <= b[0] + b[2] && a[1] + a[3] <= b[1] + b[3];
const lay = async (r: LayoutRequest) => computeLayout(r);

describe("open groups wrapped for the whole (layout/wrapping.ts)", () => {
  it("wraps an opened chain into bands side by side where that makes the whole fit a wide, low canvas", async () => {
    const req = request(8);
    const first = computeLayout(req);
    // a canvas as wide as three columns and about half the chain's height
    const fit: FitTarget = { w: 900, h: Math.round(first.height * 0.55) + 48, k: 1, reserve: 0 };
    expect(scaleOn(first, fit)).toBeLessThan(1); // as it is, it does not fit
    const got = await wrapToFit({ ...req, fit }, first, lay);
    expect(scaleOn(got, fit)).toBeGreaterThanOrEqual(1);
    const block = req.root.items[1] as LayoutGroup;
    expect(block.wrap).toBeGreaterThanOrEqual(2); // the request keeps the wrap chosen
    const boxes = block.items.map((it) => must(got.boxes, it.key));
    expect(new Set(boxes.map((b) => b[0])).size).toBe(block.wrap); // one column per band
    for (const b of boxes) expect(inside(b, must(got.boxes, "block"))).toBe(true);
    for (let i = 0; i < boxes.length; i++)
      for (let j = i + 1; j < boxes.length; j++) expect(overlaps(boxes[i]!, boxes[j]!)).toBe(false);
    // the chain reads in order: down each band, then on at the top of the next
    for (let i = 1; i < boxes.length; i++) {
      const [a, b] = [boxes[i - 1]!, boxes[i]!];
      expect(b[1] > a[1] || b[0] > a[0]).toBe(true);
    }
  });

  it("keeps no wrap that shows little more of a whole that does not fit (the camera shows part of it)", async () => {
    const req = request(8);
    const first = computeLayout(req);
    const fit: FitTarget = { w: 300, h: 200, k: 1, reserve: 0 };
    const got = await wrapToFit({ ...req, fit }, first, lay);
    expect(got).toBe(first);
    expect((req.root.items[1] as LayoutGroup).wrap).toBeUndefined();
  });

  it("keeps the wrap that shows most of a whole that fits in no arrangement, clear of the strip", async () => {
    const req = request(16);
    const first = computeLayout(req);
    // wide but low: sixteen stages fit in no number of bands at scale 1, and four bands leave
    // the minimap's strip free
    const fit: FitTarget = { w: 1400, h: 300, k: 1, reserve: 172 };
    const got = await wrapToFit({ ...req, fit }, first, lay);
    const block = req.root.items[1] as LayoutGroup;
    expect(scaleOn(got, fit)).toBeLessThan(1);
    expect(block.wrap).toBeGreaterThanOrEqual(2);
    expect(got.height).toBeLessThan(first.height / 2); // shows more than twice as much of it
    expect(got.width).toBeLessThanOrEqual(fit.w - 2 * 24 - fit.reserve);
  });

  it("never cuts a chain where a second line crosses (a residual's skip runs beside every row)", async () => {
    const req = request(8, true);
    const block = req.root.items[1] as LayoutGroup;
    block.wrap = 3;
    const got = computeLayout(req);
    const xs = new Set(block.items.map((it) => must(got.boxes, it.key)[0]));
    expect(xs.size).toBeLessThanOrEqual(2); // the skip's branch beside the chain, no bands
    const ys = block.items.map((it) => must(got.boxes, it.key)[1]);
    expect(ys).toEqual([...ys].sort((a, b) => a - b)); // one column, in order
    expect(Math.max(...ys)).toBeGreaterThan(48 * 6); // still one tall column
  });

  it("ranks layouts: whole first, then clear of the minimap's strip unless the other shows enough more", () => {
    // room 1000 x 500 inside the margins, 800 beside the strip
    const fit: FitTarget = { w: 1000 + 2 * FIT_MARGIN, h: 500 + 2 * FIT_MARGIN, k: 1, reserve: 200 };
    const whole = shownAt(900, 400, fit);
    const tall = shownAt(700, 1000, fit); // clear, half of it shown
    const wide = shownAt(1000, 600, fit); // under the strip: 0.8 x 0.83 of it shown
    expect(whole.fits && !tall.fits && tall.clear && !wide.clear).toBe(true);
    expect(tall.part).toBeCloseTo(0.5);
    expect(wide.part).toBeCloseTo(0.8 * (500 / 600));
    expect(better(whole, wide, 1)).toBe(true);
    expect(better(tall, wide, 1)).toBe(true); // the strip kept free comes first ...
    expect(better(wide, tall, 1, 1.2)).toBe(true); // ... unless a fifth more shows beside it
    expect(better(shownAt(1000, 900, fit), tall, 1, 1.2)).toBe(false); // 0.44: less
  });

  it("wraps a group that a bus taps into two bands at most (its readers entered from the side)", async () => {
    // a low canvas that asks the chain for four bands; with a bus into the block (a hidden
    // edge, as the cross-attention into a decoder block), two
    const wrapsFor = async (tapped: boolean) => {
      const req = request(12);
      if (tapped) {
        req.root.items.push({ key: "bus", w: 120, h: 36 });
        req.root.edges.push({ src: 3, dst: 1, weight: 1, kind: "merge", hidden: true });
      }
      const fit: FitTarget = { w: 1600, h: 420, k: 1, reserve: 0 };
      await wrapToFit({ ...req, fit }, computeLayout(req), lay);
      return (req.root.items[1] as LayoutGroup).wrap ?? 1;
    };
    expect(await wrapsFor(false)).toBeGreaterThan(2);
    expect(await wrapsFor(true)).toBe(2);
  });

  it("wraps none that a bus taps where it is entered in its second half too (a U-Net's up block)", async () => {
    // each ResNet of diffusers' up block tapped by the timestep, each transformer by the text:
    // a reader in the second band would be tapped through the first
    const wrapsFor = async (late: boolean) => {
      const req = request(12);
      const block = req.root.items[1] as LayoutGroup;
      if (late) block.entries = [0, 8];
      req.root.items.push({ key: "bus", w: 120, h: 36 });
      req.root.edges.push({ src: 3, dst: 1, weight: 1, kind: "merge", hidden: true });
      const fit: FitTarget = { w: 1600, h: 420, k: 1, reserve: 0 };
      await wrapToFit({ ...req, fit }, computeLayout(req), lay);
      return block.wrap ?? 1;
    };
    expect(await wrapsFor(false)).toBe(2);
    expect(await wrapsFor(true)).toBe(1);
  });
});
