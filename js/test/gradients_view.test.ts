// After a backward pass (issue 22): the graph coloured by the gradient's norm on the same
// robust log scale as the statistics (NaN/Inf in the NaN colour, a stage no gradient reached
// off the ramp), each edge in its source's colour, the banners and flags of a gradient that
// vanishes or a NaN that entered the backward pass, on real runs (wire_experiments.json).
import { describe, expect, it } from "vitest";
import { computeLayout } from "../src/layout/layout";
import { gradientHeadlines, gradientOf } from "../src/model/gradients";
import { problemsOf, viewMarks } from "../src/model/problems";
import { buildTree } from "../src/model/tree";
import { buildView, type ViewState } from "../src/model/view_model";
import { buildScene, layoutRequest } from "../src/scene/scene";
import { cssColor, nonfiniteColor, viridis } from "../src/view/colormap";
import { flagsOf } from "../src/view/flags";
import { edgeStrokes, NO_GRAD_FILL, rampPosition, statFills, statRange } from "../src/view/stat_colors";
import type { WireGraph } from "../src/wire";
import { experiment } from "./fixtures";

function drawn(graph: WireGraph, expand: (id: string) => boolean = () => true) {
  const tree = buildTree(graph);
  const state: ViewState = {
    expanded: new Set(graph.calls.flatMap((c, i) => (expand(c.id) ? [i] : []))),
    unfolded: new Set(tree.runList.map((r) => r.key)),
  };
  const view = buildView(tree, state);
  const scene = buildScene(tree, view, computeLayout(layoutRequest(view, "TB")), "TB");
  return { tree, view, scene };
}

const idOf = (g: WireGraph, call: number) => g.calls[call]!.id;

describe("colour by gradient norm", () => {
  it("puts each stage on the log ramp by its own norm: the vanishing gradient climbs to the loss", () => {
    const g = experiment("sigmoid_mlp");
    const { tree, view, scene } = drawn(g, (id) => id === "blocks" || /^blocks\.\d+$/.test(id));
    const fills = statFills(tree, view, scene, "grad")!;
    const scale = statRange(tree, view, scene, "grad")!;
    expect(scale).toMatchObject({ mode: "grad", log: true });
    const linears = g.calls.flatMap((c, i) => (/^blocks\.\d+\.0$/.test(c.id) ? [i] : []));
    expect(linears.length).toBe(12);
    // the oracle: each node's colour is the ramp's colour at its own norm
    for (const c of linears) {
      const norm = g.grad![c]!;
      expect(fills.get(`s:${idOf(g, c)}`)!.fill).toBe(cssColor(viridis(rampPosition(scale, norm))));
    }
    // and, the gradient vanishing towards the input, the positions rise from the input end to the loss
    const positions = linears.map((c) => rampPosition(scale, g.grad![c]!));
    for (let i = 1; i < positions.length; i++) expect(positions[i]).toBeGreaterThanOrEqual(positions[i - 1]!);
    expect(positions[positions.length - 1]! - positions[0]!).toBeGreaterThan(0.5);
  });

  it("colours each edge as its source: the gradient flowing back along it", () => {
    const g = experiment("sigmoid_mlp");
    const { tree, view, scene } = drawn(g, (id) => id === "blocks");
    const fills = statFills(tree, view, scene, "grad")!;
    const strokes = edgeStrokes(scene, fills, "grad")!;
    expect(strokes.size).toBeGreaterThan(5);
    for (const e of scene.edges) {
      const src = fills.get(e.src);
      if (!src) {
        expect(strokes.has(e.key)).toBe(false); // a model input: its own colour
        continue;
      }
      const [r, gr, b] = src.fill.match(/\d+/g)!.map(Number) as [number, number, number];
      const light = 0.299 * r + 0.587 * gr + 0.114 * b > 150;
      const k = light ? 0.72 : 1; // a light fill darkened to read as a line
      expect(strokes.get(e.key)).toBe(`rgb(${Math.round(r * k)}, ${Math.round(gr * k)}, ${Math.round(b * k)})`);
    }
    expect(edgeStrokes(scene, fills, "mean_abs")).toBeNull();
  });

  it("puts NaN/Inf gradients in the NaN colour and stages no gradient reached off the ramp", () => {
    const g = experiment("nan_chain");
    const { tree, view, scene } = drawn(g);
    const fills = statFills(tree, view, scene, "grad")!;
    const nan = cssColor(nonfiniteColor(1));
    expect(fills.get("s:b")!.fill).toBe(nan);
    expect(fills.get("s:a")!.fill).toBe(nan);
    expect(fills.get("s:c")!.fill).not.toBe(nan);
    const scale = statRange(tree, view, scene, "grad")!;
    expect(scale.nonfinite).toBe(true);
    // a gradient that reached no stage: drawn as such, and the legend says so
    const leaf = experiment("sigmoid_mlp").calls.findIndex((c) => c.id === "blocks.1.0");
    const none = experiment("sigmoid_mlp", (r) => (r.graph.grad[leaf] = null));
    const d = drawn(none);
    expect(statFills(d.tree, d.view, d.scene, "grad")!.get("s:blocks.1.0")).toBe(NO_GRAD_FILL);
    expect(statRange(d.tree, d.view, d.scene, "grad")!.none).toBe(true);
  });

  it("a fold's norm is the geometric mean of its members' (norms span decades)", () => {
    const g = experiment("sigmoid_mlp");
    const [a, b] = [g.grad![2]!, g.grad![20]!];
    expect(gradientOf(g, [2, 20])).toBeCloseTo(Math.sqrt(a * b), 12);
    expect(gradientOf(g, [])).toBeNull();
  });
});

describe("the backward pass's banners and flags", () => {
  it("names where the gradient vanished, in graph/gradients.py's words, and flags that stage", () => {
    const g = experiment("sigmoid_mlp");
    const [h] = gradientHeadlines(g);
    const at = g.gradient_flow!.at!;
    expect(h).toMatchObject({ kind: "vanishing", lead: "gradient vanishes", stage: idOf(g, at) });
    expect(h!.text).toMatch(/^The gradient vanishes: by stage '.+' its norm is below 0\.001x/);
    const { tree, view } = drawn(g);
    const mark = viewMarks(tree, view, problemsOf(g)).get(`s:${idOf(g, at)}`);
    expect(flagsOf(mark ?? null).map((f) => f.text)).toEqual(["grad vanishes"]);
  });

  it("says where NaN/Inf entered the backward pass, first, and flags it there", () => {
    const g = experiment("nan_chain");
    const heads = gradientHeadlines(g);
    expect(heads[0]).toMatchObject({ kind: "nonfinite", stage: "b", detail: "2 stages' gradients hold NaN/Inf" });
    const { tree, view } = drawn(g);
    const marks = viewMarks(tree, view, problemsOf(g));
    expect(flagsOf(marks.get("s:b") ?? null).map((f) => f.text)).toEqual(["1st NaN/Inf grad"]);
    expect(flagsOf(marks.get("s:a") ?? null).map((f) => f.text)).toEqual(["NaN/Inf grad"]);
    expect(marks.get("s:c")).toBeUndefined();
  });

  it("says nothing of a gradient that flows, nor of a run without a loss", () => {
    expect(gradientHeadlines(experiment("gpt2"))).toEqual([]);
    const none = experiment("gpt2", (r) => {
      r.graph.grad = null;
      r.graph.gradient_flow = null;
    });
    expect(gradientHeadlines(none)).toEqual([]);
  });
});
