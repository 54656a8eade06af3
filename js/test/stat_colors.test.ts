// Colouring nodes by a statistic: a robust scale (log10, clipped where the bulk of the stages
// ends), so that one outlier does not wash out every other stage; NaN/Inf stages in the NaN
// colour. A linear min-max scale fails the first test: the outlier squeezes the rest into one colour.
import { describe, expect, it } from "vitest";
import { computeLayout } from "../src/layout/layout";
import { buildTree } from "../src/model/tree";
import { buildView, type ViewState } from "../src/model/view_model";
import { buildScene, layoutRequest } from "../src/scene/scene";
import { cssColor, nonfiniteColor } from "../src/view/colormap";
import { rampPosition, robustRange, statFills, statRange, statScale } from "../src/view/stat_colors";
import { decodeGraph } from "../src/wire";
import { loadRaw } from "./fixtures";

const TOP = ["enc1", "enc2", "bottleneck", "up2", "dec2", "up1", "dec1", "head"];
const none: ViewState = { expanded: new Set(), unfolded: new Set() };

function unetWith(values: Record<string, number | null>, nonfinite: string[] = []) {
  const raw = structuredClone(loadRaw("wire_unet.json")) as {
    calls: { id: string }[];
    stats: unknown[];
    nonfinite: number[];
  };
  raw.calls.forEach((c, i) => {
    if (c.id in values) raw.stats[i] = values[c.id] === null ? null : [values[c.id], values[c.id]];
  });
  raw.nonfinite = nonfinite.map((id) => raw.calls.findIndex((c) => c.id === id));
  const tree = buildTree(decodeGraph(raw));
  const view = buildView(tree, none);
  const scene = buildScene(tree, view, computeLayout(layoutRequest(view, "TB")), "TB");
  return { tree, view, scene };
}

describe("colour by a statistic", () => {
  // Seven ordinary stages between 0.5 and 2, and one that blew up to 5000.
  const values = { enc1: 0.5, enc2: 0.7, bottleneck: 0.9, up2: 1.1, dec2: 1.4, up1: 1.7, dec1: 2.0, head: 5000 };

  it("one outlier does not wash out the other stages", () => {
    const { tree, view, scene } = unetWith(values);
    const fills = statFills(tree, view, scene, "mean_abs")!;
    const ordinary = TOP.slice(0, 7).map((id) => fills.get(`s:${id}`)!.fill);
    expect(new Set(ordinary).size).toBe(7); // every ordinary stage its own colour
    const scale = statRange(tree, view, scene, "mean_abs")!;
    const spread = rampPosition(scale, 2.0) - rampPosition(scale, 0.5);
    expect(spread).toBeGreaterThan(0.5); // they use most of the ramp (linear min-max: 0.0003)
    expect(rampPosition(scale, 5000)).toBe(1); // the outlier sits at the top end, clipped
    expect(fills.get("s:head")!.fill).not.toBe(fills.get("s:enc1")!.fill);
  });

  it("says which scale: log, and that values beyond its ends are clipped", () => {
    const { tree, view, scene } = unetWith(values);
    const scale = statRange(tree, view, scene, "std")!;
    expect(scale).toMatchObject({ mode: "std", log: true, clippedHi: true, nonfinite: false });
    expect(scale.lo).toBeCloseTo(0.5, 9);
    expect(scale.clippedLo).toBe(false);
    expect(scale.hi).toBeGreaterThan(2);
    expect(scale.hi).toBeLessThan(50);
  });

  it("NaN/Inf stages get the NaN colour, and stay out of the scale", () => {
    const { tree, view, scene } = unetWith({ ...values, head: null, up1: 1e9 }, ["up1", "head"]);
    const fills = statFills(tree, view, scene, "mean_abs")!;
    const nan = cssColor(nonfiniteColor(1));
    expect(fills.get("s:up1")!.fill).toBe(nan);
    expect(fills.get("s:head")!.fill).toBe(nan);
    expect(TOP.slice(0, 5).map((id) => fills.get(`s:${id}`)!.fill)).not.toContain(nan);
    const scale = statRange(tree, view, scene, "mean_abs")!;
    expect(scale.nonfinite).toBe(true);
    expect(scale.hi).toBeLessThanOrEqual(2.0); // the 1e9 of up1 is not on the ramp
  });

  it("zeros sit at the low end of a log scale; equal values in the middle", () => {
    const z = statScale("mean_abs", [0, 0.1, 0.2, 0.4, 0.8])!;
    expect(z.log).toBe(true);
    expect(rampPosition(z, 0)).toBe(0);
    expect(z.clippedLo).toBe(true);
    const flat = statScale("std", [0.3, 0.3, 0.3])!;
    expect(rampPosition(flat, 0.3)).toBe(0.5);
    expect(statScale("std", [])).toBeNull();
  });

  it("robust ends: percentiles and fences, never past the data", () => {
    expect(robustRange([1, 2, 3, 4, 5])).toEqual([1, 5]); // a few ordinary stages: their own ends
    const [lo, hi] = robustRange([1, 1.1, 1.2, 1.3, 1.4, 1.5, 1.6, 100]);
    expect(lo).toBe(1);
    expect(hi).toBeLessThan(3); // the fence: the 100 is clipped
    // Many stages: the 5th-95th percentiles as well.
    const many = Array.from({ length: 41 }, (_, i) => i);
    expect(robustRange(many)).toEqual([2, 38]);
  });
});
